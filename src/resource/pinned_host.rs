//! Page-locked host memory: `cuMemHostAlloc` / `cuMemFreeHost` (RMM's
//! `pinned_host_memory_resource`).

use crate::driver;
use crate::error::Result;
use crate::resource::{DriverAllocation, DriverBackedResource};

/// Pinned host memory from `cuMemHostAlloc`, made portable so that every context, not only the one
/// current at allocation, treats it as pinned. With unified addressing kernels can read it through
/// the same pointer, and copies from and to it can run asynchronously.
///
/// Stateless: any instance may free memory allocated by any other.
pub type PinnedHostMemoryResource = DriverBackedResource<PinnedHostMemory>;

/// The driver calls of [`PinnedHostMemoryResource`]: `cuMemHostAlloc` and `cuMemFreeHost`.
#[derive(Debug)]
pub enum PinnedHostMemory {}

crate::resource::driver_backed::sealed_driver_kind!(PinnedHostMemory);

impl DriverAllocation for PinnedHostMemory {
    const NAME: &'static str = "PinnedHostMemoryResource";
    const DEVICE_ACCESSIBLE: bool = true;
    const HOST_ACCESSIBLE: bool = true;

    fn allocate(bytes: usize) -> Result<*mut u8> {
        driver::mem_host_alloc(bytes)
    }

    unsafe fn free(ptr: *mut u8) -> Result<()> {
        // SAFETY: a live block from `mem_host_alloc`, freed once (this function's contract).
        unsafe { driver::mem_free_host(ptr) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::resource::{ManagedMemoryResource, MemoryResource};
    use crate::stream::CudaStreamView;

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
