//! The pool's last resort before growing past what its streams' free memory could give, or
//! reporting out-of-memory: a synchronisation of everything, after which every free block is
//! fresh memory any stream may take.
//!
//! Only blocks freed before the synchronisation starts are covered by it. A block freed while it
//! runs may still be used by work queued after it began, so every shard's free blocks are sealed
//! first (moved to a set no stream may take from), and only those become fresh afterwards. One
//! synchronisation runs at a time: a thread that needs one while another runs waits for it, then
//! first tries the memory it made fresh, instead of sealing the others' blocks away.

use super::slow_path::Request;
use super::PoolMemoryResource;
use crate::resource::MemoryResource;
use rmm_algorithms::{next_retirement_number, StreamKey, GRANULE, MAX_BLOCK_BYTES};

/// How many times step 7 lets other threads run before out-of-memory is reported.
const PUBLISH_WAIT_ROUNDS: usize = 64;

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// Steps 4 and 6 of the slow path: synchronise everything, then allocate from fresh memory:
    /// in the home shard, or a range of another shard's, or, as a last resort, every range that
    /// is wholly free in any shard, rejoined where they touch.
    pub(super) fn allocate_after_sync(&self, home: usize, req: Request) -> Option<usize> {
        let _one_at_a_time = self.sync_lock.lock();
        // A synchronisation that ran while this call waited may have made enough memory fresh.
        if let Some(a) = self.allocate_fresh(home, req) {
            return Some(a);
        }
        if !self.synchronise_sealed() {
            return None;
        }
        if let Some(a) = self.allocate_fresh(home, req) {
            return Some(a);
        }
        self.allocate_from_rejoined_chunks(home, req)
    }

    /// Synchronises every stream; the blocks free when it starts become fresh memory once it
    /// succeeds (see the top of this file). Fails without a call while a stream is marked as
    /// capturing. The caller holds `sync_lock`. Whether it succeeded.
    pub(super) fn synchronise_sealed(&self) -> bool {
        let sealed = StreamKey::sealed(next_retirement_number());
        for shard in self.shards.all().iter() {
            shard.lock().seal(sealed);
        }
        // A synchronisation of everything is illegal while a stream captures: count it as failed.
        let synced = !self.capture_in_progress() && self.order.synchronize_all().is_ok();
        for shard in self.shards.all().iter() {
            shard.lock().unseal(sealed, synced);
        }
        synced
    }

    /// Step 7: while some stream has been asked for blocks that would fit and has not published
    /// them yet, lets other threads run (its next call publishes them) and looks again, a bounded
    /// number of times.
    pub(super) fn allocate_once_published(&self, home: usize, key: StreamKey, req: Request) -> Option<usize> {
        if !self.ordered {
            return None;
        }
        for _ in 0..PUBLISH_WAIT_ROUNDS {
            let asked = self.shards.any_wanted();
            if !asked {
                return None;
            }
            std::thread::yield_now();
            {
                let mut core = self.shards.lock(home);
                let set = self.own_set(&mut core, key);
                if let Some(a) = self.allocate_within(&mut core, set, req.bytes, req.size, req.align) {
                    return Some(a);
                }
            }
            if let Some(a) = self.allocate_from_other_shards(home, key, req).allocated() {
                return Some(a);
            }
        }
        None
    }

    /// Fresh memory of the home shard, else a range of another shard's.
    fn allocate_fresh(&self, home: usize, req: Request) -> Option<usize> {
        {
            let mut core = self.shards.lock(home);
            let fresh = core.set_of(StreamKey::FRESH);
            if let Some(a) = core.allocate(fresh, req.bytes, req.size, req.align) {
                return Some(a);
            }
        }
        self.allocate_from_other_shards(home, StreamKey::FRESH, req).allocated()
    }

    /// Takes every fresh free block out of every shard, rejoins those that touch (never across
    /// two upstream allocations: each goes back alone) and allocates from them. Free memory split
    /// between shards is one range again, as one free list would hold it: a shard that took part
    /// of a free range from another cannot otherwise merge it with the rest while either side
    /// also holds a live block.
    fn allocate_from_rejoined_chunks(&self, home: usize, req: Request) -> Option<usize> {
        if self.shards.real().len() == 1 {
            return None;
        }
        // Lock every shard in index order (no other lock is held), so no two threads deadlock.
        let mut guards: Vec<_> = self.shards.lock_real();
        let mut ranges = Vec::new();
        for core in guards.iter_mut() {
            let fresh = core.set_of(StreamKey::FRESH);
            ranges.extend(core.detach_free_granules(GRANULE, usize::MAX, |set| set == fresh));
        }
        ranges.sort_unstable();
        let starts = self.growth.starts();
        let mut joined: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
        for (addr, len) in ranges {
            match joined.last_mut() {
                Some((a, l)) if *a + *l == addr && !starts.contains(&addr) && *l + len <= MAX_BLOCK_BYTES => *l += len,
                _ => joined.push((addr, len)),
            }
        }
        let core = &mut guards[home];
        for (addr, len) in joined {
            self.shards.adopt(home, core, addr, len, StreamKey::FRESH);
        }
        let fresh = core.set_of(StreamKey::FRESH);
        core.allocate(fresh, req.bytes, req.size, req.align)
    }
}
