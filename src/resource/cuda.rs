//! Device memory straight from the driver: `cuMemAlloc` / `cuMemFree` (RMM's
//! `cuda_memory_resource`), the initial per-device resource.

use crate::driver::{self, DevicePtr};
use crate::error::Result;
use crate::resource::{DriverAllocation, DriverBackedResource};

/// Device memory from `cuMemAlloc`, freed with `cuMemFree`. Both calls synchronise the device, so
/// this resource is simple and slow; pools sit on top of it.
///
/// Stateless: any instance may free memory allocated by any other.
pub type CudaMemoryResource = DriverBackedResource<DeviceMemory>;

/// The driver calls of [`CudaMemoryResource`]: `cuMemAlloc` and `cuMemFree`.
#[derive(Debug)]
pub enum DeviceMemory {}

crate::resource::driver_backed::sealed_driver_kind!(DeviceMemory);

impl DriverAllocation for DeviceMemory {
    const NAME: &'static str = "CudaMemoryResource";
    const DEVICE_ACCESSIBLE: bool = true;
    const HOST_ACCESSIBLE: bool = false;

    #[inline]
    fn allocate(bytes: usize) -> Result<*mut u8> {
        Ok(driver::mem_alloc(bytes)?.as_mut_ptr())
    }

    #[inline]
    unsafe fn free(ptr: *mut u8) -> Result<()> {
        // SAFETY: a live block from `mem_alloc`, freed once (this function's contract).
        unsafe { driver::mem_free(DevicePtr::from_ptr(ptr)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::resource::driver_backed::cuda_alignment;
    use crate::resource::{HostMemoryResource, MemoryResource};
    use crate::stream::CudaStreamView;

    #[test]
    fn zero_bytes_is_null_without_cuda() {
        let r = CudaMemoryResource::new();
        let p = r.allocate(0, 256, CudaStreamView::DEFAULT).unwrap();
        assert!(p.is_null());
        r.deallocate(p, 0, 256, CudaStreamView::DEFAULT).unwrap();
    }

    #[test]
    fn bad_alignment_is_rejected_without_cuda() {
        let r = CudaMemoryResource::new();
        for a in [512, 4096, 3, 0] {
            assert_eq!(
                r.allocate(1024, a, CudaStreamView::DEFAULT),
                Err(Error::BadAlignment { alignment: a, max: 256 })
            );
        }
        // Small alignments are raised to 256, not refused.
        assert_eq!(cuda_alignment(8), Ok(256));
    }

    #[test]
    fn missing_driver_is_an_error_not_a_panic() {
        if crate::cuda_available() {
            return;
        }
        let r = CudaMemoryResource::new();
        assert!(matches!(r.allocate(1024, 256, CudaStreamView::DEFAULT), Err(Error::NoDriver(_))));
    }

    #[test]
    fn a_pointer_it_never_handed_out_is_refused_before_the_driver() {
        let r = CudaMemoryResource::new();
        let freed = r.deallocate(0x1000 as *mut u8, 1024, 256, CudaStreamView::DEFAULT);
        assert_eq!(freed, Err(Error::Misuse(crate::error::Misuse::UnknownPointer { ptr: 0x1000 })));
    }

    #[test]
    fn stateless_equality() {
        let (a, b) = (CudaMemoryResource::new(), CudaMemoryResource::new());
        assert!(a.is_equal(&b));
        assert!(!a.is_equal(&HostMemoryResource::new()));
        assert!(a.is_device_accessible() && !a.is_host_accessible());
    }
}
