//! Over-allocates and aligns large allocations (RMM's `aligned_resource_adaptor`).

use crate::adaptor::zero_byte_allocation;
use crate::error::{Error, Result};
use crate::resource::upstream_check::refuse_null;
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
/// The block never leaves what the upstream gave: an upstream that breaks its contract with a
/// pointer not 256-aligned, so that the block would not fit, gets that memory back and is asked
/// for `bytes + alignment - 1` bytes, which hold an aligned block wherever they start. A null
/// pointer for the over-allocation is refused as out of memory.
///
/// A request's own alignment is honoured too: the larger of it and `alignment` is used (RMM
/// ignores the request's alignment). Alignments below 256 count as 256, the upstream's minimum.
#[derive(Debug)]
pub struct AlignedResourceAdaptor<U> {
    upstream: U,
    alignment: usize,
    alignment_threshold: usize,
    /// Aligned pointer -> (upstream pointer, whether the upstream was asked for
    /// [`widened_size`](Self::widened_size) rather than [`upstream_size`](Self::upstream_size)),
    /// for the blocks whose pointers differ or whose size is widened. Sizes are not stored: they
    /// follow from the size given to the free, so the upstream still refuses a wrong one.
    moved: Mutex<HashMap<usize, (usize, bool)>>,
}

impl<U: MemoryResource> AlignedResourceAdaptor<U> {
    /// RMM's `default_alignment_threshold`: every allocation is aligned.
    pub const DEFAULT_ALIGNMENT_THRESHOLD: usize = 0;

    /// Wraps `upstream`. `alignment` must be a power of two ([`Error::InvalidArgument`] otherwise,
    /// RMM's `logic_error`).
    pub fn new(upstream: U, alignment: usize, alignment_threshold: usize) -> Result<Self> {
        if !alignment.is_power_of_two() {
            // RMM's text (its logic_error's what()).
            return Err(Error::InvalidArgument("Allocation alignment is not a power of 2.".into()));
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

    /// The upstream block `(start, size)` that holds `ptr`, a block of `bytes` handed out for a
    /// request of 256-byte alignment, as [`deallocate`](MemoryResource::deallocate) finds it.
    fn upstream_block(&self, ptr: *mut u8, bytes: usize) -> Result<(usize, usize)> {
        let Some(alignment) = self.over_alignment(bytes, DEFAULT_ALIGNMENT)? else {
            return Ok((ptr as usize, bytes));
        };
        let entry = self.moved.lock().get(&(ptr as usize)).copied();
        let (raw, widened) = entry.unwrap_or((ptr as usize, false));
        Ok((raw, Self::held_size(bytes, alignment, widened)))
    }

    /// The size of the upstream block that holds an aligned block of `bytes` (widened or not, as
    /// it was taken); a size too large to compute was never allocated, and `bytes` stands in, for
    /// the upstream to refuse.
    fn held_size(bytes: usize, alignment: usize, widened: bool) -> usize {
        let size = if widened { Self::widened_size(bytes, alignment) } else { Self::upstream_size(bytes, alignment) };
        size.unwrap_or(bytes)
    }

    /// What the upstream is asked for so that an aligned block of `bytes` fits.
    fn upstream_size(bytes: usize, alignment: usize) -> Option<usize> {
        align_up(bytes, alignment)?.checked_add(alignment - DEFAULT_ALIGNMENT)
    }

    /// What the upstream is asked for when its pointer was not 256-aligned: an aligned block of
    /// `bytes` fits wherever these start.
    fn widened_size(bytes: usize, alignment: usize) -> Option<usize> {
        bytes.checked_add(alignment - 1)
    }

    /// `size` bytes from the upstream, 256-aligned as asked; a null pointer is refused.
    fn take(&self, size: usize, stream: CudaStreamView) -> Result<usize> {
        Ok(refuse_null(self.upstream.allocate(size, DEFAULT_ALIGNMENT, stream)?, size)? as usize)
    }

    /// The first address aligned to `alignment` in `raw..raw + size`, if a block of `bytes` from
    /// there ends within that range.
    fn aligned_within(raw: usize, size: usize, bytes: usize, alignment: usize) -> Option<usize> {
        let aligned = align_up(raw, alignment)?;
        (aligned - raw).checked_add(bytes).filter(|&end| end <= size).map(|_| aligned)
    }

    /// The upstream's `raw` (of `size` bytes) was not 256-aligned and holds no aligned block of
    /// `bytes`: gives it back and takes [`widened_size`](Self::widened_size) instead. Returns
    /// `(raw, aligned)` of the new memory, to be remembered whatever `raw` is.
    #[cold]
    #[inline(never)]
    fn take_again(
        &self,
        raw: usize,
        size: usize,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView,
    ) -> Result<(usize, usize)> {
        self.upstream.deallocate(raw as *mut u8, size, DEFAULT_ALIGNMENT, stream)?;
        let size = Self::widened_size(bytes, alignment)
            .ok_or_else(|| Error::out_of_memory(bytes, "size overflows the address space"))?;
        let raw = self.take(size, stream)?;
        match Self::aligned_within(raw, size, bytes, alignment) {
            Some(aligned) => Ok((raw, aligned)),
            // Only where `raw + size` would pass the end of the address space.
            None => {
                let _ = self.upstream.deallocate(raw as *mut u8, size, DEFAULT_ALIGNMENT, stream);
                Err(Error::BadUpstream(format!("the upstream resource returned {raw:#x} for {size} bytes")))
            }
        }
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
        let raw = self.take(size, stream)?;
        // With a 256-aligned `raw` the aligned block always fits: aligned - raw <= alignment - 256
        // and align_up(bytes) <= size - that. Only an upstream breaking its contract misses.
        let (raw, aligned, widened) = match Self::aligned_within(raw, size, bytes, alignment) {
            Some(aligned) if aligned == raw => return Ok(aligned as *mut u8),
            Some(aligned) => (raw, aligned, false),
            None => {
                let (raw, aligned) = self.take_again(raw, size, bytes, alignment, stream)?;
                (raw, aligned, true)
            }
        };
        self.moved.lock().insert(aligned, (raw, widened));
        Ok(aligned as *mut u8)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        let Some(alignment) = self.over_alignment(bytes, alignment)? else {
            return self.upstream.deallocate(ptr, bytes, alignment, stream);
        };
        let entry = self.moved.lock().remove(&(ptr as usize));
        let (raw, widened) = entry.unwrap_or((ptr as usize, false));
        let size = Self::held_size(bytes, alignment, widened);
        self.upstream.deallocate(raw as *mut u8, size, DEFAULT_ALIGNMENT, stream).inspect_err(|_| {
            // A refused free leaves everything as it was.
            if let Some(entry) = entry {
                self.moved.lock().insert(ptr as usize, entry);
            }
        })
    }

    adaptor_identity_and_access!(upstream, claims by hand);

    // A claimed block is the upstream block that holds it (claimants ask for 256-byte alignment).
    fn claim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        let (raw, size) = self.upstream_block(ptr, bytes)?;
        self.upstream.claim(raw as *mut u8, size)
    }

    fn unclaim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        let (raw, size) = self.upstream_block(ptr, bytes)?;
        self.upstream.unclaim(raw as *mut u8, size)
    }
}
