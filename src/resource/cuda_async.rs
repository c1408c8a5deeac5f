//! The driver's stream-ordered allocator on a pool of our own: `cuMemAllocFromPoolAsync` /
//! `cuMemFreeAsync` (RMM's `cuda_async_memory_resource`).

use crate::capabilities::{async_alloc_supported, export_handle_type_supported, AllocationHandleType};
use crate::device::DeviceId;
use crate::driver::{self, ContextHandle, MemPoolHandle};
use crate::error::{Error, Result};
use crate::resource::cuda_async_view::pool_backed_memory_resource;
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use cudarc::driver::sys;

/// Device memory from a `CUmemoryPool` this resource creates and owns. Allocation and free are
/// stream-ordered and cheap; the driver caches freed memory in the pool up to the release threshold
/// and reuses it across streams only when that is safe.
///
/// Two instances are equal only when they share a pool, that is, never for separately built ones.
///
/// Dropping it synchronises the pool's device and destroys the pool, so drop it before the context
/// it was made in is destroyed (for example by `cudaDeviceReset`), as with RMM.
#[derive(Debug)]
pub struct CudaAsyncMemoryResource {
    // The handles (integers inside) keep the resource Send + Sync; the driver's pool and context
    // objects may be used from any thread.
    pool: MemPoolHandle,
    context: ContextHandle,
    device: DeviceId,
}

/// Drivers before 11.5 mishandle opportunistic reuse
/// (<https://github.com/NVIDIA/spark-rapids/issues/4710>); RMM turns it off there, and so do we.
const MIN_OPPORTUNISTIC_DRIVER: i32 = 11050;

impl CudaAsyncMemoryResource {
    /// Creates a pool on the current device whose allocations cannot be exported; see
    /// [`with_export_handle_type`](Self::with_export_handle_type).
    pub fn new(initial_pool_size: Option<usize>, release_threshold: Option<usize>) -> Result<Self> {
        Self::with_export_handle_type(initial_pool_size, release_threshold, AllocationHandleType::None)
    }

    /// Creates a pool on the current device, as RMM's constructor does.
    ///
    /// - `initial_pool_size`: when given, that many bytes are allocated and freed once on the
    ///   default stream so the pool starts out holding them (then that stream is synchronised).
    /// - `release_threshold`: bytes the pool keeps cached across synchronisations; defaults, as in
    ///   RMM 26.10, to `u64::MAX`, so freed memory is never handed back on its own.
    /// - `export_handle_type`: how allocations may be exported to other processes.
    ///
    /// A device without memory pools, or an export type the device does not support (asked of the
    /// driver first, so no call fails), is [`Error::Unsupported`].
    pub fn with_export_handle_type(
        initial_pool_size: Option<usize>,
        release_threshold: Option<usize>,
        export_handle_type: AllocationHandleType,
    ) -> Result<Self> {
        Self::with_export_handle_types(initial_pool_size, release_threshold, &[export_handle_type])
    }

    /// Like [`with_export_handle_type`](Self::with_export_handle_type), with every type of
    /// `export_handle_types` at once (RMM's Python layer combines IPC and fabric handles this way);
    /// each must be supported by the device.
    pub fn with_export_handle_types(
        initial_pool_size: Option<usize>,
        release_threshold: Option<usize>,
        export_handle_types: &[AllocationHandleType],
    ) -> Result<Self> {
        let mask = export_handle_types.iter().fold(0u32, |m, &t| m | t as u32);
        // Makes a context current first if none is.
        let device = DeviceId::current()?;
        if !async_alloc_supported(device)? {
            return Err(Error::Unsupported(
                "cudaMallocAsync not supported with this CUDA driver/runtime version".into(),
            ));
        }
        if !export_handle_type_supported(device, mask)? {
            let names: Vec<String> = export_handle_types.iter().map(|t| format!("{t:?}")).collect();
            return Err(Error::Unsupported(format!(
                "Requested IPC memory handle type not supported: {} on device {}",
                names.join(" | "),
                device.0
            )));
        }
        let context = driver::current_context_kept()?;
        let pool = driver::mem_pool_create(device, mask)?;
        // From here on `this` owns the pool: an early return below destroys it in Drop.
        let this = CudaAsyncMemoryResource { pool, context, device };

        if driver::driver_version()? < MIN_OPPORTUNISTIC_DRIVER {
            driver::mem_pool_set_reuse_allow_opportunistic(pool, false)?;
        }

        let threshold = release_threshold.map_or(u64::MAX, |t| t as u64);
        driver::mem_pool_set_release_threshold(pool, threshold)?;

        if let Some(bytes) = initial_pool_size.filter(|&b| b > 0) {
            let stream = CudaStreamView::DEFAULT;
            let p = this.allocate(bytes, CUDA_POOL_ALIGNMENT, stream)?;
            this.deallocate(p, bytes, CUDA_POOL_ALIGNMENT, stream)?;
            stream.synchronize()?;
        }
        Ok(this)
    }

    /// The pool's handle, for use with the driver API (for example `cuMemPoolTrimTo`). It stays
    /// owned by this resource.
    pub fn pool_handle(&self) -> sys::CUmemoryPool {
        self.pool.raw()
    }

    /// The device whose memory the pool holds.
    pub fn device(&self) -> DeviceId {
        self.device
    }

    /// The bytes the pool keeps cached across synchronisations (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`).
    pub fn release_threshold(&self) -> Result<u64> {
        driver::mem_pool_release_threshold(self.pool)
    }

    /// The most memory the pool has reserved from the device at once, in bytes (the driver's
    /// `CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH`).
    pub fn reserved_memory_high(&self) -> Result<usize> {
        driver::mem_pool_reserved_mem_high(self.pool).map(|bytes| bytes as usize)
    }
}

/// The alignment used when priming the pool (any valid one will do).
const CUDA_POOL_ALIGNMENT: usize = crate::resource::DEFAULT_ALIGNMENT;

pool_backed_memory_resource!(CudaAsyncMemoryResource, host_accessible: false);

impl Drop for CudaAsyncMemoryResource {
    fn drop(&mut self) {
        // A live pool implies a loaded driver; the check only keeps hand-built values (tests) from
        // reaching cudarc, which would panic without the library.
        // While the process exits the driver may be gone; the pool goes with the process.
        if self.pool.is_null() || crate::process_exit::process_is_exiting() || driver::ensure_driver().is_err() {
            return;
        }
        // The pool's context was current when it was made; pushing it synchronises the pool's
        // device without changing the caller's current context.
        driver::synchronize_context_in_drop(self.context);
        // SAFETY: the pool was made in the constructor and is destroyed once, here; no allocation
        // can be made from it after the resource is gone.
        unsafe { driver::mem_pool_destroy(self.pool) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::CudaMemoryResource;

    /// A value with a fake pool handle: exercises the paths that must not reach the driver.
    fn fake(pool: usize) -> CudaAsyncMemoryResource {
        let pool = MemPoolHandle::from_raw(pool as sys::CUmemoryPool);
        CudaAsyncMemoryResource { pool, context: ContextHandle::for_tests(0x1), device: DeviceId(0) }
    }

    #[test]
    fn is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<CudaAsyncMemoryResource>();
    }

    #[test]
    fn zero_bytes_and_bad_alignment_make_no_cuda_call() {
        let r = fake(0);
        assert!(r.allocate(0, 256, CudaStreamView::DEFAULT).unwrap().is_null());
        r.deallocate(std::ptr::null_mut(), 0, 256, CudaStreamView::DEFAULT).unwrap();
        assert_eq!(r.allocate(64, 512, CudaStreamView::DEFAULT), Err(Error::BadAlignment { alignment: 512, max: 256 }));
    }

    #[test]
    fn equal_only_with_the_same_pool() {
        let (a, b) = (fake(0), fake(0));
        assert!(a.is_equal(&b));
        assert!(!a.is_equal(&CudaMemoryResource::new()));
        // Never dropped: a fake non-null pool must not reach cuMemPoolDestroy on a GPU host.
        let c = std::mem::ManuallyDrop::new(fake(0x10));
        assert!(!a.is_equal(&*c));
    }

    #[test]
    fn missing_driver_is_an_error_not_a_panic() {
        if crate::cuda_available() {
            return;
        }
        assert!(matches!(CudaAsyncMemoryResource::new(None, None), Err(Error::NoDriver(_))));
    }
}
