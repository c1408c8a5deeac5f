//! Remembers every outstanding allocation, optionally with the stack that made it, to find leaks
//! (RMM's `tracking_resource_adaptor`).

use crate::adaptor::never_allocated;
use crate::error::{Error, Result};
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use live_map::{LiveMap, Record};
use std::backtrace::Backtrace;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;

mod address_table;
mod live_map;

/// One outstanding allocation as [`TrackingResourceAdaptor::outstanding_allocations`] reports it.
#[derive(Debug, Clone)]
pub struct AllocationRecord {
    /// The address handed out.
    pub ptr: usize,
    /// The size requested.
    pub bytes: usize,
    /// The alignment requested.
    pub alignment: usize,
    /// Where it was allocated, when the adaptor captures stacks. Shared so snapshots stay cheap.
    pub stack: Option<Arc<Backtrace>>,
}

/// Tracks every allocation made through it until it is freed.
///
/// A bad free is handled as RMM handles it: a free of a pointer it did not hand out is logged at
/// error level on the default logger and forwarded to the upstream with the size given (the
/// outstanding byte count drops by that size, stopping at zero); a free with a size different
/// from the allocation's is logged and forwarded with the allocation's size, ending its tracking.
/// 0-byte allocations go to the upstream and are not tracked; their frees are forwarded. A free
/// the upstream refuses leaves the adaptor as it was and returns the upstream's error. An address
/// the upstream hands out while it is still tracked is refused with [`Error::InvalidArgument`]
/// and left alone.
///
/// The map of live blocks is split into shards by the 1 MiB region a block starts in, each with
/// its own lock and byte count, summed when read: threads that allocate in regions of their own
/// (a pool's streams each get ranges of their own) do not share a lock or a cache line, a free
/// from any thread and the check for an address handed out twice are one lookup in one shard,
/// and every query is exact whenever no allocation or free is in flight (`tracking/live_map.rs`
/// says why this and not per-thread tables).
#[derive(Debug)]
pub struct TrackingResourceAdaptor<U> {
    upstream: U,
    capture_stacks: bool,
    live: LiveMap,
}

impl<U: MemoryResource> TrackingResourceAdaptor<U> {
    /// Wraps `upstream`. With `capture_stacks`, every allocation records a backtrace (expensive:
    /// meant for hunting leaks, not for production).
    pub fn new(upstream: U, capture_stacks: bool) -> Self {
        TrackingResourceAdaptor { upstream, capture_stacks, live: LiveMap::new() }
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }

    /// Whether allocations record a backtrace.
    pub fn captures_stacks(&self) -> bool {
        self.capture_stacks
    }

    /// A snapshot of the outstanding allocations, sorted by address. Read shard by shard: while
    /// other threads allocate and free, it may hold a block freed during the read, or miss one
    /// allocated during it.
    pub fn outstanding_allocations(&self) -> Vec<AllocationRecord> {
        let mut out = Vec::new();
        self.live.for_each(|ptr, e, stack| {
            out.push(AllocationRecord { ptr, bytes: e.bytes, alignment: e.alignment, stack: stack.cloned() })
        });
        out.sort_unstable_by_key(|r| r.ptr);
        out
    }

    /// Bytes outstanding, counted as requested.
    pub fn allocated_bytes(&self) -> usize {
        self.live.bytes()
    }

    /// Number of outstanding allocations (summed shard by shard, as
    /// [`outstanding_allocations`](Self::outstanding_allocations) reads them).
    pub fn allocation_count(&self) -> usize {
        self.live.count()
    }

    /// A readable report: a summary line, then one line per outstanding allocation (address, size,
    /// alignment), each followed by its indented backtrace when stacks are captured.
    pub fn report(&self) -> String {
        let records = self.outstanding_allocations();
        let total: usize = records.iter().map(|r| r.bytes).sum();
        let mut s = String::new();
        // Writing into a String cannot fail; the results are ignored for that reason.
        let _ = writeln!(s, "{} outstanding allocations, {total} bytes", records.len());
        for r in &records {
            let _ = writeln!(s, "{:#x}: {} B (alignment {})", r.ptr, r.bytes, r.alignment);
            if let Some(bt) = &r.stack {
                let _ = writeln!(s, "  allocated at:");
                for line in bt.to_string().lines() {
                    let _ = writeln!(s, "    {line}");
                }
            }
        }
        s
    }

    /// Writes [`report`](Self::report) to stderr. A failed write is ignored: this is a diagnostic
    /// and must not panic.
    pub fn log_outstanding_allocations(&self) {
        let _ = std::io::stderr().lock().write_all(self.report().as_bytes());
    }
}

// SAFETY: blocks come from the upstream unchanged and go back to it; the accessibility answers
// are the upstream's.
unsafe impl<U: MemoryResource> MemoryResource for TrackingResourceAdaptor<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        let ptr = self.upstream.allocate(bytes, alignment, stream)?;
        // A 0-byte allocation goes to the upstream but is not tracked, as in RMM.
        if bytes == 0 {
            return Ok(ptr);
        }
        // Captured outside the lock: walking the stack is far slower than the insert (symbols are
        // resolved only when a report prints it).
        let stack = self.capture_stacks.then(|| Arc::new(Backtrace::force_capture()));
        if !self.live.insert(ptr as usize, Record { bytes, alignment, stack }) {
            // The upstream handed out an address that is still live: it is broken, and freeing
            // the block would free the other allocation's memory, so it is left alone.
            return Err(Error::InvalidArgument(format!("pointer is already tracked: {ptr:p} from the upstream")));
        }
        Ok(ptr)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if never_allocated(ptr, bytes) {
            return Ok(());
        }
        if bytes == 0 {
            // Never tracked: forwarded as it is, as in RMM.
            return self.upstream.deallocate(ptr, bytes, alignment, stream);
        }
        let addr = ptr as usize;
        // Take the entry out before forwarding, so a second free of the same pointer racing with
        // this one is not forwarded as this allocation's.
        let (entry, size, deficit_change) = match self.live.remove(addr) {
            Some((e, cut)) => {
                let size = e.bytes;
                (Some(e), size, cut as isize)
            }
            None => {
                // Another adaptor's allocation (a tracking adaptor over another one sees the
                // inner one's direct allocations freed through it): RMM logs it and forwards
                // it with the size given.
                let (taken, count) = self.live.take_untracked(bytes);
                crate::log_error!(
                    "Deallocating a pointer that was not tracked. Ptr: {ptr:p} [{bytes}B], Current Num. Allocations: {count}"
                );
                (None, bytes, -(taken as isize))
            }
        };
        if size != bytes {
            // RMM logs the mismatch and frees the block with the size it was allocated with.
            crate::log_error!("Alloc bytes ({size}) and Dealloc bytes ({bytes}) do not match");
        }
        if let Err(e) = self.upstream.deallocate(ptr, size, alignment, stream) {
            // The upstream kept the memory, so everything is as it was before this call.
            self.live.restore(addr, entry, deficit_change);
            return Err(e);
        }
        Ok(())
    }

    /// The upstream's non-waiting allocation, tracked as [`allocate`](Self::allocate) tracks it.
    /// `None` where the adaptor captures stacks (a capture takes a process-wide lock) or the
    /// upstream declines. The block's shard of the map is then locked to record it: that lock is
    /// only ever held for a map operation or the upstream's own non-waiting free, so this does
    /// not wait on anything that waits.
    #[inline]
    fn try_allocate_immediately(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Option<*mut u8> {
        if self.capture_stacks {
            return None;
        }
        if bytes == 0 {
            // Not tracked, as in `allocate`.
            return self.upstream.try_allocate_immediately(bytes, alignment, stream);
        }
        let ptr = self.upstream.try_allocate_immediately(bytes, alignment, stream)?;
        // A broken upstream handed out a live address: left alone, as `allocate` leaves it.
        self.live.insert(ptr as usize, Record { bytes, alignment, stack: None }).then_some(ptr)
    }

    /// The upstream's non-waiting free of a tracked allocation freed with its own size; false
    /// (nothing changed) for anything else, which [`deallocate`](Self::deallocate) logs and
    /// handles, or where the block's shard of the map is locked or the upstream declines.
    #[inline]
    fn try_deallocate_immediately(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> bool {
        if never_allocated(ptr, bytes) {
            return false;
        }
        if bytes == 0 {
            return self.upstream.try_deallocate_immediately(ptr, bytes, alignment, stream);
        }
        let addr = ptr as usize;
        let Some(mut shard) = self.live.try_lock(addr) else { return false };
        if shard.live.get(addr).is_none_or(|e| e.bytes != bytes) {
            return false;
        }
        // The shard stays locked across the upstream's call, so a refusal changes nothing.
        if !self.upstream.try_deallocate_immediately(ptr, bytes, alignment, stream) {
            return false;
        }
        shard.remove(addr);
        drop(shard);
        self.live.settle_deficit();
        true
    }

    adaptor_identity_and_access!(upstream);
}
