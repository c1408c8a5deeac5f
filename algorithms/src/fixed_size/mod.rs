//! The allocation algorithm behind `rmm::resource::FixedSizeMemoryResource`: blocks of one size,
//! carved from chunks the resource takes from its upstream, kept on per-stream stacks.
//!
//! It knows nothing about CUDA: it manages addresses. Which stream may take which free block is
//! decided by the resource through the [`StreamOrder`](crate::StreamOrder) seam, as for the
//! pool; this module only keeps the blocks where those decisions put them, and checks every free
//! (a block of this resource, at its start, handed out) before accepting it.

mod chunk_table;
mod grow_only;
pub mod magazine;
mod stream_sets;

pub use chunk_table::ChunkTable;
pub use grow_only::GrowOnly;
pub use stream_sets::{StreamSets, FRESH_SLOT};

use crate::error::Misuse;
use std::sync::Arc;

/// Chunks, their live blocks and the free blocks by stream: the shared state of a fixed-size
/// resource, behind its lock (the table is also read and marked without it).
pub struct FixedSizeFreeList {
    /// The chunks and which of their blocks are handed out.
    pub table: Arc<ChunkTable>,
    /// The free blocks by stream.
    pub sets: StreamSets,
}

impl FixedSizeFreeList {
    /// No chunks yet; blocks of `block_size` bytes (not 0).
    pub fn new(block_size: usize) -> Self {
        FixedSizeFreeList { table: Arc::new(ChunkTable::new(block_size)), sets: StreamSets::new() }
    }

    /// Adds a chunk of `blocks` blocks at `start`; its blocks join the private set of `slot`
    /// (lowest address on top, so it is handed out first).
    pub fn add_chunk(&mut self, start: usize, blocks: usize, slot: usize) {
        self.table.add(start, blocks);
        let size = self.table.block_size();
        for i in (0..blocks).rev() {
            self.sets.push(slot, start + i * size);
        }
    }

    /// Hands out a block the stream of `slot` may use at once (its own), if it has one.
    #[inline]
    pub fn allocate_own(&mut self, slot: usize) -> Option<usize> {
        let block = self.sets.pop_own(slot)?;
        self.table.mark_live(block);
        Some(block)
    }

    /// Hands out a block of fresh memory, if there is one.
    #[inline]
    pub fn allocate_fresh(&mut self) -> Option<usize> {
        let block = self.sets.pop_fresh()?;
        self.table.mark_live(block);
        Some(block)
    }

    /// Takes back the block at `ptr` of `bytes` bytes into the private set of `slot`; refuses
    /// (changing nothing) a pointer that is not a live block of this list, or a size of 0 or above
    /// the block size.
    #[inline]
    pub fn deallocate(&mut self, ptr: usize, bytes: usize, slot: usize) -> Result<(), Misuse> {
        self.table.take_back(ptr, bytes)?;
        self.sets.push(slot, ptr);
        Ok(())
    }

    /// Checks that every block is either handed out or in exactly one place: one set, or one of
    /// the blocks `cached` elsewhere (the threads' magazines).
    pub fn check_invariants(&self, cached: &[usize]) -> Result<(), String> {
        let mut free: Vec<usize> = self.sets.all_blocks().chain(cached.iter().copied()).collect();
        let n = free.len();
        free.sort_unstable();
        free.dedup();
        if free.len() != n {
            return Err(format!("{} blocks are free twice", n - free.len()));
        }
        if let Some(&live) = free.iter().find(|&&b| self.table.is_live(b)) {
            return Err(format!("block {live:#x} is both free and handed out"));
        }
        let live = self.table.live_blocks();
        if n + live != self.table.total_blocks() {
            return Err(format!(
                "{n} free and {live} handed out blocks, but the chunks hold {}",
                self.table.total_blocks()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StreamKey;

    #[test]
    fn blocks_go_round_and_bad_frees_change_nothing() {
        let mut f = FixedSizeFreeList::new(1024);
        let s = f.sets.slot_of(StreamKey::LEGACY_DEFAULT);
        f.add_chunk(0x10_000, 3, s);
        let a = f.allocate_own(s).unwrap();
        assert_eq!(a, 0x10_000);
        let b = f.allocate_own(s).unwrap();
        assert_eq!(f.deallocate(b, 1025, s), Err(Misuse::WrongSize { ptr: b, allocated: 1024, given: 1025 }));
        assert_eq!(f.deallocate(0x10_000 + 2048, 8, s), Err(Misuse::DoubleFree { ptr: 0x10_000 + 2048 }));
        f.check_invariants(&[]).unwrap();
        f.deallocate(b, 1024, s).unwrap();
        f.deallocate(a, 1, s).unwrap();
        assert_eq!(f.deallocate(a, 1, s), Err(Misuse::DoubleFree { ptr: a }));
        f.check_invariants(&[]).unwrap();
        assert_eq!(f.sets.free_blocks(), 3);
    }
}
