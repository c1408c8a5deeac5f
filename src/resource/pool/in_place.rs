//! A pool over one reserved range of addresses whose memory is mapped in place: it grows by
//! mapping right after its free tail (or into a hole an earlier release left), so the two are
//! one block, and it releases whole free granules by unmapping them, addresses kept.
//!
//! The range is the pool's upstream too: the initial chunk comes from it, and every range still
//! mapped goes back to it (is unmapped) when the pool is dropped. What differs from a pool over
//! an ordinary upstream:
//! - every range the pool adopts joins the chunks of the shard that it touches
//!   ([`CoalescingPool::attach`]), so blocks span what were separate growths;
//! - growth asks the range for what the request lacks beyond the free blocks, usable by the
//!   stream at once (fresh memory or its own blocks), that the new range joins: the free tail at
//!   the end of what is mapped, or the blocks around a hole a release left, which is mapped again
//!   first where that makes a run that fits; in whole granules, and no geometric growth: a release
//!   gives back what is not used. Before it grows, free memory split between shards is gathered
//!   into the home shard (`gather.rs`), so the free tail joins the growth wherever it was;
//! - [`release_above`](PoolMemoryResource::release_above) synchronises the streams (free blocks
//!   may still be used by work queued on them, as before a hand-over), takes the whole granules
//!   of the blocks that were free before it started out of the shards and unmaps them.

use super::{Grew, PoolMemoryResource};
use crate::error::Result;
use crate::resource::MemoryResource;
use rmm_algorithms::{CoalescingPool, Partial, SetId, StreamKey};
use std::sync::Arc;

/// The reserved range under an in-place pool (an address space shared with the pool's upstream).
/// Called with a shard lock held; never calls back into the pool.
pub(crate) trait ReservedRange: Send + Sync {
    /// Bytes of one granule: every range mapped or unmapped is made of them.
    fn granularity(&self) -> usize;

    /// The address just past the highest mapped granule: where growth at the end maps.
    fn mapped_end(&self) -> usize;

    /// Maps at least `needed` bytes in one run, where `free_around(start, end)` says how many
    /// bytes the pool has free just below `start` and from `end` on, in blocks that would join a
    /// range mapped there (see [`rmm_algorithms::AddressSpace::grow`]).
    fn grow(
        &self,
        needed: usize,
        free_around: &mut dyn FnMut(usize, usize) -> (usize, usize),
    ) -> Result<(usize, usize)>;

    /// Unmaps `[addr, addr + len)`, whole mapped granules; the addresses stay reserved.
    fn unmap(&self, addr: usize, len: usize) -> std::result::Result<(), Partial>;
}

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// A pool of `shards` shards over `upstream`, whose memory is the mapped part of `range`
    /// (`upstream.allocate` maps whole granules at the end of `range`, `upstream.deallocate`
    /// unmaps them). `initial_size` is a multiple of the granularity.
    pub(crate) fn over_reserved_range(
        upstream: U,
        range: Arc<dyn ReservedRange>,
        initial_size: usize,
        order: Box<dyn rmm_algorithms::StreamOrder>,
        shards: usize,
    ) -> Result<Self> {
        debug_assert_eq!(initial_size % range.granularity(), 0);
        Self::build(upstream, initial_size, None, order, shards, Some(range))
    }

    /// Growth of an in-place pool for shard `home` (see the top of this file): maps what `needed`
    /// lacks beyond the free blocks that `key` may use at once (fresh memory or its own) which the
    /// new range joins: a free tail at the end of what is mapped, or the free blocks around a hole
    /// that a release left.
    pub(super) fn grow_in_place(
        &self,
        range: &dyn ReservedRange,
        home: usize,
        core: &mut CoalescingPool,
        key: StreamKey,
        needed: usize,
    ) -> Result<Grew> {
        let own = self.streams.own_set(core, key, &self.captures);
        let fresh = core.set_of(StreamKey::FRESH);
        let usable = |block: Option<(SetId, usize)>| block.filter(|&(set, _)| set == own || set == fresh);
        // Only blocks of one set join: the one below the range where both sides are usable.
        let joined = |core: &mut CoalescingPool, start: usize, end: usize| {
            let below = usable(core.free_block_ending_at(start));
            let above = if end > start { usable(core.free_block_starting_at(end)) } else { None };
            match (below, above) {
                (Some((b, _)), Some((a, _))) if a != b => (below, None),
                _ => (below, above),
            }
        };
        let mut free_around = |start: usize, end: usize| {
            let (below, above) = joined(core, start, end);
            (below.map_or(0, |(_, n)| n), above.map_or(0, |(_, n)| n))
        };
        let (addr, len) =
            match super::capture::relaxed_if_possible(self.streams.order(), || range.grow(needed, &mut free_around)) {
                Ok(run) => run,
                Err(e) if e.is_out_of_memory() => return Ok(Grew::Refused(e)),
                Err(e) => return Err(e),
            };
        // New memory is fresh; joined to blocks of the stream's own, it is the stream's.
        let (below, above) = joined(core, addr, addr + len);
        let set = below.or(above).map_or(own, |(set, _)| set);
        self.growth.add_mapped(addr, len);
        core.attach(addr, len, set);
        self.shards.assign(addr, len, home);
        Ok(Grew::Grown)
    }

    /// Gives the memory of whole free granules back until the pool holds at most `keep` bytes (or
    /// no whole free granule is left), lowest addresses first; their addresses stay reserved, and
    /// a later growth maps them again. Returns the bytes unmapped.
    ///
    /// Every stream is synchronised first, and only blocks free before that (or never used) are
    /// unmapped: work queued on a stream may still use the blocks freed on it. Should the
    /// synchronisation fail, only memory no stream has used goes. A pool over an ordinary upstream
    /// releases nothing. An error of the physical side stops the release; what it did not unmap
    /// stays free in the pool.
    pub(crate) fn release_above(&self, keep: usize) -> Result<usize> {
        self.unmap_free_granules(Some(keep), usize::MAX, usize::MAX)
    }

    /// What [`release_above`](Self::release_above) does, at most `max` bytes and only below
    /// address `below`: with `keep`, until the pool holds at most that many bytes; without, until
    /// `max` bytes are unmapped or no whole free granule below `below` is left.
    pub(super) fn unmap_free_granules(&self, keep: Option<usize>, max: usize, below: usize) -> Result<usize> {
        let Some(range) = &self.in_place else { return Ok(0) };
        let granule = range.granularity();
        let _one_at_a_time = self.streams.one_at_a_time();
        // Blocks freed on streams become fresh once no work may use them; should that fail, the
        // blocks stay where they were and only fresh memory goes.
        if self.streams.ordered() {
            self.synchronise_sealed();
        }
        // Lock every shard in index order (no other lock is held), so no two threads deadlock: a
        // granule may be free in pieces of several shards (ranges move between shards at any
        // 256-byte boundary), and it goes only once every piece is out.
        let mut guards: Vec<_> = self.shards.lock_real();
        let fresh: Vec<_> = guards.iter_mut().map(|core| core.set_of(StreamKey::FRESH)).collect();
        // Unordered (host) memory needs no synchronisation: every free block may go.
        let ordered = self.streams.ordered();
        let mut free = Vec::new();
        for (core, &f) in guards.iter_mut().zip(&fresh) {
            let blocks = core.free_blocks(|set| !ordered || set == f);
            free.extend(blocks.into_iter().filter(|&(a, _)| a < below).map(|(a, l)| (a, l.min(below - a))));
        }
        let over = keep.map_or(usize::MAX, |keep| self.pool_size().saturating_sub(keep)).min(max) & !(granule - 1);
        let targets = whole_granules(free, granule, over);
        if targets.is_empty() {
            return Ok(0);
        }
        let mut pieces: Vec<(usize, usize, usize)> = Vec::new();
        for (i, (core, &f)) in guards.iter_mut().zip(&fresh).enumerate() {
            let taken = core.detach_free_within(&targets, |set| !ordered || set == f);
            pieces.extend(taken.into_iter().map(|(a, l)| (a, l, i)));
        }
        let mut released = 0;
        // Relaxed where it can be: an unmap must not invalidate a capture on any stream.
        let _relaxed = super::capture::RelaxedCapture::new(self.streams.order()).ok();
        for &(addr, len) in &targets {
            let (done, error) = match range.unmap(addr, len) {
                Ok(()) => (len, None),
                Err(Partial { done, error }) => (done, Some(error)),
            };
            if done > 0 {
                self.forget_range(addr, done);
                released += done;
            }
            if let Some(error) = error {
                // What is still mapped goes back, free and fresh, to the shards it came from.
                let kept = addr + done;
                for &(a, l, i) in &pieces {
                    let end = a + l;
                    if end > kept {
                        let start = a.max(kept);
                        guards[i].attach(start, end - start, fresh[i]);
                    }
                }
                return Err(error);
            }
            pieces.retain(|&(a, _, _)| a >= addr + len);
        }
        Ok(released)
    }

    /// Forgets `[addr, addr + len)`, unmapped: it leaves the pool's size, the segment map and the
    /// list of upstream chunks (whose entries around it are cut).
    fn forget_range(&self, addr: usize, len: usize) {
        self.growth.forget_range(addr, len);
        self.shards.remove(addr, len);
    }
}

/// The runs of whole `granule`s covered by the `free` ranges (in any order, of any shards; those
/// that touch are one), lowest first, `max` bytes at most.
pub(super) fn whole_granules(mut free: Vec<(usize, usize)>, granule: usize, max: usize) -> Vec<(usize, usize)> {
    free.sort_unstable();
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (a, l) in free {
        match runs.last_mut() {
            Some((_, end)) if *end == a => *end += l,
            _ => runs.push((a, a + l)),
        }
    }
    let mut left = max;
    let mut out = Vec::new();
    for (start, end) in runs {
        let start = (start + granule - 1) & !(granule - 1);
        let end = (end & !(granule - 1)).min(start.saturating_add(left));
        if end > start {
            out.push((start, end - start));
            left -= end - start;
        }
        if left == 0 {
            break;
        }
    }
    out
}
