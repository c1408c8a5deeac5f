//! Remembers every outstanding allocation, optionally with the stack that made it, to find leaks
//! (RMM's `tracking_resource_adaptor`).

use crate::adaptor::never_allocated;
use crate::error::{Error, Result};
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use parking_lot::Mutex;
use std::backtrace::Backtrace;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;

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

#[derive(Debug)]
struct Record {
    bytes: usize,
    alignment: usize,
    stack: Option<Arc<Backtrace>>,
}

/// The map and the byte sum change together under one lock, so readers never see them disagree.
#[derive(Debug, Default)]
struct State {
    live: HashMap<usize, Record>,
    bytes: usize,
}

/// Tracks every allocation made through it until it is freed.
///
/// A bad free is handled as RMM handles it: a free of a pointer it did not hand out is logged at
/// error level on the default logger and forwarded to the upstream with the size given (the
/// outstanding byte count drops by that size, stopping at zero); a free with a size different
/// from the allocation's is logged and forwarded with the allocation's size, ending its tracking.
/// 0-byte allocations go to the upstream and are not tracked; their frees are forwarded. A free
/// the upstream refuses leaves the adaptor as it was and returns the upstream's error.
#[derive(Debug)]
pub struct TrackingResourceAdaptor<U> {
    upstream: U,
    capture_stacks: bool,
    state: Mutex<State>,
}

impl<U: MemoryResource> TrackingResourceAdaptor<U> {
    /// Wraps `upstream`. With `capture_stacks`, every allocation records a backtrace (expensive:
    /// meant for hunting leaks, not for production).
    pub fn new(upstream: U, capture_stacks: bool) -> Self {
        TrackingResourceAdaptor { upstream, capture_stacks, state: Mutex::new(State::default()) }
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }

    /// Whether allocations record a backtrace.
    pub fn captures_stacks(&self) -> bool {
        self.capture_stacks
    }

    /// A snapshot of the outstanding allocations, sorted by address.
    pub fn outstanding_allocations(&self) -> Vec<AllocationRecord> {
        let state = self.state.lock();
        let mut out: Vec<AllocationRecord> = state
            .live
            .iter()
            .map(|(&ptr, e)| AllocationRecord { ptr, bytes: e.bytes, alignment: e.alignment, stack: e.stack.clone() })
            .collect();
        drop(state);
        out.sort_unstable_by_key(|r| r.ptr);
        out
    }

    /// Bytes outstanding, counted as requested.
    pub fn allocated_bytes(&self) -> usize {
        self.state.lock().bytes
    }

    /// Number of outstanding allocations.
    pub fn allocation_count(&self) -> usize {
        self.state.lock().live.len()
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
        let mut guard = self.state.lock();
        let state = &mut *guard;
        match state.live.entry(ptr as usize) {
            Entry::Occupied(_) => {
                // The upstream handed out an address that is still live: it is broken, and freeing
                // the block would free the other allocation's memory, so it is left alone.
                Err(Error::InvalidArgument(format!("pointer is already tracked: {ptr:p} from the upstream")))
            }
            Entry::Vacant(v) => {
                v.insert(Record { bytes, alignment, stack });
                state.bytes = state.bytes.saturating_add(bytes);
                Ok(ptr)
            }
        }
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
        let (entry, size, uncounted) = {
            let mut state = self.state.lock();
            match state.live.remove(&addr) {
                Some(e) => {
                    // Frees of untracked pointers may have taken the sum below this entry's size.
                    let uncounted = e.bytes.min(state.bytes);
                    state.bytes -= uncounted;
                    let size = e.bytes;
                    (Some(e), size, uncounted)
                }
                None => {
                    // Another adaptor's allocation (a tracking adaptor over another one sees the
                    // inner one's direct allocations freed through it): RMM logs it and forwards
                    // it with the size given.
                    let count = state.live.len();
                    let uncounted = bytes.min(state.bytes);
                    state.bytes -= uncounted;
                    drop(state);
                    crate::log_error!(
                        "Deallocating a pointer that was not tracked. Ptr: {ptr:p} [{bytes}B], Current Num. Allocations: {count}"
                    );
                    (None, bytes, uncounted)
                }
            }
        };
        if size != bytes {
            // RMM logs the mismatch and frees the block with the size it was allocated with.
            crate::log_error!("Alloc bytes ({size}) and Dealloc bytes ({bytes}) do not match");
        }
        if let Err(e) = self.upstream.deallocate(ptr, size, alignment, stream) {
            // The upstream kept the memory, so everything is as it was before this call.
            let mut state = self.state.lock();
            state.bytes += uncounted;
            if let Some(entry) = entry {
                state.live.insert(addr, entry);
            }
            return Err(e);
        }
        Ok(())
    }

    /// The upstream's non-waiting allocation, tracked as [`allocate`](Self::allocate) tracks it.
    /// `None` where the adaptor captures stacks (a capture takes a process-wide lock) or its
    /// state's lock is held; the lock is held across the upstream's call, so a refusal changes
    /// nothing.
    #[inline]
    fn try_allocate_immediately(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Option<*mut u8> {
        if self.capture_stacks {
            return None;
        }
        if bytes == 0 {
            // Not tracked, as in `allocate`.
            return self.upstream.try_allocate_immediately(bytes, alignment, stream);
        }
        let mut guard = self.state.try_lock()?;
        let ptr = self.upstream.try_allocate_immediately(bytes, alignment, stream)?;
        let state = &mut *guard;
        match state.live.entry(ptr as usize) {
            // A broken upstream handed out a live address: left alone, as `allocate` leaves it.
            Entry::Occupied(_) => None,
            Entry::Vacant(v) => {
                v.insert(Record { bytes, alignment, stack: None });
                state.bytes = state.bytes.saturating_add(bytes);
                Some(ptr)
            }
        }
    }

    /// The upstream's non-waiting free of a tracked allocation freed with its own size; false
    /// (nothing changed) for anything else, which [`deallocate`](Self::deallocate) logs and
    /// handles, or where the state's lock is held or the upstream declines.
    #[inline]
    fn try_deallocate_immediately(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> bool {
        if never_allocated(ptr, bytes) {
            return false;
        }
        if bytes == 0 {
            return self.upstream.try_deallocate_immediately(ptr, bytes, alignment, stream);
        }
        let Some(mut state) = self.state.try_lock() else { return false };
        if state.live.get(&(ptr as usize)).is_none_or(|e| e.bytes != bytes) {
            return false;
        }
        if !self.upstream.try_deallocate_immediately(ptr, bytes, alignment, stream) {
            return false;
        }
        state.live.remove(&(ptr as usize));
        state.bytes = state.bytes.saturating_sub(bytes);
        true
    }

    adaptor_identity_and_access!(upstream);
}
