//! A coalescing, stream-ordered pool over any upstream resource.

use crate::error::{Error, Result};
use crate::pool::{rounded_size, CoalescingPool, HostOrder, StreamKey, StreamOrder, GRANULE, MAX_BLOCK_BYTES};
use crate::resource::cuda_event_order::CudaEventOrder;
use crate::resource::{effective_alignment, MemoryResource};
use crate::stream::CudaStreamView;
use crate::PoolState;
use crate::pool::SpinMutex;

/// A pool that takes chunks from `U` and hands out blocks from them in stream order.
///
/// Allocation and free are O(1) in the number of free blocks (see [`crate::pool`]) and make no CUDA
/// call. The pool grows on demand (doubling, backing off toward the request when the upstream runs
/// out, never past `maximum_size`), takes free blocks from other streams once their work is
/// captured by an event, synchronises and merges all streams' free blocks before reporting
/// out-of-memory, and gives every chunk back to the upstream when dropped.
///
/// Streams may be destroyed while the pool holds blocks freed on them: the pool only ever records
/// on a stream during a call that names it.
pub struct PoolMemoryResource<U: MemoryResource> {
    core: SpinMutex<CoalescingPool>,
    upstream: U,
    order: Box<dyn StreamOrder>,
    ordered: bool,
    maximum_size: Option<usize>,
}

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// A pool holding `initial_size` bytes from `upstream` at once, growing to at most
    /// `maximum_size` (unbounded when `None`). Both must be multiples of 256. Device memory is
    /// ordered with CUDA events; host-only memory needs no ordering.
    pub fn new(upstream: U, initial_size: usize, maximum_size: Option<usize>) -> Result<Self> {
        let order: Box<dyn StreamOrder> =
            if upstream.is_device_accessible() { Box::new(CudaEventOrder::new()) } else { Box::new(HostOrder) };
        Self::with_stream_order(upstream, initial_size, maximum_size, order)
    }

    /// Like [`new`](Self::new) with an explicit way of ordering streams.
    pub fn with_stream_order(
        upstream: U,
        initial_size: usize,
        maximum_size: Option<usize>,
        order: Box<dyn StreamOrder>,
    ) -> Result<Self> {
        if initial_size % GRANULE != 0 {
            return Err(Error::InvalidArgument(format!(
                "initial pool size {initial_size} is not a multiple of {GRANULE}"
            )));
        }
        if let Some(max) = maximum_size {
            if max % GRANULE != 0 {
                return Err(Error::InvalidArgument(format!(
                    "maximum pool size {max} is not a multiple of {GRANULE}"
                )));
            }
            if max < initial_size {
                return Err(Error::InvalidArgument(format!(
                    "maximum pool size {max} is below the initial size {initial_size}"
                )));
            }
        }
        let ordered = order.is_needed();
        let pool = PoolMemoryResource { core: SpinMutex::new(CoalescingPool::new()), upstream, order, ordered, maximum_size };
        if initial_size > 0 {
            let ptr = pool.upstream.allocate(initial_size, GRANULE, CudaStreamView::DEFAULT)?;
            // An upstream may allocate in stream order; once nothing is pending, the chunk is fresh
            // memory every stream may take without waiting. If that cannot be established, it
            // belongs to the default stream it was allocated on, and other streams take it through
            // the usual publish/wait hand-over.
            let fresh = !pool.ordered || pool.order.synchronize_all().is_ok();
            let mut core = pool.core.lock();
            let slot = core.slot_of(if fresh { StreamKey::FRESH } else { StreamKey(0) });
            core.add_chunk(ptr as usize, initial_size, slot);
        }
        Ok(pool)
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }

    /// Bytes currently taken from the upstream.
    pub fn pool_size(&self) -> usize {
        self.core.lock().pool_size()
    }

    /// Pool size, free bytes and largest free block.
    pub fn state(&self) -> PoolState {
        self.core.lock().state()
    }

    /// The maximum pool size, if one was set.
    pub fn maximum_size(&self) -> Option<usize> {
        self.maximum_size
    }

    /// Checks the pool's internal invariants; for tests and debugging.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        self.core.lock().check_invariants()
    }

    /// Captures the work of `slot`'s stream for the streams waiting for its blocks. Called only
    /// from a call on that stream, so the stream is alive.
    #[cold]
    #[inline(never)]
    fn publish(&self, core: &mut CoalescingPool, slot: usize) {
        match self.order.record(core.key_of(slot)) {
            Ok(()) => core.publish(slot),
            Err(_) => core.clear_wanted(slot),
        }
    }

    /// Whether work on stream `key` may use the free blocks of set `d` from now on: fresh memory
    /// and this stream's own published set at once, another stream's published set once `key`
    /// waits for that stream's last capture, private sets of other streams never.
    fn usable_now(&self, core: &CoalescingPool, d: usize, key: StreamKey) -> bool {
        let owner = core.key_of(d);
        if !self.ordered || owner == StreamKey::FRESH {
            return true;
        }
        core.is_published(d) && (owner == key || self.order.wait(owner, key).is_ok())
    }

    #[cold]
    #[inline(never)]
    fn allocate_slow(
        &self,
        core: &mut CoalescingPool,
        slot: usize,
        stream: CudaStreamView,
        bytes: usize,
        size: usize,
        align: usize,
    ) -> Result<*mut u8> {
        let key = core.key_of(slot);
        // 1. A fitting block in fresh memory, in this stream's published set, or (after a wait) in
        //    another stream's published set. Only that block is taken: the rest of the set stays
        //    where every stream can reach it.
        if let Some(d) = core.find_donor(slot, size, align, self.ordered) {
            if self.usable_now(core, d, key) {
                if let Some(a) = core.allocate(d, bytes, size, align) {
                    return Ok(a as *mut u8);
                }
            }
        }
        // 2. Every published (or fresh) set, coalesced with this stream's blocks: reuse before
        //    growth, as RMM does, so free memory split across streams is not stranded.
        let mut merged = false;
        for d in core.streams_with_free_memory(slot) {
            if self.usable_now(core, d, key) {
                core.merge_into(d, slot);
                merged = true;
            }
        }
        if merged {
            if let Some(a) = core.allocate(slot, bytes, size, align) {
                return Ok(a as *mut u8);
            }
        }
        // 3. More memory from the upstream.
        if self.grow(core, slot, stream, size + (align - GRANULE))? {
            if let Some(a) = core.allocate(slot, bytes, size, align) {
                return Ok(a as *mut u8);
            }
        }
        // 4. Once no stream (destroyed ones included) has work pending, every free block is fresh:
        //    coalesce them all there and take the block from it.
        if self.order.synchronize_all().is_ok() {
            let fresh = core.slot_of(StreamKey::FRESH);
            for d in core.streams_with_free_memory(fresh) {
                core.merge_into(d, fresh);
            }
            if let Some(a) = core.allocate(fresh, bytes, size, align) {
                return Ok(a as *mut u8);
            }
        }
        let reason = match self.maximum_size {
            Some(max) if core.pool_size() + size > max => format!("maximum pool size {max} reached"),
            _ => "the upstream has no more memory and no free block is large enough".to_string(),
        };
        Err(Error::OutOfMemory { requested: bytes, pool: Some(core.state()), reason })
    }

    /// Takes a chunk of at least `needed` bytes from the upstream, sized as RMM's pool sizes it:
    /// without a maximum, the larger of `needed` and the current pool size (the pool doubles);
    /// with one, the larger of `needed` and half the room left. While the upstream is out of
    /// memory the size halves toward `needed`. `Ok(false)` when no chunk could be had.
    fn grow(&self, core: &mut CoalescingPool, slot: usize, stream: CudaStreamView, needed: usize) -> Result<bool> {
        let room = self.maximum_size.map_or(MAX_BLOCK_BYTES, |max| max - core.pool_size());
        if needed > room {
            return Ok(false);
        }
        let mut want = match self.maximum_size {
            Some(_) => needed.max((room / 2) & !(GRANULE - 1)),
            None => needed.max(core.pool_size()),
        }
        .min(room.min(MAX_BLOCK_BYTES));
        loop {
            match self.upstream.allocate(want, GRANULE, stream) {
                Ok(ptr) => {
                    core.add_chunk(ptr as usize, want, slot);
                    return Ok(true);
                }
                Err(e) if e.is_out_of_memory() => {
                    if want == needed {
                        return Ok(false);
                    }
                    want = ((want / 2) & !(GRANULE - 1)).max(needed);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl<U: MemoryResource> MemoryResource for PoolMemoryResource<U> {
    #[inline]
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        let align = effective_alignment(alignment)?;
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        let Some(size) = rounded_size(bytes) else {
            return Err(Error::OutOfMemory {
                requested: bytes,
                pool: Some(self.state()),
                reason: "larger than any pool can hold".into(),
            });
        };
        let key = StreamKey::from_view(stream);
        let mut core = self.core.lock();
        let slot = core.slot_of(key);
        if core.is_wanted(slot) {
            self.publish(&mut core, slot);
        }
        match core.allocate(slot, bytes, size, align) {
            Some(a) => Ok(a as *mut u8),
            None => self.allocate_slow(&mut core, slot, stream, bytes, size, align),
        }
    }

    #[inline]
    fn deallocate(&self, ptr: *mut u8, bytes: usize, _alignment: usize, stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        let key = StreamKey::from_view(stream);
        let mut core = self.core.lock();
        let slot = core.slot_of(key);
        let freed = core.deallocate(ptr as usize, bytes, slot).map_err(Error::Misuse);
        if core.is_wanted(slot) {
            self.publish(&mut core, slot);
        }
        freed
    }

    fn is_device_accessible(&self) -> bool {
        self.upstream.is_device_accessible()
    }

    fn is_host_accessible(&self) -> bool {
        self.upstream.is_host_accessible()
    }
}

impl<U: MemoryResource> Drop for PoolMemoryResource<U> {
    fn drop(&mut self) {
        // While the process exits the driver may be gone: the chunks go with the process.
        if crate::process_exit::process_is_exiting() {
            return;
        }
        // Work still queued may use blocks freed on its stream; the upstream must not get them
        // back before it finishes. Errors have nowhere to go from a destructor.
        let _ = self.order.synchronize_all();
        for &(addr, size) in self.core.get_mut().chunks() {
            let _ = self.upstream.deallocate(addr as *mut u8, size, GRANULE, CudaStreamView::DEFAULT);
        }
    }
}
