//! Block records, kept on the host in a slab and linked by index.
//!
//! Device memory cannot be read from the host, so unlike a CPU allocator the metadata lives beside
//! the memory, not inside it. Physical links connect the blocks of one chunk in address order (the
//! ends are `NIL`), which is what makes coalescing O(1) and keeps blocks from spanning chunks.

/// The index of a block record; `NIL` marks "none".
pub(crate) type BlockId = u32;
pub(crate) const NIL: BlockId = u32::MAX;

/// One range of a chunk, free or handed out.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    pub addr: usize,
    /// Bytes, a multiple of 256.
    pub size: usize,
    pub prev_phys: BlockId,
    pub next_phys: BlockId,
    /// Links in a free list (only meaningful while free).
    pub prev_free: BlockId,
    pub next_free: BlockId,
    /// The stream slot whose free lists hold this block (only meaningful while free).
    pub stream: u32,
    /// Bytes the user asked for while allocated; `FREE` while free.
    pub requested: usize,
}

/// `requested` of a free block.
pub(crate) const FREE: usize = usize::MAX;

impl Block {
    #[inline]
    pub fn is_free(&self) -> bool {
        self.requested == FREE
    }
    #[inline]
    pub fn end(&self) -> usize {
        self.addr + self.size
    }
}

/// A slab of block records with a free-slot list, so ids stay stable and records are reused.
#[derive(Debug, Default)]
pub(crate) struct BlockTable {
    blocks: Vec<Block>,
    vacant: Vec<BlockId>,
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
        self.blocks[id as usize].size = 0;
        self.vacant.push(id);
    }

    #[inline]
    pub fn get(&self, id: BlockId) -> &Block {
        &self.blocks[id as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, id: BlockId) -> &mut Block {
        &mut self.blocks[id as usize]
    }

    /// Live records (those not vacant), for the cold paths that scan.
    pub fn iter_live(&self) -> impl Iterator<Item = (BlockId, &Block)> {
        self.blocks.iter().enumerate().filter(|(_, b)| b.size != 0).map(|(i, b)| (i as BlockId, b))
    }
}
