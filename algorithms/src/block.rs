//! Block records, kept on the host in a slab and linked by index.
//!
//! Device memory cannot be read from the host, so unlike a CPU allocator the metadata lives beside
//! the memory, not inside it. Physical links connect the blocks of one chunk in address order (the
//! ends are `NIL`), which is what makes coalescing O(1) and keeps blocks from spanning chunks.

/// The index of a block record; `NIL` marks "none".
pub(crate) type BlockId = u32;
/// "No block": the index of a sentinel record that every table holds, so a link may be written
/// through without first testing it for `NIL` (a branch the free-list updates mispredicted often).
/// The sentinel is never free and never live; what is written into its links is never read.
pub(crate) const NIL: BlockId = 0;

/// One range of a chunk, free or handed out. 32 bytes, so two share a cache line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Block {
    pub addr: usize,
    /// Size in 256-byte units (a block is at most [`MAX_BLOCK_BYTES`]).
    pub units: u32,
    pub prev_phys: BlockId,
    pub next_phys: BlockId,
    /// Links in a free list (only meaningful while free). While the block is handed out,
    /// `prev_free` holds its slack instead (see [`Block::slack`]).
    pub prev_free: BlockId,
    pub next_free: BlockId,
    /// Who holds the block ([`Owner`], packed into 4 bytes: see [`Block::owner`]).
    owner: u32,
}

/// Which stream set (a stream's private or published free lists, or fresh memory) a free block is
/// in: an index into the pool's sets, stable while the set lives and reused after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SetId(u32);

impl SetId {
    /// The id of the set at `index` in the pool's table of sets.
    #[inline(always)]
    pub fn at(index: usize) -> Self {
        debug_assert!(index < CACHED as usize, "set index {index} out of range");
        SetId(index as u32)
    }
    /// The position of the set in the pool's table of sets.
    #[inline(always)]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl std::fmt::Display for SetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Who holds a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// Free in the free lists of this stream set.
    Set(SetId),
    /// Handed out to a caller.
    HandedOut,
    /// Free, kept whole in a stream's exact-size cache, in no free list.
    Cached,
}

/// The packed `owner` of a block handed out.
const HANDED_OUT: u32 = u32::MAX;
/// The packed `owner` of a cached block.
const CACHED: u32 = u32::MAX - 1;

/// The largest block, and so the largest chunk, a pool keeps: 1 TiB less one granule.
pub const MAX_BLOCK_BYTES: usize = (u32::MAX as usize) << 8;

impl Block {
    /// A block of `units` granules at `addr`, in no list and linked to no neighbour.
    #[inline]
    pub fn new(addr: usize, units: u32, owner: Owner) -> Self {
        let mut b = Block { addr, units, prev_phys: NIL, next_phys: NIL, prev_free: NIL, next_free: NIL, owner: 0 };
        b.set_owner(owner);
        b
    }
    /// Who holds the block.
    #[inline]
    pub fn owner(&self) -> Owner {
        match self.owner {
            HANDED_OUT => Owner::HandedOut,
            CACHED => Owner::Cached,
            set => Owner::Set(SetId(set)),
        }
    }
    #[inline(always)]
    pub fn set_owner(&mut self, owner: Owner) {
        self.owner = match owner {
            Owner::Set(set) => set.0,
            Owner::HandedOut => HANDED_OUT,
            Owner::Cached => CACHED,
        };
    }
    /// True when the block is free in the free lists of `set` (the hot form of
    /// `owner() == Owner::Set(set)`: set ids never reach the packed markers).
    #[inline(always)]
    pub fn is_free_in(&self, set: SetId) -> bool {
        self.owner == set.0
    }
    /// The set whose free lists hold the block; only for a block known to be in a free list.
    #[inline(always)]
    pub fn set_id(&self) -> SetId {
        debug_assert!(matches!(self.owner(), Owner::Set(_)), "block {:#x} is in no set", self.addr);
        SetId(self.owner)
    }
    /// True when the block is handed out to a caller (the hot form of
    /// `owner() == Owner::HandedOut`).
    #[inline(always)]
    pub fn is_handed_out(&self) -> bool {
        self.owner == HANDED_OUT
    }
    #[inline]
    pub fn is_free(&self) -> bool {
        self.owner != HANDED_OUT
    }
    #[inline]
    pub fn size(&self) -> usize {
        (self.units as usize) << 8
    }
    #[inline]
    pub fn end(&self) -> usize {
        self.addr + self.size()
    }
    /// For a handed-out block: its size less the bytes the user asked for (0..=255, as sizes are
    /// rounded up to 256), so a free's size is checked without another memory access. Kept in
    /// `prev_free`, which only a free block uses.
    #[inline]
    pub fn slack(&self) -> u32 {
        self.prev_free
    }
    /// Records the slack of a block being handed out (see [`slack`](Self::slack)).
    #[inline]
    pub fn set_slack(&mut self, slack: u32) {
        self.prev_free = slack;
    }
}

/// A slab of block records with a free-slot list, so ids stay stable and records are reused.
#[derive(Debug)]
pub(crate) struct BlockTable {
    blocks: Vec<Block>,
    vacant: Vec<BlockId>,
}

impl Default for BlockTable {
    fn default() -> Self {
        // The sentinel at `NIL`: allocated (so never merged with), 0 units (so `iter_live` skips it).
        let sentinel = Block {
            addr: 0,
            units: 0,
            prev_phys: NIL,
            next_phys: NIL,
            prev_free: NIL,
            next_free: NIL,
            owner: HANDED_OUT,
        };
        BlockTable { blocks: vec![sentinel], vacant: Vec::new() }
    }
}

impl BlockTable {
    /// Stores a record and returns its id.
    #[inline]
    pub fn insert(&mut self, b: Block) -> BlockId {
        if let Some(id) = self.vacant.pop() {
            self.blocks[id as usize] = b;
            id
        } else {
            self.blocks.push(b);
            (self.blocks.len() - 1) as BlockId
        }
    }

    /// Gives a record's slot back.
    #[inline]
    pub fn remove(&mut self, id: BlockId) {
        self.blocks[id as usize].units = 0;
        self.vacant.push(id);
    }

    /// The record `id`, which must come from [`insert`](Self::insert) or be `NIL` (the sentinel).
    #[inline]
    pub fn get(&self, id: BlockId) -> &Block {
        debug_assert!((id as usize) < self.blocks.len(), "block id {id} out of range");
        // SAFETY: ids are only made by `insert`, as indices below the length then, or are `NIL`,
        // index 0, where the sentinel is from the start; the table never shrinks.
        unsafe { self.blocks.get_unchecked(id as usize) }
    }

    /// The record `id`, which must come from [`insert`](Self::insert) or be `NIL`: writes to the
    /// sentinel's links are allowed and ignored; its `stream` and `units` must stay as they are.
    #[inline]
    pub fn get_mut(&mut self, id: BlockId) -> &mut Block {
        debug_assert!((id as usize) < self.blocks.len(), "block id {id} out of range");
        // SAFETY: as in `get`.
        unsafe { self.blocks.get_unchecked_mut(id as usize) }
    }

    /// Live records (those not vacant; a vacant record has 0 units), for the cold paths that scan.
    pub fn iter_live(&self) -> impl Iterator<Item = (BlockId, &Block)> {
        self.blocks.iter().enumerate().filter(|(_, b)| b.units != 0).map(|(i, b)| (i as BlockId, b))
    }
}
