//! Over-allocates and aligns large allocations (RMM's `aligned_resource_adaptor`).

use crate::adaptor::zero_byte_allocation;
use crate::error::{Error, Result};
use crate::resource::{align_up, effective_alignment, MemoryResource, DEFAULT_ALIGNMENT};
use crate::stream::CudaStreamView;
use parking_lot::Mutex;
use std::collections::HashMap;

/// Aligns every allocation of at least `alignment_threshold` bytes to `alignment`, whatever the
/// upstream guarantees, by asking the upstream for `align_up(bytes, alignment) + alignment - 256`
/// bytes and handing out the first aligned address in them; the upstream's own pointer is
/// remembered for the free. Smaller allocations, and every allocation when `alignment` is 256,
/// pass through unchanged.
///
/// A request's own alignment is honoured too: the larger of it and `alignment` is used (RMM
/// ignores the request's alignment). Alignments below 256 count as 256, the upstream's minimum.
#[derive(Debug)]
pub struct AlignedResourceAdaptor<U> {
    upstream: U,
    alignment: usize,
    alignment_threshold: usize,
    /// Aligned pointer -> upstream pointer, for the blocks whose two differ.
    moved: Mutex<HashMap<usize, usize>>,
}

impl<U: MemoryResource> AlignedResourceAdaptor<U> {
    /// RMM's `default_alignment_threshold`: every allocation is aligned.
    pub const DEFAULT_ALIGNMENT_THRESHOLD: usize = 0;

    /// Wraps `upstream`. `alignment` must be a power of two ([`Error::InvalidArgument`] otherwise,
    /// RMM's `logic_error`).
    pub fn new(upstream: U, alignment: usize, alignment_threshold: usize) -> Result<Self> {
        if !alignment.is_power_of_two() {
            return Err(Error::InvalidArgument(format!(
                "aligned_resource_adaptor: alignment {alignment} is not a power of 2"
            )));
        }
        Ok(AlignedResourceAdaptor { upstream, alignment, alignment_threshold, moved: Mutex::new(HashMap::new()) })
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }

    /// The alignment given at construction.
    pub fn alignment(&self) -> usize {
        self.alignment
    }

    /// Allocations of at least this many bytes are aligned.
    pub fn alignment_threshold(&self) -> usize {
        self.alignment_threshold
    }

    /// The alignment a request gets, or `None` when it passes through to the upstream unchanged.
    fn over_alignment(&self, bytes: usize, requested: usize) -> Result<Option<usize>> {
        let alignment = effective_alignment(requested)?.max(self.alignment);
        if alignment == DEFAULT_ALIGNMENT || bytes < self.alignment_threshold {
            return Ok(None);
        }
        Ok(Some(alignment))
    }

    /// What the upstream is asked for so that an aligned block of `bytes` fits.
    fn upstream_size(bytes: usize, alignment: usize) -> Option<usize> {
        align_up(bytes, alignment)?.checked_add(alignment - DEFAULT_ALIGNMENT)
    }
}

// SAFETY: a block is the upstream's, or lies inside one upstream block of `upstream_size` bytes
// (the bound is shown in `allocate`) that goes back whole when it is freed; the accessibility
// answers are the upstream's.
unsafe impl<U: MemoryResource> MemoryResource for AlignedResourceAdaptor<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        if bytes == 0 {
            return zero_byte_allocation(alignment);
        }
        let Some(alignment) = self.over_alignment(bytes, alignment)? else {
            return self.upstream.allocate(bytes, alignment, stream);
        };
        let size = Self::upstream_size(bytes, alignment)
            .ok_or_else(|| Error::out_of_memory(bytes, "size overflows the address space"))?;
        let raw = self.upstream.allocate(size, DEFAULT_ALIGNMENT, stream)? as usize;
        // `raw + size` does not overflow (the upstream handed it out), and the aligned block ends
        // within it: aligned - raw <= alignment - 256 and align_up(bytes) <= size - that.
        let aligned = raw.next_multiple_of(alignment);
        if aligned != raw {
            self.moved.lock().insert(aligned, raw);
        }
        Ok(aligned as *mut u8)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        let Some(alignment) = self.over_alignment(bytes, alignment)? else {
            return self.upstream.deallocate(ptr, bytes, alignment, stream);
        };
        // A size this large was never allocated: the upstream refuses it as it is.
        let size = Self::upstream_size(bytes, alignment).unwrap_or(bytes);
        let entry = self.moved.lock().remove(&(ptr as usize));
        let raw = entry.unwrap_or(ptr as usize);
        self.upstream.deallocate(raw as *mut u8, size, DEFAULT_ALIGNMENT, stream).inspect_err(|_| {
            // A refused free leaves everything as it was.
            if let Some(raw) = entry {
                self.moved.lock().insert(ptr as usize, raw);
            }
        })
    }

    adaptor_identity_and_access!(upstream);
}
