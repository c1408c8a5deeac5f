//! Caps the bytes outstanding through it (RMM's `limiting_resource_adaptor`).

use crate::adaptor::never_allocated;
use crate::error::{Error, Result};
use crate::resource::{align_up, effective_alignment, MemoryResource};
use crate::stream::CudaStreamView;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Refuses allocations that would take the bytes outstanding through it above a limit.
///
/// Like RMM, each allocation is accounted as its size rounded up to its effective alignment (at
/// least 256 bytes), which approximates what the upstream really uses; the limit is on this
/// adaptor's traffic, not on the device.
///
/// The reservation is a compare-and-swap that only succeeds when the request fits, rather than
/// RMM's add-then-roll-back: with add-then-roll-back a request that is about to be refused briefly
/// inflates the count, and a concurrent request that fits can be refused spuriously.
#[derive(Debug)]
pub struct LimitingResourceAdaptor<U> {
    upstream: U,
    allocation_limit: usize,
    allocated: AtomicUsize,
}

impl<U: MemoryResource> LimitingResourceAdaptor<U> {
    /// Wraps `upstream`, allowing at most `allocation_limit` bytes (as accounted) outstanding.
    pub fn new(upstream: U, allocation_limit: usize) -> Self {
        LimitingResourceAdaptor { upstream, allocation_limit, allocated: AtomicUsize::new(0) }
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }

    /// Bytes outstanding, each allocation rounded up to its effective alignment.
    pub fn allocated_bytes(&self) -> usize {
        self.allocated.load(Ordering::Acquire)
    }

    /// The limit given at construction.
    pub fn allocation_limit(&self) -> usize {
        self.allocation_limit
    }

    fn release(&self, size: usize) {
        // The closure never refuses, so the update cannot fail; saturating keeps a caller that
        // frees more than it allocated (through an upstream that does not check) from wrapping.
        let _ = self.allocated.fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| Some(cur.saturating_sub(size)));
    }
}

// SAFETY: blocks come from the upstream unchanged and go back to it; the accessibility answers
// are the upstream's.
unsafe impl<U: MemoryResource> MemoryResource for LimitingResourceAdaptor<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        // A 0-byte request reserves nothing and goes to the upstream, as in RMM.
        let limit = self.allocation_limit;
        let size = align_up(bytes, effective_alignment(alignment)?)
            .ok_or_else(|| Error::out_of_memory(bytes, "size overflows the address space"))?;
        self.allocated
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| cur.checked_add(size).filter(|&n| n <= limit))
            .map_err(|cur| {
                Error::out_of_memory(bytes, format!("limiting adaptor: limit {limit} bytes, {cur} already allocated"))
            })?;
        // If the upstream refuses, the reservation is given back and its error passed on.
        self.upstream.allocate(bytes, alignment, stream).inspect_err(|_| self.release(size))
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if never_allocated(ptr, bytes) {
            return Ok(());
        }
        // Forwarded even when null (a 0-byte allocation may have been), as in RMM.
        // Checked before forwarding: without a valid alignment the accounted size is unknown.
        // A size too large to round was never allocated; the upstream refuses it below.
        let size = align_up(bytes, effective_alignment(alignment)?).unwrap_or(usize::MAX);
        self.upstream.deallocate(ptr, bytes, alignment, stream)?;
        self.release(size);
        Ok(())
    }

    adaptor_identity_and_access!(upstream);
}
