//! A resource that sends each request to the smallest bin that holds it, as RMM's
//! `binning_memory_resource`.

use crate::error::{Error, Result};
use crate::resource::fixed_size::{FixedSizeMemoryResource, DEFAULT_BLOCKS_TO_PREALLOCATE};
use crate::resource::{align_up, effective_alignment, MemoryResource, SharedResource, DEFAULT_ALIGNMENT};
use crate::stream::CudaStreamView;
use rmm_algorithms::fixed_size::GrowOnly;
use std::sync::Arc;

/// Bins of allocation sizes, each served by its own resource: a request of `bytes` goes to the bin
/// of the smallest size of at least `bytes`, a larger one to the upstream. A free goes where its
/// size sends it, so a block must be freed with the size it was allocated with, and bins should be
/// added before the sizes they cover are allocated (as in RMM).
///
/// A bin added without a resource is a [`FixedSizeMemoryResource`] of its size over the upstream
/// ([`DEFAULT_BLOCKS_TO_PREALLOCATE`] blocks at a time, as RMM). Requests for an alignment above
/// 256 bytes, which fixed-size blocks do not promise, go to the upstream whatever their size (RMM
/// ignores the alignment instead).
pub struct BinningMemoryResource<U: MemoryResource> {
    /// The bins by increasing size. Bins are only ever added, so a lookup reads the newest
    /// snapshot with one atomic load and writes nothing shared.
    bins: GrowOnly<Bin<U>>,
    upstream: Arc<U>,
}

/// One bin: its size and resource; a fixed-size bin made here also typed, so that requests reach
/// it without the trait object.
struct Bin<U: MemoryResource> {
    size: usize,
    resource: SharedResource,
    fixed: Option<Arc<FixedSizeMemoryResource<Arc<U>>>>,
}

impl<U: MemoryResource> Clone for Bin<U> {
    fn clone(&self) -> Self {
        Bin { size: self.size, resource: self.resource.clone(), fixed: self.fixed.clone() }
    }
}

impl<U: MemoryResource> BinningMemoryResource<U> {
    /// No bins yet: every request goes to `upstream` until bins are added.
    pub fn new(upstream: U) -> Self {
        BinningMemoryResource { bins: GrowOnly::new(), upstream: Arc::new(upstream) }
    }

    /// Fixed-size bins of 2^i bytes for every i from `min_size_exponent` to `max_size_exponent`
    /// (none when min > max); exponents below 8 give the 256-byte bin. Exponents must lie in
    /// 0..=62.
    pub fn with_bins(upstream: U, min_size_exponent: i8, max_size_exponent: i8) -> Result<Self> {
        for e in [min_size_exponent, max_size_exponent] {
            if !(0..=62).contains(&e) {
                return Err(Error::InvalidArgument(format!("bin size exponent {e} is outside 0..=62")));
            }
        }
        let binning = Self::new(upstream);
        for e in min_size_exponent..=max_size_exponent {
            binning.add_bin(1usize << e, None)?;
        }
        Ok(binning)
    }

    /// Adds a bin for requests of up to `allocation_size` bytes (rounded up to 256) and above the
    /// next smaller bin, served by `bin_resource`, or by a new fixed-size resource over the
    /// upstream when `None`. Nothing changes when a bin of that size exists already.
    pub fn add_bin(&self, allocation_size: usize, bin_resource: Option<SharedResource>) -> Result<()> {
        let size = align_up(allocation_size, DEFAULT_ALIGNMENT)
            .filter(|&s| s > 0)
            .ok_or_else(|| Error::InvalidArgument(format!("a bin of {allocation_size} bytes")))?;
        if self.bins.read().iter().any(|b| b.size == size) {
            return Ok(());
        }
        let bin = match bin_resource {
            Some(resource) => Bin { size, resource, fixed: None },
            None => {
                let fixed =
                    Arc::new(FixedSizeMemoryResource::new(self.upstream.clone(), size, DEFAULT_BLOCKS_TO_PREALLOCATE)?);
                Bin { size, resource: fixed.clone() as SharedResource, fixed: Some(fixed) }
            }
        };
        // Another thread may have added it meanwhile; the first one stays.
        self.bins.update(|bins| match bins.binary_search_by_key(&size, |b| b.size) {
            Ok(_) => false,
            Err(at) => {
                bins.insert(at, bin);
                true
            }
        });
        Ok(())
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }

    /// The sizes of the bins, increasing.
    pub fn bin_sizes(&self) -> Vec<usize> {
        self.bins.read().iter().map(|b| b.size).collect()
    }

    /// The bin that serves `bytes` at `alignment` (already checked); `None`: the upstream does.
    #[inline(always)]
    fn bin_of(&self, bytes: usize, alignment: usize) -> Option<&Bin<U>> {
        // A scan from the smallest bin: bins are few, and small sizes (the most frequent) stop at
        // the first compare, where a binary search always takes all of its steps.
        self.bins.read().iter().find(|b| b.size >= bytes).filter(|_| alignment <= DEFAULT_ALIGNMENT)
    }

    /// Runs `f` on the resource that serves `bytes` at `alignment` (already checked).
    #[inline]
    fn with_resource<T>(&self, bytes: usize, alignment: usize, f: impl FnOnce(&dyn MemoryResource) -> T) -> T {
        match self.bin_of(bytes, alignment) {
            Some(b) => f(&*b.resource),
            None => f(&*self.upstream),
        }
    }
}

// SAFETY: each request goes whole to one resource chosen by its size, the same one on free:
// a fixed-size resource over `upstream` or `upstream` itself, all keeping the contract with
// `upstream`'s kind of memory, whose accessibility answers these are.
unsafe impl<U: MemoryResource> MemoryResource for BinningMemoryResource<U> {
    #[inline]
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        let align = effective_alignment(alignment)?;
        // A 0-byte request goes to the smallest bin (or the upstream without bins), as in RMM.
        match self.bin_of(bytes, align) {
            Some(Bin { fixed: Some(f), .. }) => f.allocate(bytes, alignment, stream),
            Some(b) => b.resource.allocate(bytes, alignment, stream),
            None => self.upstream.allocate(bytes, alignment, stream),
        }
    }

    #[inline]
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        // Forwarded whatever the pointer, to the resource its size chose, as in RMM.
        let align = effective_alignment(alignment)?;
        match self.bin_of(bytes, align) {
            Some(Bin { fixed: Some(f), .. }) => f.deallocate(ptr, bytes, alignment, stream),
            Some(b) => b.resource.deallocate(ptr, bytes, alignment, stream),
            None => self.upstream.deallocate(ptr, bytes, alignment, stream),
        }
    }

    crate::resource::accessibility!(upstream);

    // A claim goes where a free of the block goes (claimants ask for 256-byte alignment).
    fn claim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        self.with_resource(bytes, DEFAULT_ALIGNMENT, |r| r.claim(ptr, bytes))
    }

    fn unclaim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        self.with_resource(bytes, DEFAULT_ALIGNMENT, |r| r.unclaim(ptr, bytes))
    }
}

impl<U: MemoryResource> std::fmt::Debug for BinningMemoryResource<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BinningMemoryResource").field("bin_sizes", &self.bin_sizes()).finish_non_exhaustive()
    }
}
