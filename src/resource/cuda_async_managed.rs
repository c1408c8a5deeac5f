//! Managed memory from the driver's stream-ordered allocator: the device's default pool of managed
//! memory (RMM's `cuda_async_managed_memory_resource`, CUDA 13.0 and later).

use crate::capabilities::{async_managed_alloc_supported, MIN_ASYNC_MANAGED_ALLOC_DRIVER};
use crate::device::DeviceId;
use crate::driver::{self, MemPoolHandle};
use crate::error::{Error, Result};
use crate::resource::cuda_async_view::pool_backed_memory_resource;
use cudarc::driver::sys;

/// Managed memory (host and device accessible) allocated in stream order from the current
/// device's default managed-memory pool, which the driver owns: dropping the resource leaves it.
///
/// Making one sets that pool's release threshold to `u64::MAX`, as RMM does, so unused memory
/// stays in the pool across synchronisations; every user of the device's default managed pool
/// sees the change. Resources over the same pool are equal.
#[derive(Debug)]
pub struct CudaAsyncManagedMemoryResource {
    // The handle (an integer inside) keeps the resource Send + Sync; the driver's pool may be used
    // from any thread.
    pool: MemPoolHandle,
    device: DeviceId,
}

impl CudaAsyncManagedMemoryResource {
    /// The resource over the current device's default managed pool. A device without concurrent
    /// managed access, a driver older than 13.0 or a CUDA 12 build is [`Error::Unsupported`]
    /// (checked before any call the driver could refuse).
    pub fn new() -> Result<Self> {
        let device = DeviceId::current()?;
        if !async_managed_alloc_supported(device)? {
            return Err(Error::Unsupported(format!(
                "cuda_async_managed_memory_resource requires CUDA {}.{} or higher, a CUDA 13 build and a \
                 device with concurrent managed access (device {} has a {} driver; this is a CUDA {} build)",
                MIN_ASYNC_MANAGED_ALLOC_DRIVER / 1000,
                MIN_ASYNC_MANAGED_ALLOC_DRIVER % 1000 / 10,
                device.0,
                driver::driver_version().map_or_else(|e| e.to_string(), |v| format!("{}.{}", v / 1000, v % 1000 / 10)),
                crate::build_cuda_major(),
            )));
        }
        let pool = driver::mem_get_default_managed_pool(device)?;
        driver::mem_pool_set_release_threshold(pool, u64::MAX)?;
        Ok(CudaAsyncManagedMemoryResource { pool, device })
    }

    /// The device's default managed pool (owned by the driver).
    pub fn pool_handle(&self) -> sys::CUmemoryPool {
        self.pool.raw()
    }

    /// The device whose default managed pool this is.
    pub fn device(&self) -> DeviceId {
        self.device
    }

    /// The bytes the pool keeps cached across synchronisations.
    pub fn release_threshold(&self) -> Result<u64> {
        driver::mem_pool_release_threshold(self.pool)
    }
}

pool_backed_memory_resource!(CudaAsyncManagedMemoryResource, host_accessible: true);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<CudaAsyncManagedMemoryResource>();
    }

    #[test]
    fn missing_driver_is_an_error_not_a_panic() {
        if crate::cuda_available() {
            return;
        }
        assert!(matches!(CudaAsyncManagedMemoryResource::new(), Err(Error::NoDriver(_))));
    }
}
