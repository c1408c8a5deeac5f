//! The chunks a fixed-size resource took from its upstream, and which of their blocks are handed
//! out: what lets a free be checked (a pointer of this resource, at a block's start, not freed
//! already) before it is accepted.

use crate::error::Misuse;

/// One chunk: `blocks` blocks of the table's block size from `start`, one live bit each.
struct Chunk {
    start: usize,
    blocks: usize,
    live: Vec<u64>,
}

/// Chunks sorted by address, each with a bitmap of its handed-out blocks.
pub struct ChunkTable {
    block_size: usize,
    chunks: Vec<Chunk>,
    live_blocks: usize,
    total_blocks: usize,
}

impl ChunkTable {
    /// An empty table of blocks of `block_size` bytes (not 0).
    pub fn new(block_size: usize) -> Self {
        assert!(block_size > 0, "a block size of 0 bytes");
        ChunkTable { block_size, chunks: Vec::new(), live_blocks: 0, total_blocks: 0 }
    }

    /// The size of every block.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// Adds a chunk of `blocks` blocks at `start`, all free. The caller guarantees that it overlaps
    /// no chunk already in the table (the upstream handed it out).
    pub fn add(&mut self, start: usize, blocks: usize) {
        let at = self.chunks.partition_point(|c| c.start < start);
        self.chunks.insert(at, Chunk { start, blocks, live: vec![0; blocks.div_ceil(64)] });
        self.total_blocks += blocks;
    }

    /// The chunk and block index of the block starting at `ptr`.
    fn locate(&self, ptr: usize) -> Result<(usize, usize), Misuse> {
        let at = self.chunks.partition_point(|c| c.start <= ptr);
        let Some(i) = at.checked_sub(1) else {
            return Err(Misuse::UnknownPointer { ptr });
        };
        let chunk = &self.chunks[i];
        let offset = ptr - chunk.start;
        let index = offset / self.block_size;
        if index >= chunk.blocks {
            return Err(Misuse::UnknownPointer { ptr });
        }
        if offset % self.block_size != 0 {
            return Err(Misuse::InteriorPointer { ptr, block_start: chunk.start + index * self.block_size });
        }
        Ok((i, index))
    }

    /// Marks the free block at `ptr` handed out.
    pub fn mark_live(&mut self, ptr: usize) {
        let (c, b) = self.locate(ptr).expect("a free block lies in a chunk");
        let word = &mut self.chunks[c].live[b / 64];
        debug_assert_eq!(*word & (1 << (b % 64)), 0, "block {ptr:#x} handed out twice");
        *word |= 1 << (b % 64);
        self.live_blocks += 1;
    }

    /// Marks the block at `ptr` free; refuses (changing nothing) a pointer that is not a live block.
    pub fn mark_free(&mut self, ptr: usize) -> Result<(), Misuse> {
        let (c, b) = self.locate(ptr)?;
        let word = &mut self.chunks[c].live[b / 64];
        if *word & (1 << (b % 64)) == 0 {
            return Err(Misuse::DoubleFree { ptr });
        }
        *word &= !(1 << (b % 64));
        self.live_blocks -= 1;
        Ok(())
    }

    /// True when the block at `ptr` is handed out.
    pub fn is_live(&self, ptr: usize) -> bool {
        self.locate(ptr).is_ok_and(|(c, b)| self.chunks[c].live[b / 64] & (1 << (b % 64)) != 0)
    }

    /// Blocks handed out.
    pub fn live_blocks(&self) -> usize {
        self.live_blocks
    }

    /// Blocks in all chunks.
    pub fn total_blocks(&self) -> usize {
        self.total_blocks
    }

    /// `(start, bytes)` of every chunk, by address.
    pub fn chunks(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.chunks.iter().map(|c| (c.start, c.blocks * self.block_size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frees_are_checked_against_the_chunks() {
        let mut t = ChunkTable::new(512);
        t.add(0x10_000, 100);
        t.add(0x1000, 4);
        assert_eq!(t.chunks().collect::<Vec<_>>(), vec![(0x1000, 2048), (0x10_000, 51_200)]);
        t.mark_live(0x10_000 + 99 * 512);
        assert!(t.is_live(0x10_000 + 99 * 512));
        assert_eq!(
            t.mark_free(0x10_000 + 99 * 512 + 256),
            Err(Misuse::InteriorPointer { ptr: 0x10_000 + 99 * 512 + 256, block_start: 0x10_000 + 99 * 512 })
        );
        assert_eq!(t.mark_free(0x10_000 + 100 * 512), Err(Misuse::UnknownPointer { ptr: 0x10_000 + 100 * 512 }));
        assert_eq!(t.mark_free(0x800), Err(Misuse::UnknownPointer { ptr: 0x800 }));
        assert_eq!(t.mark_free(0x1000), Err(Misuse::DoubleFree { ptr: 0x1000 }));
        assert_eq!(t.live_blocks(), 1);
        t.mark_free(0x10_000 + 99 * 512).unwrap();
        assert_eq!((t.live_blocks(), t.total_blocks()), (0, 104));
    }
}
