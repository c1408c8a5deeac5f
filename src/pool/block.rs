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
    /// The stream slot whose free lists hold this block, or `ALLOCATED`, or `CACHED`.
    pub stream: u32,
}

/// `stream` of a block that is handed out.
pub(crate) const ALLOCATED: u32 = u32::MAX;
/// `stream` of a free block kept whole in a stream's cache (free, but in no free list).
pub(crate) const CACHED: u32 = u32::MAX - 1;

/// The largest block, and so the largest chunk, a pool keeps: 1 TiB less one granule.
pub const MAX_BLOCK_BYTES: usize = (u32::MAX as usize) << 8;

impl Block {
    #[inline]
    pub fn is_free(&self) -> bool {
        self.stream != ALLOCATED
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
            stream: ALLOCATED,
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
