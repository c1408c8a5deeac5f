//! Prefetches managed allocations to the current device (RMM's `prefetch_resource_adaptor`).

use crate::adaptor::zero_byte_allocation;
use crate::error::Result;
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;

/// After each allocation, migrates the block to the current device in stream order on the
/// allocation's stream, so that kernels on that stream find it resident.
///
/// Only managed memory can be prefetched. RMM asks the driver to prefetch every block and ignores
/// the error it gets for other memory; this adaptor instead asks the driver what the block is
/// (a query that cannot fail) and prefetches managed blocks only, so that no driver call fails on
/// purpose. An upstream that is not device accessible is never asked about.
#[derive(Debug)]
pub struct PrefetchResourceAdaptor<U> {
    upstream: U,
}

impl<U: MemoryResource> PrefetchResourceAdaptor<U> {
    /// Wraps `upstream`.
    pub fn new(upstream: U) -> Self {
        PrefetchResourceAdaptor { upstream }
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }
}

// SAFETY: blocks come from the upstream unchanged and go back to it (a prefetch only moves pages
// of a block just handed out); the accessibility answers are the upstream's.
unsafe impl<U: MemoryResource> MemoryResource for PrefetchResourceAdaptor<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        if bytes == 0 {
            return zero_byte_allocation(alignment);
        }
        let ptr = self.upstream.allocate(bytes, alignment, stream)?;
        if self.upstream.is_device_accessible() {
            if let Err(e) = crate::prefetch::prefetch_to_current_device(ptr, bytes, stream) {
                // The block is given back so that a failed allocation leaks nothing.
                let _ = self.upstream.deallocate(ptr, bytes, alignment, stream);
                return Err(e);
            }
        }
        Ok(ptr)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        self.upstream.deallocate(ptr, bytes, alignment, stream)
    }

    adaptor_identity_and_access!(upstream);
}
