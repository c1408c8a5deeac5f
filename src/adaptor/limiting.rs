//! Caps the bytes outstanding through it (RMM's `limiting_resource_adaptor`).

use crate::adaptor::never_allocated;
use crate::error::{Error, Result};
use crate::resource::{align_up, effective_alignment, MemoryResource};
use crate::stream::CudaStreamView;
use rmm_algorithms::GRANULE;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Refuses allocations that would take the bytes outstanding through it above a limit.
///
/// Like RMM, each allocation is accounted as its size rounded up to the adaptor's allocation
/// alignment (256 bytes unless [`with_alignment`](Self::with_alignment) says otherwise; the
/// alignment of each request does not change it), which approximates what the upstream really
/// uses; the limit is on this adaptor's traffic, not on the device.
///
/// The reservation is a compare-and-swap that only succeeds when the request fits, rather than
/// RMM's add-then-roll-back: with add-then-roll-back a request that is about to be refused briefly
/// inflates the count, and a concurrent request that fits can be refused spuriously.
#[derive(Debug)]
pub struct LimitingResourceAdaptor<U> {
    upstream: U,
    allocation_limit: usize,
    allocation_alignment: usize,
    allocated: AtomicUsize,
}

impl<U: MemoryResource> LimitingResourceAdaptor<U> {
    /// Wraps `upstream`, allowing at most `allocation_limit` bytes (as accounted) outstanding;
    /// each allocation counts as its size rounded up to 256 bytes.
    pub fn new(upstream: U, allocation_limit: usize) -> Self {
        LimitingResourceAdaptor {
            upstream,
            allocation_limit,
            allocation_alignment: GRANULE,
            allocated: AtomicUsize::new(0),
        }
    }

    /// Like [`new`](Self::new), but each allocation counts as its size rounded up to
    /// `allocation_alignment` (RMM's third constructor argument): 1 counts sizes exactly.
    /// Errors with [`Error::InvalidArgument`] unless it is a power of two.
    pub fn with_alignment(upstream: U, allocation_limit: usize, allocation_alignment: usize) -> Result<Self> {
        if !allocation_alignment.is_power_of_two() {
            return Err(Error::InvalidArgument(format!(
                "limiting adaptor: allocation alignment {allocation_alignment} is not a power of two"
            )));
        }
        Ok(LimitingResourceAdaptor { upstream, allocation_limit, allocation_alignment, allocated: AtomicUsize::new(0) })
    }

    /// The alignment each allocation's size is rounded up to when it is counted.
    pub fn allocation_alignment(&self) -> usize {
        self.allocation_alignment
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }

    /// Bytes outstanding, each allocation rounded up to the allocation alignment.
    pub fn allocated_bytes(&self) -> usize {
        self.allocated.load(Ordering::Acquire)
    }

    /// The limit given at construction.
    pub fn allocation_limit(&self) -> usize {
        self.allocation_limit
    }

    /// Takes `size` accounted bytes from what the limit leaves, or refuses (taking nothing) where
    /// they do not fit, with the bytes outstanding.
    #[inline]
    fn reserve(&self, size: usize) -> std::result::Result<usize, usize> {
        let limit = self.allocation_limit;
        self.allocated
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| cur.checked_add(size).filter(|&n| n <= limit))
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
        // A bad alignment is refused here, before anything is counted.
        effective_alignment(alignment)?;
        let size = align_up(bytes, self.allocation_alignment)
            .ok_or_else(|| Error::out_of_memory(bytes, "size overflows the address space"))?;
        self.reserve(size).map_err(|cur| {
            // RMM's words, its closing newline included.
            let limit = self.allocation_limit;
            Error::out_of_memory_verbatim(
                bytes,
                None,
                format!("Exceeded memory limit {limit}; Allocated bytes {cur}; Requested bytes {bytes}\n"),
            )
        })?;
        // If the upstream refuses, the reservation is given back and its error passed on.
        self.upstream.allocate(bytes, alignment, stream).inspect_err(|_| self.release(size))
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if never_allocated(ptr, bytes) {
            return Ok(());
        }
        // Forwarded even when null (a 0-byte allocation may have been), as in RMM.
        // A bad alignment is refused before forwarding, as in `allocate`.
        // A size too large to round was never allocated; the upstream refuses it below.
        effective_alignment(alignment)?;
        let size = align_up(bytes, self.allocation_alignment).unwrap_or(usize::MAX);
        self.upstream.deallocate(ptr, bytes, alignment, stream)?;
        self.release(size);
        Ok(())
    }

    /// The upstream's non-waiting allocation, reserved as [`allocate`](Self::allocate) reserves:
    /// the bytes are taken before the upstream is asked (so concurrent callers never pass the
    /// limit) and given back when it declines. `None` where the request does not fit.
    #[inline]
    fn try_allocate_immediately(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Option<*mut u8> {
        effective_alignment(alignment).ok()?;
        let size = align_up(bytes, self.allocation_alignment)?;
        self.reserve(size).ok()?;
        let ptr = self.upstream.try_allocate_immediately(bytes, alignment, stream);
        if ptr.is_none() {
            self.release(size);
        }
        ptr
    }

    /// The upstream's non-waiting free; the bytes are given back only when the upstream took the
    /// block. False (nothing changed) otherwise.
    #[inline]
    fn try_deallocate_immediately(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> bool {
        if never_allocated(ptr, bytes) || effective_alignment(alignment).is_err() {
            return false;
        }
        let Some(size) = align_up(bytes, self.allocation_alignment) else { return false };
        if !self.upstream.try_deallocate_immediately(ptr, bytes, alignment, stream) {
            return false;
        }
        self.release(size);
        true
    }

    adaptor_identity_and_access!(upstream);
}
