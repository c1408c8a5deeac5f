//! The slow path of an allocation, top to bottom. The fast path (`fast_path.rs`) locks the
//! stream's home shard and takes a fitting block of the stream's own set, or tries steps 1 and 2
//! under the same lock; whatever it cannot serve comes to
//! [`allocate_beyond_home`](PoolMemoryResource::allocate_beyond_home), which checks the request,
//! sends a stream marked as capturing to its capture's memory (`capture.rs`), and then
//! [`allocate_slow`](PoolMemoryResource::allocate_slow) tries, in order, each step a function
//! of this file that calls into the pool's parts:
//!
//! 1. a fitting block of fresh memory or of another stream's published set, in the home shard
//!    (`allocate_within`);
//! 2. every set the stream may use at once merged into its own, in the home shard (the same);
//! 3. a range of another shard's free memory (`allocate_from_other_shards`);
//! 4. where replaced streams left enough free memory, a synchronisation of everything
//!    (`allocate_after_sync`; the synchronisation itself is in `synchronisation.rs`);
//! 5. growth (`allocate_after_growth`): under a maximum, for a request above the room left,
//!    the synchronisation first and wholly free chunks given back (`release.rs`); over a range
//!    mapped in place, free memory split between shards gathered (`gather.rs`); then a chunk
//!    of the upstream sized by the growth rule (`growth.rs`) or mapped in place (`in_place.rs`);
//! 6. a synchronisation of everything, unless step 5 made it (`allocate_after_sync`);
//! 7. the blocks of streams just asked to publish (`allocate_once_published`);
//!
//! and otherwise reports out-of-memory in RMM's words (`refusal`).

use super::growth::Taken;
use super::{Grew, PoolMemoryResource};
use crate::error::{format_bytes, Error, Result};
use crate::resource::{effective_alignment, MemoryResource};
use crate::stream::CudaStreamView;
use rmm_algorithms::{rounded_size, CoalescingPool, SetId, StreamKey, GRANULE, MAX_BLOCK_BYTES};

/// The smallest range a shard takes from another shard's free memory at once.
const MIN_SEGMENT: usize = 1 << 20;

/// How many times step 7 lets other threads run before out-of-memory is reported.
const PUBLISH_WAIT_ROUNDS: usize = 64;

/// One allocation on its way through the slow path.
#[derive(Clone, Copy)]
pub(super) struct Request {
    /// What the caller asked for.
    pub bytes: usize,
    /// What the block occupies: `bytes` rounded up to the granule.
    pub size: usize,
    /// The alignment, a power of two of at least the granule.
    pub align: usize,
    /// Free bytes that surely hold it, whatever the address of the free range: `size` plus the
    /// most that aligning can skip.
    pub needed: usize,
}

/// What step 5's gathering (`gather.rs`) came back with.
pub(super) enum Gathered {
    /// The request was served from a run of gathered pieces, at this address.
    Allocated(usize),
    /// The pool grows; first, where `bytes` is not 0, it unmaps up to `bytes` of whole free
    /// granules below address `below` (the free tail's start).
    Grow { bytes: usize, below: usize },
}

/// What step 3 of the slow path (a range of another shard's free memory) came back with.
pub(super) enum FromOtherShards {
    /// An allocation at this address.
    Allocated(usize),
    /// Nothing usable now, but some stream was asked to publish blocks that would fit: they come
    /// with its next call.
    AskedToPublish,
    /// Nothing usable.
    Nothing,
}

impl FromOtherShards {
    /// The address allocated, if any.
    pub(super) fn allocated(self) -> Option<usize> {
        match self {
            FromOtherShards::Allocated(a) => Some(a),
            _ => None,
        }
    }
}

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// The rest of an allocation after [`allocate_at_home`](Self::allocate_at_home) returned
    /// `None`: a 0-byte request, an error, a stream marked as capturing, or the steps of
    /// [`allocate_slow`](Self::allocate_slow).
    #[cold]
    #[inline(never)]
    pub(super) fn allocate_beyond_home(
        &self,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView,
    ) -> Result<*mut u8> {
        let align = effective_alignment(alignment)?;
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        let Some(size) = rounded_size(bytes) else {
            return Err(Error::OutOfMemory {
                requested: bytes,
                pool: Some(self.state()),
                reason: "larger than any pool can hold".into(),
                verbatim: false,
            });
        };
        let key = stream.key();
        let home = self.shards.home(key);
        if self.shards.is_capture_home(home) || self.found_capturing(key).is_some() {
            if let Some(a) = self.allocate_captured(key, bytes, size, align)? {
                return Ok(a);
            }
        }
        self.allocate_slow(self.shards.home(key), key, stream, bytes, size, align)
    }

    /// Steps 3 to 7 of the slow path (see the top of this file), once steps 1 and 2 failed in
    /// the home shard.
    #[cold]
    #[inline(never)]
    pub(super) fn allocate_slow(
        &self,
        home: usize,
        key: StreamKey,
        stream: CudaStreamView,
        bytes: usize,
        size: usize,
        align: usize,
    ) -> Result<*mut u8> {
        let req = Request { bytes, size, align, needed: size + (align - GRANULE) };
        // 1-2. Within the home shard: failed in `allocate_at_home`.
        let mut pending = self.shards.lock(home).has_wanted();
        // 3. A range of another shard's free memory.
        match self.allocate_from_other_shards(home, key, req) {
            FromOtherShards::Allocated(a) => return Ok(a as *mut u8),
            FromOtherShards::AskedToPublish => pending = true,
            FromOtherShards::Nothing => {}
        }
        // 4. Free memory of replaced streams, which waits for a synchronisation: before growing.
        if self.streams.ordered() && self.free_bytes_waiting_for_sync() >= req.needed {
            if let Some(a) = self.allocate_after_sync(home, req) {
                return Ok(a as *mut u8);
            }
        }
        // 5. More memory from the upstream; under a maximum, for a request above the room left,
        //    after wholly free chunks are given back (RMM's rule).
        let searched_all = self.maximum_size().is_some() && req.needed > self.growth.room();
        if searched_all {
            // RMM gives chunks back only once no stream's free blocks fit: those come first.
            if let Some(a) = self.allocate_after_sync(home, req) {
                return Ok(a as *mut u8);
            }
            self.reclaim_free_chunks(req.needed);
        }
        // 5. Over a range mapped in place, free memory split between shards is gathered first,
        //    and free memory in pieces given back where the growth is large.
        match self.allocate_from_gathered(home, key, req) {
            Gathered::Allocated(a) => return Ok(a as *mut u8),
            Gathered::Grow { bytes, below } if bytes > 0 => {
                // What could not be unmapped stays free in the pool; the growth goes on.
                let _ = self.unmap_free_granules(None, bytes, below);
            }
            Gathered::Grow { .. } => {}
        }
        let mut refused = None;
        if let Some(a) = self.allocate_after_growth(home, key, stream, req, pending, &mut refused)? {
            return Ok(a as *mut u8);
        }
        // 6. Once no stream (destroyed ones included) has work pending, every free block is fresh:
        //    coalesce them all, rejoin ranges split between shards, and look again (unless that
        //    was done before step 5).
        if !searched_all {
            if let Some(a) = self.allocate_after_sync(home, req) {
                return Ok(a as *mut u8);
            }
        }
        // 7. Blocks freed while the synchronisation ran stay with their streams until asked for;
        //    the streams just asked publish them at their next call, which other threads make soon.
        if let Some(a) = self.allocate_once_published(home, key, req) {
            return Ok(a as *mut u8);
        }
        Err(self.refusal(bytes, size, refused))
    }

    /// Steps 1 and 2 of the slow path, inside one shard: a fitting block of fresh memory or of a
    /// published set, else all usable sets coalesced with this stream's blocks.
    #[inline(never)]
    pub(super) fn allocate_within(
        &self,
        core: &mut CoalescingPool,
        set: SetId,
        bytes: usize,
        size: usize,
        align: usize,
    ) -> Option<usize> {
        let key = core.key_of(set);
        // Only the fitting block is taken: the rest of the set stays where every stream can reach it.
        if let Some(donor) = core.find_donor(set, size, align, self.streams.ordered()) {
            if self.usable_now(core, donor, key) {
                // A retired stream will not come back for the rest: this stream takes it all.
                let from = if core.key_of(donor).is_retired() {
                    core.merge_into(donor, set);
                    set
                } else {
                    donor
                };
                if let Some(a) = core.allocate(from, bytes, size, align) {
                    return Some(a);
                }
            }
        }
        // This stream's cached blocks, merged, may fit: before other streams' memory or growth.
        if core.flush_caches() {
            if let Some(a) = core.allocate(set, bytes, size, align) {
                return Some(a);
            }
        }
        // Reuse before growth, as RMM does, so free memory split across streams is not stranded.
        let mut merged = false;
        for donor in core.streams_with_free_memory(set) {
            if self.usable_now(core, donor, key) {
                core.merge_into(donor, set);
                merged = true;
            }
        }
        if merged {
            return core.allocate(set, bytes, size, align);
        }
        None
    }

    /// Whether work on stream `key` may use the free blocks of set `donor` from now on: fresh memory
    /// and this stream's own published set at once, another stream's published set once `key`
    /// waits for that stream's last capture, private sets of other streams never.
    pub(super) fn usable_now(&self, core: &CoalescingPool, donor: SetId, key: StreamKey) -> bool {
        let owner = core.key_of(donor);
        if !self.streams.ordered() || owner == StreamKey::FRESH {
            return true;
        }
        // No capture covers a replaced stream's work, nor sealed blocks: only a synchronisation.
        if owner.waits_for_sync() || owner.is_sealed() {
            return false;
        }
        core.is_published(donor)
            && (owner == key || self.streams.order().wait(owner, core.identity(donor), key).is_ok())
    }

    /// Takes a range of free memory that `key` may use from some other shard, adopts it in `home`
    /// and allocates from it. Never holds two shard locks at once.
    pub(super) fn allocate_from_other_shards(&self, home: usize, key: StreamKey, req: Request) -> FromOtherShards {
        let n = self.shards.real().len();
        let mut asked = false;
        if n == 1 {
            return FromOtherShards::Nothing;
        }
        let home_size = self.shards.lock(home).pool_size();
        let want = req.needed.max(home_size).max(MIN_SEGMENT);
        // Memory that needs no wait first (fresh memory, and this stream's blocks that its other
        // threads left in their shards), then other streams' published blocks.
        for waiting_too in [false, true] {
            for i in 1..n {
                if let Some(a) = self.take_from_shard(home, (home + i) % n, key, req, want, waiting_too, &mut asked) {
                    return FromOtherShards::Allocated(a);
                }
            }
        }
        if asked {
            FromOtherShards::AskedToPublish
        } else {
            FromOtherShards::Nothing
        }
    }

    /// One shard's part of [`allocate_from_other_shards`](Self::allocate_from_other_shards): a
    /// range of `from`'s free memory usable by `key` (without a wait unless `waiting_too`),
    /// adopted by `home` and allocated from.
    #[allow(clippy::too_many_arguments)]
    fn take_from_shard(
        &self,
        home: usize,
        from: usize,
        key: StreamKey,
        req: Request,
        want: usize,
        waiting_too: bool,
        asked: &mut bool,
    ) -> Option<usize> {
        let (addr, len, owner) = {
            let mut core = self.shards.lock(from);
            let donor = core.find_shared_set(key, req.needed, self.streams.ordered(), waiting_too);
            *asked |= core.has_wanted();
            let donor = donor?;
            let owner = core.key_of(donor);
            // A set of this stream here, filled perhaps by a destroyed stream that had the same
            // handle.
            if owner == key && key != StreamKey::FRESH && !self.streams.identity_holds(&mut core, donor, &self.captures)
            {
                return None;
            }
            if self.streams.ordered() && owner != StreamKey::FRESH && owner != key {
                // FRESH names no stream that could wait (the search after a synchronisation).
                if key == StreamKey::FRESH || self.streams.order().wait(owner, core.identity(donor), key).is_err() {
                    return None;
                }
            }
            let (addr, len) = core.detach(donor, req.needed, want)?;
            (addr, len, owner)
        };
        let mut core = self.shards.lock(home);
        // Fresh memory stays fresh; anything else now belongs to `key`, which waited for it.
        let owner = if owner == StreamKey::FRESH || !self.streams.ordered() { StreamKey::FRESH } else { key };
        self.shards.adopt(home, &mut core, addr, len, owner);
        let set = if key == StreamKey::FRESH {
            core.set_of(key)
        } else {
            self.streams.own_set(&mut core, key, &self.captures)
        };
        if let Some(a) = core.allocate(set, req.bytes, req.size, req.align) {
            return Some(a);
        }
        self.allocate_within(&mut core, set, req.bytes, req.size, req.align)
    }

    /// Steps 4 and 6 of the slow path: synchronise everything, then allocate from fresh memory:
    /// in the home shard, or a range of another shard's, or, as a last resort, every range that
    /// is wholly free in any shard, rejoined where they touch.
    pub(super) fn allocate_after_sync(&self, home: usize, req: Request) -> Option<usize> {
        let _one_at_a_time = self.streams.one_at_a_time();
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

    /// Step 5 of the slow path: a new chunk from the upstream for shard `home` (see `grow`), and
    /// the allocation from it. `Ok(None)` when no chunk could be had, with the upstream's refusal
    /// in `refused` where there was one.
    fn allocate_after_growth(
        &self,
        home: usize,
        key: StreamKey,
        stream: CudaStreamView,
        req: Request,
        pending: bool,
        refused: &mut Option<Error>,
    ) -> Result<Option<usize>> {
        let mut core = self.shards.lock(home);
        match self.grow(home, &mut core, key, stream, req.needed, pending)? {
            Grew::Grown => {}
            Grew::NoRoom => return Ok(None),
            Grew::Refused(e) => {
                *refused = Some(e);
                return Ok(None);
            }
        }
        let set = self.streams.own_set(&mut core, key, &self.captures);
        let mut allocated = core.allocate(set, req.bytes, req.size, req.align);
        if allocated.is_none() {
            // Grown in place after a free tail of fresh memory: the two are one fresh block.
            let fresh = core.set_of(StreamKey::FRESH);
            allocated = core.allocate(fresh, req.bytes, req.size, req.align);
        }
        if allocated.is_some() && self.streams.ordered() && core.shared_by_streams() {
            // The rest of the new chunk is of no use to this stream's queued work: while streams
            // take turns, offer it to them at once (as RMM's free lists are), so the next stream
            // short of memory waits for this one instead of growing again.
            self.publish(&mut core, set);
        }
        Ok(allocated)
    }

    /// Grows the pool for shard `home` (whose lock the caller holds as `core`) by at least
    /// `needed` bytes: in place over a reserved range, else a chunk of the upstream sized by the
    /// growth rule ([`Growth::take_chunk`](super::growth::Growth::take_chunk)), adopted by the
    /// shard as `key`'s.
    fn grow(
        &self,
        home: usize,
        core: &mut CoalescingPool,
        key: StreamKey,
        stream: CudaStreamView,
        needed: usize,
        pending: bool,
    ) -> Result<Grew> {
        if let Some(range) = &self.in_place {
            return self.grow_in_place(&**range, home, core, key, needed);
        }
        // Relaxed: an upstream allocation must not invalidate a capture on another stream.
        let relax = |f: &dyn Fn() -> Result<*mut u8>| super::capture::relaxed_if_possible(self.streams.order(), f);
        match self.growth.take_chunk(needed, core.pool_size(), pending, stream, relax)? {
            Taken::Chunk(addr, size) => {
                self.shards.adopt(home, core, addr, size & !(GRANULE - 1), key);
                Ok(Grew::Grown)
            }
            Taken::NoRoom => Ok(Grew::NoRoom),
            Taken::Refused(e) => Ok(Grew::Refused(e)),
        }
    }

    /// Step 7: while some stream has been asked for blocks that would fit and has not published
    /// them yet, lets other threads run (its next call publishes them) and looks again, a bounded
    /// number of times.
    pub(super) fn allocate_once_published(&self, home: usize, key: StreamKey, req: Request) -> Option<usize> {
        if !self.streams.ordered() {
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
                let set = self.streams.own_set(&mut core, key, &self.captures);
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

    /// The pool's out-of-memory error, in RMM's words: the upstream's refusal of the last size
    /// tried where there was one, else the room left below the maximum.
    #[cold]
    pub(super) fn refusal(&self, bytes: usize, size: usize, refused: Option<Error>) -> Error {
        let cause = match refused {
            Some(e @ Error::OutOfMemory { .. }) => format!("std::bad_alloc: out_of_memory: {e}"),
            // RMM's `rmm::bad_alloc` of RMM_CUDA_TRY_ALLOC, quoted by its what().
            Some(e @ Error::CudaAlloc { .. }) => format!("std::bad_alloc: {e}"),
            Some(e) => e.to_string(),
            None => format!(
                "Not enough room to grow, current/max/try size = {}, {}, {}",
                format_bytes(self.pool_size()),
                format_bytes(self.maximum_size().unwrap_or(usize::MAX)),
                format_bytes(size)
            ),
        };
        let message = format!("Maximum pool size exceeded (failed to allocate {}): {cause}", format_bytes(size));
        Error::out_of_memory_verbatim(bytes, Some(self.state()), message)
    }
}
