//! The fast paths of allocation and free: one lock of the stream's home shard and a fitting block
//! of the stream's own set (or, for a free, the block back into it). Everything else falls to a
//! cold path: `slow_path.rs` for an allocation, `free_path.rs` for a free.

use super::PoolMemoryResource;
use crate::resource::{effective_alignment, MemoryResource};
use crate::stream::CudaStreamView;
use rmm_algorithms::{rounded_size, CoalescingPool, SetId, GRANULE, MAX_BLOCK_BYTES};

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// The common case of an allocation, whose result fits in registers where a `Result` with an
    /// [`Error`] is returned through memory: a valid request that the stream's home shard serves
    /// under one lock (its cache, its free lists, fresh or published memory, its merged sets).
    /// `None` for everything else, with no block handed out (free blocks may have merged): then
    /// [`allocate_beyond_home`](Self::allocate_beyond_home) reports the error or takes memory
    /// from other shards or the upstream.
    #[inline(always)]
    pub(super) fn allocate_at_home(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Option<*mut u8> {
        // One comparison rejects both a 0-byte request and one no block can hold: the largest
        // block is a multiple of the granule, so `bytes` fits exactly when its rounded size does.
        const _: () = assert!(MAX_BLOCK_BYTES.is_multiple_of(GRANULE));
        if bytes.wrapping_sub(1) >= MAX_BLOCK_BYTES {
            return None;
        }
        let size = (bytes + (GRANULE - 1)) & !(GRANULE - 1);
        debug_assert_eq!(rounded_size(bytes), Some(size));
        // Every power of two up to the granule means the granule: with the alignment a constant,
        // the block search and the alignment cut fold away. The granule itself (RMM's default
        // alignment, so nearly every request) is tested first, alone.
        if alignment == GRANULE || (alignment.wrapping_sub(1) < GRANULE && alignment & (alignment - 1) == 0) {
            debug_assert_eq!(effective_alignment(alignment).ok(), Some(GRANULE), "the shared rule, restated");
            self.allocate_at_home_aligned(bytes, size, GRANULE, stream)
        } else {
            self.allocate_at_home_coarse(bytes, size, alignment, stream)
        }
    }

    /// [`allocate_at_home`](Self::allocate_at_home) of an alignment above the granule (or an
    /// invalid one, then `None`): out of line, so that the granule's path stays short.
    #[inline(never)]
    fn allocate_at_home_coarse(
        &self,
        bytes: usize,
        size: usize,
        alignment: usize,
        stream: CudaStreamView,
    ) -> Option<*mut u8> {
        let align = effective_alignment(alignment).ok()?;
        self.allocate_at_home_aligned(bytes, size, align, stream)
    }

    /// [`allocate_at_home`](Self::allocate_at_home) of a valid request: `size` is `bytes` rounded
    /// (see [`rounded_size`]), `align` an effective alignment.
    #[inline(always)]
    fn allocate_at_home_aligned(
        &self,
        bytes: usize,
        size: usize,
        align: usize,
        stream: CudaStreamView,
    ) -> Option<*mut u8> {
        let key = stream.key();
        let mut core = self.shards.lock_home(self.shards.home(key), key);
        let set = self.streams.own_set(&mut core, key, &self.captures);
        if core.is_wanted(set) {
            self.publish(&mut core, set);
        }
        let a = match core.allocate(set, bytes, size, align) {
            Some(a) => a,
            // Steps 1-2 of the slow path under the same lock: with a large initial pool, most
            // requests a stream's own blocks cannot serve come from fresh memory right here.
            None => self.allocate_within(&mut core, set, bytes, size, align)?,
        };
        Some(a as *mut u8)
    }

    /// The common case of a free: a block that the stream's home shard handed out, freed with its
    /// size. False for everything else, with nothing changed; then
    /// [`deallocate_beyond_home`](Self::deallocate_beyond_home) frees it in its shard or reports
    /// the misuse.
    #[inline]
    pub(super) fn deallocate_at_home(&self, ptr: *mut u8, bytes: usize, stream: CudaStreamView) -> bool {
        let key = stream.key();
        let mut core = self.shards.lock_home(self.shards.home(key), key);
        let set = self.streams.set_for_free(&mut core, key, &self.captures);
        let shared = core.shared_by_streams();
        if !matches!(core.try_deallocate_shared(ptr as usize, bytes, set, shared), Some(Ok(()))) {
            return false;
        }
        self.publish_after_free(&mut core, set, shared);
        true
    }

    /// A shard several streams use publishes on every free, as RMM records an event on every
    /// free: another stream then reuses the block at once instead of growing the pool while it
    /// waits for this stream's next call. A shard of one stream (the common case for a thread on
    /// its own stream) makes no CUDA call per free.
    ///
    /// `shared` is `core.shared_by_streams()`, asked once for the free and for this (a free does
    /// not change it; asked again, it is read again from memory the free wrote through).
    #[inline(always)]
    pub(super) fn publish_after_free(&self, core: &mut CoalescingPool, set: SetId, shared: bool) {
        if self.free_publishes(core, set, shared) {
            self.publish(core, set);
        }
    }

    /// Whether a free into `set` publishes it (see [`publish_after_free`](Self::publish_after_free));
    /// `shared` is `core.shared_by_streams()`.
    #[inline(always)]
    pub(super) fn free_publishes(&self, core: &CoalescingPool, set: SetId, shared: bool) -> bool {
        debug_assert_eq!(shared, core.shared_by_streams());
        core.is_wanted(set) || (self.streams.ordered() && shared)
    }

    /// Captures the work of `set`'s stream for the streams waiting for its blocks. Called only
    /// from a call on that stream, so the stream is alive.
    #[cold]
    #[inline(never)]
    pub(super) fn publish(&self, core: &mut CoalescingPool, set: SetId) {
        // A capture on the handle would not cover a destroyed stream that had it before.
        if !self.streams.identity_holds(core, set, &self.captures) {
            return;
        }
        match self.streams.order().record(core.key_of(set), core.identity(set)) {
            Ok(()) => core.publish(set),
            Err(_) => core.clear_wanted(set),
        }
    }
}
