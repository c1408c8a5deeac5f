//! Page-locked host memory: `cuMemHostAlloc` / `cuMemFreeHost` (RMM's
//! `pinned_host_memory_resource`).

use crate::driver;
use crate::error::Result;
use crate::resource::cuda::cuda_alignment;
use crate::resource::{same_type, MemoryResource};
use crate::stream::CudaStreamView;

/// Pinned host memory from `cuMemHostAlloc`, made portable so that every context, not only the one
/// current at allocation, treats it as pinned. With unified addressing kernels can read it through
/// the same pointer, and copies from and to it can run asynchronously.
///
/// Stateless: any instance may free memory allocated by any other.
#[derive(Debug, Clone, Copy, Default)]
pub struct PinnedHostMemoryResource;

impl PinnedHostMemoryResource {
    /// A new handle; creating it makes no CUDA call.
    pub const fn new() -> Self {
        PinnedHostMemoryResource
    }
}

impl MemoryResource for PinnedHostMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, _stream: CudaStreamView) -> Result<*mut u8> {
        cuda_alignment(alignment)?;
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        driver::mem_host_alloc(bytes)
    }

    fn deallocate(&self, ptr: *mut u8, _bytes: usize, _alignment: usize, _stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        // While the process exits the driver may be gone: the memory goes with the process.
        if crate::process_exit::process_is_exiting() {
            return Ok(());
        }
        driver::mem_free_host(ptr)
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        same_type::<Self>(other)
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::resource::ManagedMemoryResource;

    #[test]
    fn zero_bytes_and_bad_alignment_make_no_cuda_call() {
        let r = PinnedHostMemoryResource::new();
        assert!(r.allocate(0, 256, CudaStreamView::DEFAULT).unwrap().is_null());
        r.deallocate(std::ptr::null_mut(), 0, 256, CudaStreamView::DEFAULT).unwrap();
        assert_eq!(
            r.allocate(8, 4096, CudaStreamView::DEFAULT),
            Err(Error::BadAlignment { alignment: 4096, max: 256 })
        );
    }

    #[test]
    fn missing_driver_is_an_error_not_a_panic() {
        if crate::cuda_available() {
            return;
        }
        let r = PinnedHostMemoryResource::new();
        assert!(matches!(r.allocate(1024, 256, CudaStreamView::DEFAULT), Err(Error::NoDriver(_))));
    }

    #[test]
    fn stateless_equality_and_accessibility() {
        let r = PinnedHostMemoryResource::new();
        assert!(r.is_equal(&PinnedHostMemoryResource::new()));
        assert!(!r.is_equal(&ManagedMemoryResource::new()));
        assert!(r.is_device_accessible() && r.is_host_accessible());
    }
}
