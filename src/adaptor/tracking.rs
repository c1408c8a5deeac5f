//! Remembers every outstanding allocation, optionally with the stack that made it, to find leaks
//! (RMM's `tracking_resource_adaptor`).

use crate::adaptor::zero_byte_allocation;
use crate::error::{Misuse, Result};
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use parking_lot::Mutex;
use std::backtrace::Backtrace;
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
struct Entry {
    bytes: usize,
    alignment: usize,
    stack: Option<Arc<Backtrace>>,
}

/// The map and the byte sum change together under one lock, so readers never see them disagree.
#[derive(Debug, Default)]
struct State {
    live: HashMap<usize, Entry>,
    bytes: usize,
}

/// Tracks every allocation made through it until it is freed.
///
/// Unlike RMM's adaptor, which logs a bad free and forwards it anyway, this one refuses it: a free
/// of a pointer it did not hand out is [`Misuse::UnknownPointer`], a free with a different size is
/// [`Misuse::WrongSize`]; in both cases nothing changes and the upstream is not called.
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
        if bytes == 0 {
            return zero_byte_allocation(alignment);
        }
        let ptr = self.upstream.allocate(bytes, alignment, stream)?;
        // Captured outside the lock: walking the stack is far slower than the insert (symbols are
        // resolved only when a report prints it).
        let stack = self.capture_stacks.then(|| Arc::new(Backtrace::force_capture()));
        let mut state = self.state.lock();
        state.live.insert(ptr as usize, Entry { bytes, alignment, stack });
        state.bytes = state.bytes.saturating_add(bytes);
        Ok(ptr)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        let addr = ptr as usize;
        // Take the entry out before forwarding, so a second free of the same pointer racing with
        // this one is refused as unknown instead of reaching the upstream twice. A refused free
        // puts it back untouched.
        let entry = {
            let mut state = self.state.lock();
            let entry = match state.live.remove(&addr) {
                Some(e) => e,
                None => return Err(Misuse::UnknownPointer { ptr: addr }.into()),
            };
            if entry.bytes != bytes {
                let allocated = entry.bytes;
                state.live.insert(addr, entry);
                return Err(Misuse::WrongSize { ptr: addr, allocated, given: bytes }.into());
            }
            state.bytes = state.bytes.saturating_sub(bytes);
            entry
        };
        if let Err(e) = self.upstream.deallocate(ptr, bytes, alignment, stream) {
            // The upstream kept the memory, so the allocation is still outstanding.
            let mut state = self.state.lock();
            state.bytes = state.bytes.saturating_add(entry.bytes);
            state.live.insert(addr, entry);
            return Err(e);
        }
        Ok(())
    }

    adaptor_identity_and_access!(upstream);
}
