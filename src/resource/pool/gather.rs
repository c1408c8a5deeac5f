//! The first part of step 5 of the slow path, for a pool over a reserved range mapped in place: before it maps
//! more memory, the free memory that the stream may use at once but that lies split between
//! shards is gathered into the home shard.
//!
//! A shard short of memory takes a range of another shard's free block (step 3), and a freed
//! block goes back to the shard that holds its range, so one free run of addresses often lies in
//! pieces in several shards (or in fresh memory and a stream's set of one shard), none of which
//! holds the request. Growth would then map new memory beside memory that sits unused. A pool
//! over an ordinary upstream rejoins such pieces after a synchronisation, once its upstream
//! refuses (step 6); an in-place pool's growth rarely fails, so it gathers first, without any
//! synchronisation, from the memory that needs no wait:
//! - the smallest run of pieces that holds the request moves to the home shard, joined into one
//!   block, and the request is served from it;
//! - else the run that ends where the mapped memory ends moves there, so that the growth that
//!   follows joins it and maps only what the request lacks.
//!
//! Free memory may also lie between blocks handed out, in runs too short for the request, while
//! the growth is large: threads that allocate from shards of their own place their blocks apart,
//! and a large request then finds the free memory cut in pieces. Where those whole free granules
//! below the free tail come to at least [`RECYCLE_SHARE`]⁻¹ of the pool and the growth to at least
//! [`RECYCLE_GROWTH_SHARE`]⁻¹ of it and [`RECYCLE_GROWTH_GRANULES`] granules, they are unmapped
//! before the growth maps (after a synchronisation,
//! as a release does), up to what the growth maps: the pool maps at the end what it gave back in
//! the middle, and holds about what is live. The shares bound the synchronisations: each needs
//! that much free memory in pieces, and a large request.
//!
//! Recycling runs only once some stream or thread has been dealt a shard of its own. Until then
//! one shard places every block, and the free runs between its blocks are where its later
//! requests go: unmapping them moves memory from where the program will want it again to the
//! end. (PyTorch's training trace, one shard: 1.038 × its live peak mapped without recycling,
//! 1.049 with it.)

use super::in_place::whole_granules;
use super::slow_path::{Gathered, Request};
use super::PoolMemoryResource;
use crate::resource::MemoryResource;
use rmm_algorithms::{SetId, StreamKey};

/// Free memory in pieces below the free tail is recycled once it is at least this fraction
/// (inverse) of the pool (see the top of this file).
pub(super) const RECYCLE_SHARE: usize = 16;

/// ... and the growth at least this fraction (inverse) of the pool.
pub(super) const RECYCLE_GROWTH_SHARE: usize = 16;

/// ... and at least this many granules: in a small pool, a granule is a large part of it, and
/// holes unmapped between its blocks would be mapped again soon.
pub(super) const RECYCLE_GROWTH_GRANULES: usize = 16;

/// Free pieces that touch, one run of addresses: `(addr, len, shard)`, lowest first.
type Run = Vec<(usize, usize, usize)>;

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// Step 5's gathering (see the top of this file): the address allocated from a gathered run,
    /// or the growth to make (after moving the free run at the mapped end, if any, to shard
    /// `home`), with what to unmap first. Nothing for a pool over an ordinary upstream.
    pub(super) fn allocate_from_gathered(&self, home: usize, key: StreamKey, req: Request) -> Gathered {
        const NOTHING: Gathered = Gathered::Grow { bytes: 0, below: 0 };
        let Some(range) = self.in_place.as_ref() else { return NOTHING };
        let shards = self.shards.real();
        if home >= shards.len() {
            return NOTHING;
        }
        // Every shard locked in index order (no other lock is held), so no two threads deadlock;
        // growth holds a shard's lock, so the mapped end stays where it is read.
        let mut guards: Vec<_> = shards.iter().map(|s| s.lock()).collect();
        let mapped_end = range.mapped_end();
        // Recycling only where threads or streams were dealt shards of their own (see the top of
        // this file); otherwise every free block need not be listed.
        let may_recycle = self.shards.map().dealt_any();
        let mut usable: Vec<Vec<SetId>> = Vec::with_capacity(guards.len());
        let mut pieces = Vec::new();
        let mut all_free = Vec::new();
        for (i, core) in guards.iter_mut().enumerate() {
            let mut sets = core.sets_usable_at_once(key, self.streams.ordered());
            // A set of this stream filled by a destroyed stream that had the same handle is not
            // this stream's.
            sets.retain(|&s| {
                !self.streams.ordered()
                    || core.key_of(s) == StreamKey::FRESH
                    || self.streams.identity_holds(core, s, &self.captures)
            });
            pieces.extend(core.free_blocks(|s| sets.contains(&s)).into_iter().map(|(a, l)| (a, l, i)));
            if may_recycle {
                all_free.extend(core.free_blocks(|_| true));
            }
            usable.push(sets);
        }
        let recycle =
            if may_recycle { self.recycling(all_free, mapped_end, req.needed, range.granularity()) } else { NOTHING };
        if shards.len() == 1 {
            return recycle;
        }
        let runs = touching_runs(pieces);
        let bytes = |run: &Run| run.iter().map(|&(_, l, _)| l).sum::<usize>();
        // A run of one block would have served the request in steps 1 to 3.
        let fitting = runs.iter().filter(|r| r.len() > 1 && bytes(r) >= req.needed).min_by_key(|r| bytes(r));
        let at_end = |r: &&Run| r.last().is_some_and(|&(a, l, _)| a + l == mapped_end);
        let run = match fitting {
            Some(run) => run,
            None => match runs.iter().find(at_end) {
                // The growth sees a free tail of the home shard itself.
                Some(tail) if !(tail.len() == 1 && tail[0].2 == home) => tail,
                _ => return recycle,
            },
        };
        let (first, last) = (run[0], run[run.len() - 1]);
        let span = [(first.0, last.0 + last.1 - first.0)];
        let mut from: Vec<usize> = run.iter().map(|&(_, _, shard)| shard).collect();
        from.sort_unstable();
        from.dedup();
        let mut taken = Vec::new();
        for shard in from {
            let sets = &usable[shard];
            taken.extend(guards[shard].detach_free_within(&span, |s| sets.contains(&s)));
        }
        taken.sort_unstable();
        // Fresh memory joined to the stream's own is the stream's; without stream order it stays
        // fresh, as every set is anybody's.
        let owner = if self.streams.ordered() { key } else { StreamKey::FRESH };
        let core = &mut guards[home];
        for (addr, len) in taken {
            self.shards.adopt(home, core, addr, len, owner);
        }
        if fitting.is_none() {
            return recycle;
        }
        let set = if self.streams.ordered() {
            self.streams.own_set(core, key, &self.captures)
        } else {
            core.set_of(StreamKey::FRESH)
        };
        match core.allocate(set, req.bytes, req.size, req.align) {
            Some(a) => Gathered::Allocated(a),
            None => recycle,
        }
    }

    /// Whether a growth for `needed` bytes should first unmap free granules in pieces (see the top
    /// of this file), from `free` (every free block of every set and shard) and the mapped end.
    fn recycling(&self, free: Vec<(usize, usize)>, mapped_end: usize, needed: usize, granule: usize) -> Gathered {
        let runs = touching_runs(free.into_iter().map(|(a, l)| (a, l, 0)).collect());
        // Once every stream is synchronised the free tail is fresh, and the growth joins it.
        let tail = runs.last().filter(|r| r.last().is_some_and(|&(a, l, _)| a + l == mapped_end));
        let tail_start = tail.map_or(mapped_end, |r| r[0].0);
        let growth = needed.saturating_sub(mapped_end - tail_start).next_multiple_of(granule).max(granule);
        let pool = self.pool_size();
        if growth < (pool / RECYCLE_GROWTH_SHARE).max(RECYCLE_GROWTH_GRANULES * granule) {
            return Gathered::Grow { bytes: 0, below: 0 };
        }
        let below: Vec<(usize, usize)> =
            runs.iter().flatten().filter(|&&(a, _, _)| a < tail_start).map(|&(a, l, _)| (a, l)).collect();
        let pieces: usize = whole_granules(below, granule, usize::MAX).iter().map(|&(_, l)| l).sum();
        if pieces < pool / RECYCLE_SHARE {
            return Gathered::Grow { bytes: 0, below: 0 };
        }
        Gathered::Grow { bytes: pieces.min(growth), below: tail_start }
    }
}

/// `pieces` (any order) grouped into runs of pieces that touch, lowest first.
fn touching_runs(mut pieces: Vec<(usize, usize, usize)>) -> Vec<Run> {
    pieces.sort_unstable();
    let mut runs: Vec<Run> = Vec::new();
    for piece in pieces {
        match runs.last_mut() {
            Some(run) if run.last().is_some_and(|&(a, l, _)| a + l == piece.0) => run.push(piece),
            _ => runs.push(vec![piece]),
        }
    }
    runs
}

/// Gives the calling thread a shard of its own for `stream`, as contention on the stream's
/// shard would: for tests that need the threads of one stream on different shards.
#[cfg(test)]
impl<U: MemoryResource> PoolMemoryResource<U> {
    pub(crate) fn spread_calling_thread(&self, stream: crate::stream::CudaStreamView) {
        let key = stream.key();
        self.shards.map().spread(key);
        self.shards.map().spread_thread(key);
    }
}
