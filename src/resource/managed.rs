//! Managed (unified) memory: `cuMemAllocManaged` / `cuMemFree` (RMM's `managed_memory_resource`).

use crate::driver;
use crate::error::Result;
use crate::resource::cuda::cuda_alignment;
use crate::resource::{same_type, MemoryResource};
use crate::stream::CudaStreamView;

/// Managed memory from `cuMemAllocManaged` attached globally, so any stream on any device may use
/// it and the host may touch it; pages migrate on demand.
///
/// Stateless: any instance may free memory allocated by any other.
#[derive(Debug, Clone, Copy, Default)]
pub struct ManagedMemoryResource;

impl ManagedMemoryResource {
    /// A new handle; creating it makes no CUDA call.
    pub const fn new() -> Self {
        ManagedMemoryResource
    }
}

impl MemoryResource for ManagedMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, _stream: CudaStreamView) -> Result<*mut u8> {
        cuda_alignment(alignment)?;
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        Ok(driver::mem_alloc_managed(bytes)? as *mut u8)
    }

    fn deallocate(&self, ptr: *mut u8, _bytes: usize, _alignment: usize, _stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        // While the process exits the driver may be gone: the memory goes with the process.
        if crate::process_exit::process_is_exiting() {
            return Ok(());
        }
        driver::mem_free_managed(ptr as usize)
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
    use crate::resource::CudaMemoryResource;

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
