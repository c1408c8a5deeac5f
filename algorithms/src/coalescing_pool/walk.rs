//! A read-only walk of a pool's chunks and the blocks that tile them, for snapshots and memory
//! maps. Cold: it indexes the block records by address first, and no allocation path calls it.

use super::CoalescingPool;
use crate::block::{BlockId, NIL};
use std::collections::HashMap;

/// One block as [`CoalescingPool::walk_chunks`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockView {
    /// Where the block starts.
    pub addr: usize,
    /// Its size (a multiple of 256).
    pub size: usize,
    /// For a block handed out, the bytes the caller asked for; `None` for a free block (in a
    /// stream's free lists or cache).
    pub requested: Option<usize>,
}

impl CoalescingPool {
    /// Every chunk as `(start, size, blocks)`, its blocks in address order, tiling it.
    pub fn walk_chunks(&self) -> Vec<(usize, usize, Vec<BlockView>)> {
        let firsts: HashMap<usize, BlockId> =
            self.blocks.iter_live().filter(|(_, b)| b.prev_phys == NIL).map(|(id, b)| (b.addr, id)).collect();
        let mut out = Vec::with_capacity(self.chunks.len());
        for &(start, size) in &self.chunks {
            let mut blocks = Vec::new();
            let mut next = firsts.get(&start).copied().unwrap_or(NIL);
            let mut at = start;
            // Bounded by the chunk's end, so a broken chain (which the invariant checks report)
            // cannot make the walk loop.
            while next != NIL && at < start + size {
                let b = self.blocks.get(next);
                let requested = (!b.is_free()).then(|| b.size() - b.slack() as usize);
                blocks.push(BlockView { addr: b.addr, size: b.size(), requested });
                at = b.end();
                next = b.next_phys;
            }
            out.push((start, size, blocks));
        }
        out
    }
}
