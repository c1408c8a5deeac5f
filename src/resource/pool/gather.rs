//! Step 5a of the slow path, for a pool over a reserved range mapped in place: before it maps
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

use super::slow_path::Request;
use super::PoolMemoryResource;
use crate::pool::{SetId, StreamKey};
use crate::resource::MemoryResource;

/// Free pieces that touch, one run of addresses: `(addr, len, shard)`, lowest first.
type Run = Vec<(usize, usize, usize)>;

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// Step 5a (see the top of this file): the address allocated from a gathered run, or `None`
    /// (after moving the free run at the mapped end, if any, to shard `home`). Nothing for a pool
    /// over an ordinary upstream or of one shard.
    pub(super) fn allocate_from_gathered(&self, home: usize, key: StreamKey, req: Request) -> Option<usize> {
        let range = self.in_place.as_ref()?;
        let shards = self.real_shards();
        if shards.len() == 1 || home >= shards.len() {
            return None;
        }
        // Every shard locked in index order (no other lock is held), so no two threads deadlock;
        // growth holds a shard's lock, so the mapped end stays where it is read.
        let mut guards: Vec<_> = shards.iter().map(|s| s.0.lock()).collect();
        let mapped_end = range.mapped_end();
        let mut usable: Vec<Vec<SetId>> = Vec::with_capacity(guards.len());
        let mut pieces = Vec::new();
        for (i, core) in guards.iter_mut().enumerate() {
            let mut sets = core.sets_usable_at_once(key, self.ordered);
            // A set of this stream filled by a destroyed stream that had the same handle is not
            // this stream's.
            sets.retain(|&s| !self.ordered || core.key_of(s) == StreamKey::FRESH || self.identity_holds(core, s));
            pieces.extend(core.free_blocks(|s| sets.contains(&s)).into_iter().map(|(a, l)| (a, l, i)));
            usable.push(sets);
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
                _ => return None,
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
        let owner = if self.ordered { key } else { StreamKey::FRESH };
        let core = &mut guards[home];
        for (addr, len) in taken {
            self.adopt(home, core, addr, len, owner);
        }
        fitting?;
        let set = if self.ordered { self.own_set(core, key) } else { core.set_of(StreamKey::FRESH) };
        core.allocate(set, req.bytes, req.size, req.align)
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
        let key = super::stream_key(stream);
        self.shard_map.spread(key);
        self.shard_map.spread_thread(key);
    }
}
