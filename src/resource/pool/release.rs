//! Giving memory back to the upstream while the pool lives: the chunks in which every block is
//! free and on which no stream's queued work may still act.
//!
//! Two callers: [`release`](PoolMemoryResource::release), which the program calls (what
//! PyTorch's `torch.cuda.empty_cache()` and CuPy's `MemoryPool.free_all_blocks()` do for their
//! own pools), and growth under a maximum pool size, which gives chunks back until a request fits
//! in the room left, as RMM's pool does before it grows.
//!
//! A chunk goes back only when both hold:
//! 1. every byte of it the pool uses lies in free blocks (in any shard: a chunk may be split
//!    between shards, and goes only once every piece is free), none handed out and none claimed;
//! 2. those blocks are fresh memory: freed before a synchronisation of every stream that
//!    succeeded, or never used. A block freed on a stream may still be read or written by work
//!    queued on that stream (a free is stream-ordered); once the upstream has it back, a
//!    `cudaFree` or another program's allocation would race with that work.
//!
//! So, where some chunk is wholly free at all, every stream is synchronised first (its free blocks
//! sealed, as in `synchronisation.rs`, so that only blocks freed before it started count), then
//! every shard is locked and the chunks whose every piece is fresh are taken out and given back.
//! Where the synchronisation fails (a driver error, or a stream marked as capturing into a CUDA
//! graph, where a synchronisation is illegal) nothing goes back.

use super::PoolMemoryResource;
use crate::error::Result;
use crate::resource::MemoryResource;
use rmm_algorithms::{StreamKey, GRANULE};

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// Gives every chunk whose blocks are all free back to the upstream, lowest address first,
    /// and returns the bytes given back (the pool's size drops by as much). Chunks holding a live
    /// block stay whole; the pool keeps working and grows again as it needs.
    ///
    /// Every stream is synchronised first (only where some chunk is wholly free), and only blocks
    /// freed before that go: work queued on a stream may still use the blocks freed on it. Where
    /// the synchronisation fails, as while a stream is marked as capturing, nothing goes back.
    /// Over a range mapped in place (a virtual pool), whole free granules are unmapped instead,
    /// their addresses kept.
    ///
    /// An error of the upstream's free stops the release: the chunk it refused, and those after
    /// it, stay free in the pool.
    pub fn release(&self) -> Result<usize> {
        if self.in_place.is_some() {
            return self.release_above(0);
        }
        let _one_at_a_time = self.streams.one_at_a_time();
        self.give_back_free_chunks(|| true)
    }

    /// Under a maximum, when `needed` does not fit in the room left but would below the maximum:
    /// gives wholly free chunks back until it fits, as RMM does before it grows.
    pub(super) fn reclaim_free_chunks(&self, needed: usize) {
        let Some(max) = self.maximum_size() else { return };
        if needed <= self.growth.room() || needed > max {
            return;
        }
        let _one_at_a_time = self.streams.one_at_a_time();
        if needed <= self.growth.room() {
            return;
        }
        // A chunk the upstream refuses stays free in the pool; the growth then reports the
        // out-of-memory as it would have.
        let _ = self.give_back_free_chunks(|| max.saturating_sub(self.pool_size()) < needed);
    }

    /// Gives chunks that are wholly free and fresh back to the upstream, lowest address first,
    /// while `more()` says so (see the top of this file); the bytes given back. The caller holds
    /// `sync_lock`.
    fn give_back_free_chunks(&self, more: impl Fn() -> bool) -> Result<usize> {
        // Chunks whose every block is free, whatever stream it was freed on: without one, no
        // synchronisation is worth its cost.
        let mut pieces = Vec::new();
        for shard in self.shards.real() {
            pieces.extend(shard.lock().free_ranges());
        }
        pieces.sort_unstable();
        let chunks = self.growth.chunks();
        if !chunks.iter().any(|&c| tiles(c, &pieces)) {
            return Ok(0);
        }
        if !self.synchronise_sealed() {
            return Ok(0);
        }
        // Lock every shard in index order (no other lock is held), so no two threads deadlock.
        // Blocks freed from here on join their streams' sets, not the fresh one: they stay.
        let mut guards: Vec<_> = self.shards.lock_real();
        let mut free: Vec<(usize, usize, usize)> = Vec::new();
        for (i, core) in guards.iter_mut().enumerate() {
            let fresh = core.set_of(StreamKey::FRESH);
            free.extend(core.detach_whole_free_chunks(fresh).into_iter().map(|(a, l)| (a, l, i)));
        }
        free.sort_unstable();
        let ranges: Vec<(usize, usize)> = free.iter().map(|&(a, l, _)| (a, l)).collect();
        let mut given_back = Vec::new();
        let mut released = 0;
        let mut refused = None;
        for chunk @ (addr, size) in chunks {
            if !more() {
                break;
            }
            if !tiles(chunk, &ranges) {
                continue;
            }
            if let Err(e) = self.growth.give_back(addr, size) {
                // The upstream kept it, or says so: the pool keeps it too.
                refused = Some(e);
                break;
            }
            self.shards.remove(addr, size & !(GRANULE - 1));
            given_back.push(chunk);
            released += size;
        }
        // Every other range goes back, free and fresh, to the shard it came from.
        for (addr, len, shard) in free {
            if !given_back.iter().any(|&(a, s)| a <= addr && addr < a + s) {
                self.shards.adopt(shard, &mut guards[shard], addr, len, StreamKey::FRESH);
            }
        }
        refused.map_or(Ok(released), Err)
    }
}

/// Whether the sorted, disjoint `ranges` cover all the pool uses of upstream chunk `(addr, size)`
/// (its 256-byte multiple).
fn tiles((addr, size): (usize, usize), ranges: &[(usize, usize)]) -> bool {
    let end = addr + (size & !(GRANULE - 1));
    let start = ranges.partition_point(|&(a, _)| a < addr);
    let mut at = addr;
    for &(a, l) in &ranges[start..] {
        if a != at || a >= end {
            break;
        }
        at += l;
    }
    at == end
}
