//! Managed (unified) memory: `cuMemAllocManaged` / `cuMemFree` (RMM's `managed_memory_resource`).

use crate::driver::{self, DevicePtr};
use crate::error::Result;
use crate::resource::{DriverAllocation, DriverBackedResource};

/// Managed memory from `cuMemAllocManaged` attached globally, so any stream on any device may use
/// it and the host may touch it; pages migrate on demand.
///
/// Stateless: any instance may free memory allocated by any other.
pub type ManagedMemoryResource = DriverBackedResource<ManagedMemory>;

/// The driver calls of [`ManagedMemoryResource`]: `cuMemAllocManaged` and `cuMemFree`.
#[derive(Debug)]
pub enum ManagedMemory {}

crate::resource::driver_backed::sealed_driver_kind!(ManagedMemory);

impl DriverAllocation for ManagedMemory {
    const NAME: &'static str = "ManagedMemoryResource";
    const DEVICE_ACCESSIBLE: bool = true;
    const HOST_ACCESSIBLE: bool = true;

    fn allocate(bytes: usize) -> Result<*mut u8> {
        Ok(driver::mem_alloc_managed(bytes)?.as_mut_ptr())
    }

    unsafe fn free(ptr: *mut u8) -> Result<()> {
        // SAFETY: a live block from `mem_alloc_managed`, freed once (this function's contract).
        unsafe { driver::mem_free_managed(DevicePtr::from_ptr(ptr)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::resource::{CudaMemoryResource, MemoryResource};
    use crate::stream::CudaStreamView;

    #[test]
    fn zero_bytes_and_bad_alignment_make_no_cuda_call() {
        let r = ManagedMemoryResource::new();
        assert!(r.allocate(0, 64, CudaStreamView::DEFAULT).unwrap().is_null());
        r.deallocate(std::ptr::null_mut(), 0, 64, CudaStreamView::DEFAULT).unwrap();
        assert_eq!(
            r.allocate(8, 1024, CudaStreamView::DEFAULT),
            Err(Error::BadAlignment { alignment: 1024, max: 256 })
        );
    }

    #[test]
    fn missing_driver_is_an_error_not_a_panic() {
        if crate::cuda_available() {
            return;
        }
        let r = ManagedMemoryResource::new();
        assert!(matches!(r.allocate(1024, 256, CudaStreamView::DEFAULT), Err(Error::NoDriver(_))));
    }

    #[test]
    fn stateless_equality_and_accessibility() {
        let r = ManagedMemoryResource::new();
        assert!(r.is_equal(&ManagedMemoryResource::new()));
        assert!(!r.is_equal(&CudaMemoryResource::new()));
        assert!(r.is_device_accessible() && r.is_host_accessible());
    }
}
