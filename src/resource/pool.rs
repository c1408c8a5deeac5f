//! A coalescing, stream-ordered pool over any upstream resource, sharded by stream.

use crate::error::{Error, Result};
use crate::resource::claims::ClaimTable;
use crate::resource::cuda_event_order::default_order;
use crate::resource::{effective_alignment, MemoryResource};
use crate::stream::CudaStreamView;
use crate::PoolState;
use captures::Captures;
use growth::Growth;
pub(crate) use in_place::ReservedRange;
use parking_lot::Mutex;
use rmm_algorithms::{
    current_thread_number, rounded_size, CoalescingPool, SetId, StreamKey, StreamOrder, GRANULE, MAX_BLOCK_BYTES,
};
use shards::Shards;
use std::sync::Arc;

mod capture;
mod captures;
mod gather;
mod growth;
mod immediate;
mod in_place;
mod invariants;
mod release;
mod segments;
mod shards;
mod slow_path;
mod stream_identity;
mod synchronisation;

/// The key of a stream as seen from the calling thread, for the pool and the arena: the legacy
/// default stream (0 or `cudaStreamLegacy`) is [`StreamKey::LEGACY_DEFAULT`], the per-thread
/// default stream is this thread's own key, any other stream its handle.
#[inline]
pub(crate) fn stream_key(stream: CudaStreamView) -> StreamKey {
    if stream.is_default() {
        StreamKey::LEGACY_DEFAULT
    } else if stream.is_per_thread_default() {
        StreamKey::per_thread(current_thread_number())
    } else {
        StreamKey::of_handle(stream.handle())
    }
}

/// Default number of shards: shard 0 plus 31 for streams spread off it, so up to 32 threads that
/// each use their own stream never meet on a lock. Two streams meeting on one shard cost more
/// than the lock: while they take turns, every free there records an event.
pub const DEFAULT_SHARDS: usize = 32;

/// A pool that takes chunks from `U` and hands out blocks from them in stream order.
///
/// Allocation and free are O(1) in the number of free blocks (see [`rmm_algorithms::coalescing_pool`]); a stream that
/// has its shard to itself makes no CUDA call on either. The pool grows on demand: under a
/// `maximum_size` as RMM's pool does (by the larger of the request and half the room left, giving
/// wholly free chunks back first where the request does not fit in that room), without one by
/// doubling up to 4 GiB, then by an eighth of its size; either way backing off toward the
/// request while the upstream runs out. It takes free blocks from other streams once their work is
/// captured by an event, synchronises and merges all streams' free blocks before reporting
/// out-of-memory, and gives every chunk back to the upstream when dropped (wholly free ones
/// earlier, at [`release`](Self::release)).
///
/// Streams share one shard until a call finds it busy with another thread; that stream then gets a
/// shard of its own (each shard has its own lock and its own address ranges), so threads working
/// on their own streams stop contending, while a single-threaded program keeps every free block in
/// one place. Threads sharing a stream spread the same way: a thread that finds its stream's shard
/// busy gets a shard of its own for the stream, whose free blocks any thread of the stream takes
/// without a wait once its own shard runs short. A shard short of memory takes a range of another shard's free memory before it grows
/// the pool: memory is reused before the upstream is asked for more, as in RMM's pool.
///
/// While a stream is captured into a CUDA graph, its allocations come from memory private to the
/// capture, kept until the program releases it: see [`begin_capture`](Self::begin_capture),
/// [`end_capture`](Self::end_capture) and [`release_capture`](Self::release_capture).
///
/// Streams may be destroyed while the pool holds blocks freed on them: the pool only ever records
/// on a stream during a call that names it, and a stream that gets a destroyed stream's handle
/// never takes that stream's blocks without waiting for its work (see
/// [`crate::stream_registry`]).
pub struct PoolMemoryResource<U: MemoryResource> {
    /// The shards, the streams' homes among them and the owner of each range.
    shards: Shards,
    /// The chunks taken from the upstream, the pool's size and maximum, and the growth rule.
    growth: Growth<U>,
    order: Arc<dyn StreamOrder>,
    ordered: bool,
    /// One synchronisation of everything at a time (see `synchronisation.rs`).
    sync_lock: Mutex<()>,
    /// Keeps the pool among those told of retiring streams (pools that order streams only).
    _tenancy: Option<crate::stream_registry::Tenancy>,
    /// For a pool over one reserved range mapped in place (see `in_place.rs`): where it grows,
    /// and what its ranges join.
    in_place: Option<Arc<dyn ReservedRange>>,
    /// The streams marked as capturing and the private memory of CUDA graph captures (see
    /// `capture.rs`).
    captures: Captures,
    /// Blocks a suballocator over this pool claimed as its chunks.
    claims: ClaimTable,
}

/// What one attempt to grow the pool came to.
pub(super) enum Grew {
    /// A new chunk is in the shard.
    Grown,
    /// The room left below the maximum is smaller than what was needed.
    NoRoom,
    /// The upstream refused the smallest size tried, with this error.
    Refused(Error),
}

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// A pool holding `initial_size` bytes from `upstream` at once, growing to at most
    /// `maximum_size` (unbounded when `None`). Both must be multiples of 256. Device memory is
    /// ordered with CUDA events; host-only memory needs no ordering.
    pub fn new(upstream: U, initial_size: usize, maximum_size: Option<usize>) -> Result<Self> {
        let order = default_order(&upstream);
        // SAFETY: `default_order` orders device-accessible memory with CUDA events.
        unsafe { Self::with_stream_order(upstream, initial_size, maximum_size, order) }
    }

    /// Like [`new`](Self::new) with an explicit way of ordering streams.
    ///
    /// # Safety
    /// `order` orders work on the streams as `upstream`'s memory needs: CUDA events (a
    /// [`CudaEventOrder`](crate::resource::CudaEventOrder)) for memory kernels or the driver's
    /// copies use; an order that waits for nothing ([`HostOrder`](rmm_algorithms::HostOrder),
    /// [`SimulatedDeviceOrder`](rmm_algorithms::SimulatedDeviceOrder)) only for memory no device
    /// work touches. A wrong order hands a block to a stream while work on another may still use
    /// it.
    pub unsafe fn with_stream_order(
        upstream: U,
        initial_size: usize,
        maximum_size: Option<usize>,
        order: Box<dyn StreamOrder>,
    ) -> Result<Self> {
        // SAFETY: the caller's duty, passed on unchanged.
        unsafe { Self::with_shards(upstream, initial_size, maximum_size, order, DEFAULT_SHARDS) }
    }

    /// Like [`with_stream_order`](Self::with_stream_order) with `shards` shards (1 to 256); one
    /// shard gives a single-lock pool whose free blocks of all streams can always coalesce.
    ///
    /// # Safety
    /// As for [`with_stream_order`](Self::with_stream_order): `order` suits `upstream`'s memory.
    pub unsafe fn with_shards(
        upstream: U,
        initial_size: usize,
        maximum_size: Option<usize>,
        order: Box<dyn StreamOrder>,
        shards: usize,
    ) -> Result<Self> {
        Self::build(upstream, initial_size, maximum_size, order, shards, None)
    }

    /// [`with_shards`](Self::with_shards), over a reserved range when `in_place` is given.
    fn build(
        upstream: U,
        initial_size: usize,
        maximum_size: Option<usize>,
        order: Box<dyn StreamOrder>,
        shards: usize,
        in_place: Option<Arc<dyn ReservedRange>>,
    ) -> Result<Self> {
        if initial_size % GRANULE != 0 {
            return Err(Error::InvalidArgument(format!(
                "initial pool size {initial_size} is not a multiple of {GRANULE}"
            )));
        }
        if let Some(max) = maximum_size {
            if max % GRANULE != 0 {
                return Err(Error::InvalidArgument(format!("maximum pool size {max} is not a multiple of {GRANULE}")));
            }
            if max < initial_size {
                return Err(Error::InvalidArgument(format!(
                    "maximum pool size {max} is below the initial size {initial_size}"
                )));
            }
        }
        if !(1..=256).contains(&shards) {
            return Err(Error::InvalidArgument(format!("{shards} shards: a pool has 1 to 256 shards")));
        }
        if initial_size > MAX_BLOCK_BYTES {
            // RMM would ask the upstream, which cannot give that much either: out of memory.
            return Err(Error::out_of_memory(
                initial_size,
                format!("initial pool size {initial_size} is above the largest chunk a pool keeps ({MAX_BLOCK_BYTES})"),
            ));
        }
        let ordered = order.is_needed();
        let order: Arc<dyn StreamOrder> = Arc::from(order);
        // One more, empty shard: where streams marked as capturing are sent (see `capture.rs`).
        let shards = Shards::new(shards, in_place.is_some());
        let tenancy = ordered.then(|| stream_identity::announce_retiring_streams(shards.weak(), &order));
        let pool = PoolMemoryResource {
            shards,
            growth: Growth::new(upstream, maximum_size),
            claims: ClaimTable::new(),
            order,
            ordered,
            sync_lock: Mutex::new(()),
            _tenancy: tenancy,
            in_place,
            captures: Captures::new(),
        };
        if initial_size > 0 {
            // As RMM's pool makes its first chunk (a growth by exactly the initial size): a refusal
            // of the upstream is the pool's out-of-memory error quoting it. A range mapped in
            // place passes its driver's errors on, as its growth does.
            let ptr = pool.growth.take_initial(initial_size).map_err(|e| {
                if pool.in_place.is_none() && growth::backs_off_from(&e) {
                    pool.refusal(initial_size, initial_size, Some(e))
                } else {
                    e
                }
            })?;
            // An upstream may allocate in stream order; once nothing is pending, the chunk is fresh
            // memory every stream may take without waiting. If that cannot be established, it
            // belongs to the default stream it was allocated on, and other streams take it through
            // the usual publish/wait hand-over.
            let fresh = !pool.ordered || pool.order.synchronize_all().is_ok();
            let owner = if fresh { StreamKey::FRESH } else { StreamKey::LEGACY_DEFAULT };
            let shard = if fresh { 0 } else { pool.shards.home(owner) };
            pool.shards.adopt(shard, &mut pool.shards.lock(shard), ptr, initial_size, owner);
        }
        Ok(pool)
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        self.growth.upstream()
    }

    /// Bytes currently taken from the upstream.
    pub fn pool_size(&self) -> usize {
        self.growth.size()
    }

    /// Number of shards.
    pub fn shards(&self) -> usize {
        self.shards.real().len()
    }

    /// Pool size, free bytes and largest free block. A chunk's bytes past its last 256-byte
    /// multiple (under a maximum, as in RMM) are never handed out and count as free.
    pub fn state(&self) -> PoolState {
        let tails = self.growth.tails();
        let (free, largest) = self.shards.free();
        PoolState { pool_size: self.pool_size(), free_bytes: tails + free, largest_free_block: largest }
    }

    /// The maximum pool size, if one was set.
    pub fn maximum_size(&self) -> Option<usize> {
        self.growth.maximum()
    }

    /// Moves `stream` to a shard of its own now, rather than at its first call that finds another
    /// thread in the shared shard. For a stream that one thread will use heavily while others use
    /// the pool too; without effect on a pool of one shard and on a stream moved before.
    pub fn spread_stream(&self, stream: CudaStreamView) {
        self.shards.map().spread(stream_key(stream));
    }

    /// Captures the work of `set`'s stream for the streams waiting for its blocks. Called only
    /// from a call on that stream, so the stream is alive.
    #[cold]
    #[inline(never)]
    fn publish(&self, core: &mut CoalescingPool, set: SetId) {
        // A capture on the handle would not cover a destroyed stream that had it before.
        if !self.identity_holds(core, set) {
            return;
        }
        match self.order.record(core.key_of(set), core.identity(set)) {
            Ok(()) => core.publish(set),
            Err(_) => core.clear_wanted(set),
        }
    }

    /// The common case of an allocation, whose result fits in registers where a `Result` with an
    /// [`Error`] is returned through memory: a valid request that the stream's home shard serves
    /// under one lock (its cache, its free lists, fresh or published memory, its merged sets).
    /// `None` for everything else, with no block handed out (free blocks may have merged): then
    /// [`allocate_beyond_home`](Self::allocate_beyond_home) reports the error or takes memory
    /// from other shards or the upstream.
    #[inline]
    fn allocate_at_home(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Option<*mut u8> {
        // One comparison rejects both a 0-byte request and one no block can hold: the largest
        // block is a multiple of the granule, so `bytes` fits exactly when its rounded size does.
        const _: () = assert!(MAX_BLOCK_BYTES % GRANULE == 0);
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
        let key = stream_key(stream);
        let mut core = self.shards.lock_home(self.shards.home(key), key);
        let set = self.own_set(&mut core, key);
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

    /// The rest of an allocation after [`allocate_at_home`](Self::allocate_at_home) returned
    /// `None`: a 0-byte request, an error, or steps 3-5 of the slow path.
    #[cold]
    #[inline(never)]
    fn allocate_beyond_home(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
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
        let key = stream_key(stream);
        let home = self.shards.home(key);
        if self.shards.is_capture_home(home) || self.found_capturing(key).is_some() {
            if let Some(a) = self.allocate_captured(key, bytes, size, align)? {
                return Ok(a);
            }
        }
        self.allocate_slow(self.shards.home(key), key, stream, bytes, size, align)
    }

    /// The common case of a free: a block that the stream's home shard handed out, freed with its
    /// size. False for everything else, with nothing changed; then
    /// [`deallocate_beyond_home`](Self::deallocate_beyond_home) frees it in its shard or reports
    /// the misuse.
    #[inline]
    fn deallocate_at_home(&self, ptr: *mut u8, bytes: usize, stream: CudaStreamView) -> bool {
        let key = stream_key(stream);
        let mut core = self.shards.lock_home(self.shards.home(key), key);
        let set = self.set_for_free(&mut core, key);
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
    fn publish_after_free(&self, core: &mut CoalescingPool, set: SetId, shared: bool) {
        if self.free_publishes(core, set, shared) {
            self.publish(core, set);
        }
    }

    /// Whether a free into `set` publishes it (see [`publish_after_free`](Self::publish_after_free));
    /// `shared` is `core.shared_by_streams()`.
    #[inline(always)]
    fn free_publishes(&self, core: &CoalescingPool, set: SetId, shared: bool) -> bool {
        debug_assert_eq!(shared, core.shared_by_streams());
        core.is_wanted(set) || (self.ordered && shared)
    }

    /// The rest of a free after [`deallocate_at_home`](Self::deallocate_at_home) returned false:
    /// a null pointer, a misuse, or a block of another shard.
    #[cold]
    #[inline(never)]
    fn deallocate_beyond_home(&self, ptr: *mut u8, bytes: usize, stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        let key = stream_key(stream);
        let mut home = self.shards.home(key);
        if self.shards.is_capture_home(home) {
            if self.deallocate_captured(ptr as usize, bytes, key)? {
                return Ok(());
            }
            home = self.shards.home(key);
        }
        {
            let mut core = self.shards.lock(home);
            let set = self.set_for_free(&mut core, key);
            let shared = core.shared_by_streams();
            if let Some(freed) = core.try_deallocate_shared(ptr as usize, bytes, set, shared) {
                if freed.is_ok() {
                    self.publish_after_free(&mut core, set, shared);
                }
                return freed.map_err(Error::Misuse);
            }
        }
        self.deallocate_elsewhere(home, ptr as usize, bytes, key)
    }

    /// Frees a block that the home shard of `key` did not hand out: finds the owner shard and frees
    /// it there. The block joins `key`'s set in that shard and, for device memory, is published at
    /// once: `key` rarely visits that shard, and this call is the one moment `key` is known alive.
    #[cold]
    #[inline(never)]
    fn deallocate_elsewhere(&self, home: usize, ptr: usize, bytes: usize, key: StreamKey) -> Result<()> {
        let owner = self.shards.owner(ptr);
        let Some(shard) = owner else {
            return Err(Error::Misuse(crate::error::Misuse::UnknownPointer { ptr }));
        };
        // A capturing stream not announced records nothing: its free goes to its capture.
        if self.found_capturing(key).is_some() && self.deallocate_captured(ptr, bytes, key)? {
            return Ok(());
        }
        if self.shards.is_capture_home(shard) {
            return self.deallocate_capture_block(ptr, bytes);
        }
        let mut core = self.shards.lock(shard);
        let set = self.set_for_free(&mut core, key);
        core.deallocate(ptr, bytes, set).map_err(Error::Misuse)?;
        if shard != home && self.ordered {
            self.publish(&mut core, set);
        }
        Ok(())
    }
}

// SAFETY: blocks are disjoint ranges of chunks the upstream handed out and the pool keeps until
// it is dropped; a block is handed out again only after its free, in stream order (`StreamOrder`);
// the accessibility answers are the upstream's.
unsafe impl<U: MemoryResource> MemoryResource for PoolMemoryResource<U> {
    #[inline]
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        match self.allocate_at_home(bytes, alignment, stream) {
            Some(a) => Ok(a),
            None => self.allocate_beyond_home(bytes, alignment, stream),
        }
    }

    #[inline]
    fn deallocate(&self, ptr: *mut u8, bytes: usize, _alignment: usize, stream: CudaStreamView) -> Result<()> {
        self.claims.refuse_claimed(ptr)?;
        if self.deallocate_at_home(ptr, bytes, stream) {
            return Ok(());
        }
        self.deallocate_beyond_home(ptr, bytes, stream)
    }

    #[inline]
    fn try_allocate_immediately(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Option<*mut u8> {
        self.allocate_immediately(bytes, alignment, stream)
    }

    #[inline]
    fn try_deallocate_immediately(
        &self,
        ptr: *mut u8,
        bytes: usize,
        _alignment: usize,
        stream: CudaStreamView,
    ) -> bool {
        !self.claims.is_claimed(ptr) && self.deallocate_immediately(ptr, bytes, stream)
    }

    fn is_device_accessible(&self) -> bool {
        self.upstream().is_device_accessible()
    }

    fn is_host_accessible(&self) -> bool {
        self.upstream().is_host_accessible()
    }

    fn memory_segments(&self) -> Option<Vec<crate::resource::MemorySegment>> {
        Some(self.segments())
    }

    crate::resource::forward_claims!(claims);
}

impl<U: MemoryResource> Drop for PoolMemoryResource<U> {
    fn drop(&mut self) {
        // Work still queued may use blocks freed on its stream; the upstream must not get them
        // back before it finishes.
        let captured = self.captures.take_chunks();
        self.growth.give_back_all(&*self.order, captured);
    }
}
