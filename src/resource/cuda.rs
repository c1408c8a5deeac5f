//! Device memory straight from the driver: `cuMemAlloc` / `cuMemFree` (RMM's
//! `cuda_memory_resource`), the initial per-device resource.

use crate::driver;
use crate::error::{Error, Result};
use crate::resource::{effective_alignment, same_type, MemoryResource, DEFAULT_ALIGNMENT};
use crate::stream::CudaStreamView;

/// The alignment every CUDA allocation call guarantees, and so the most the CUDA-backed resources
/// can promise without over-allocating.
pub(crate) const CUDA_ALIGNMENT: usize = DEFAULT_ALIGNMENT;

/// Validates `alignment` for a resource whose memory comes straight from a CUDA allocation call:
/// a power of two up to [`CUDA_ALIGNMENT`]; returns the effective alignment.
pub(crate) fn cuda_alignment(alignment: usize) -> Result<usize> {
    match effective_alignment(alignment) {
        Ok(a) if a <= CUDA_ALIGNMENT => Ok(a),
        // Report the limit that actually applies here, not the crate-wide maximum.
        _ => Err(Error::BadAlignment { alignment, max: CUDA_ALIGNMENT }),
    }
}

/// Device memory from `cuMemAlloc`, freed with `cuMemFree`. Both calls synchronise the device, so
/// this resource is simple and slow; pools sit on top of it.
///
/// Stateless: any instance may free memory allocated by any other.
#[derive(Debug, Clone, Copy, Default)]
pub struct CudaMemoryResource;

impl CudaMemoryResource {
    /// A new handle; creating it makes no CUDA call.
    pub const fn new() -> Self {
        CudaMemoryResource
    }
}

impl MemoryResource for CudaMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, _stream: CudaStreamView) -> Result<*mut u8> {
        cuda_alignment(alignment)?;
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        Ok(driver::mem_alloc(bytes)? as *mut u8)
    }

    fn deallocate(&self, ptr: *mut u8, _bytes: usize, _alignment: usize, _stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        // While the process exits the driver may be gone: the memory goes with the process.
        if crate::process_exit::process_is_exiting() {
            return Ok(());
        }
        driver::mem_free(ptr as usize)
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        same_type::<Self>(other)
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::HostMemoryResource;

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
        assert!(matches!(r.deallocate(0x1000 as *mut u8, 1024, 256, CudaStreamView::DEFAULT), Err(Error::NoDriver(_))));
    }

    #[test]
    fn stateless_equality() {
        let (a, b) = (CudaMemoryResource::new(), CudaMemoryResource::new());
        assert!(a.is_equal(&b));
        assert!(!a.is_equal(&HostMemoryResource::new()));
        assert!(a.is_device_accessible() && !a.is_host_accessible());
    }
}
