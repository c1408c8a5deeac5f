//! The driver's stream-ordered allocator on a pool of our own: `cuMemAllocFromPoolAsync` /
//! `cuMemFreeAsync` (RMM's `cuda_async_memory_resource`).

use crate::device::{available_device_memory, DeviceId};
use crate::driver::{check, check_alloc, ensure_context, ensure_driver, with_context};
use crate::error::Result;
use crate::resource::cuda::cuda_alignment;
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use cudarc::driver::sys;
use std::any::Any;
use std::ffi::c_void;

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
    // Handles are kept as integers so the resource is Send + Sync; the driver's pool and context
    // objects may be used from any thread.
    pool: usize,
    context: usize,
    device: DeviceId,
}

/// Drivers before 11.5 mishandle opportunistic reuse (spark-rapids issue 4710); RMM turns it off
/// there, and so do we.
const MIN_OPPORTUNISTIC_DRIVER: i32 = 11050;

impl CudaAsyncMemoryResource {
    /// Creates a pool on the current device.
    ///
    /// - `initial_pool_size`: when given, that many bytes are allocated and freed once so the pool
    ///   starts out holding them (then the default stream is synchronised). RMM primes half the
    ///   free memory when none is given; this crate does not prime unless asked.
    /// - `release_threshold`: bytes the pool keeps cached across synchronisations; defaults, as in
    ///   RMM, to the device's total memory, so freed memory is never handed back on its own.
    ///
    /// Devices without memory-pool support make `cuMemPoolCreate` fail with a CUDA error.
    pub fn new(initial_pool_size: Option<usize>, release_threshold: Option<usize>) -> Result<Self> {
        ensure_context()?;
        let device = DeviceId::current()?;
        let mut context: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: a context is current; context is a valid out pointer.
        check(unsafe { sys::cuCtxGetCurrent(&mut context) }, "cuCtxGetCurrent")?;

        // SAFETY: CUmemPoolProps is plain C data whose all-zero pattern is valid (every enum field
        // has a 0 variant, the pointer is null); zeroing also clears the reserved bytes as the
        // driver requires.
        let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
        props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE;
        props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = device.0;
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: a context is current; props is fully initialised and pool a valid out pointer.
        check(unsafe { sys::cuMemPoolCreate(&mut pool, &props) }, "cuMemPoolCreate")?;
        // From here on `this` owns the pool: an early return below destroys it in Drop.
        let this = CudaAsyncMemoryResource { pool: pool as usize, context: context as usize, device };

        let mut version = 0;
        // SAFETY: the driver is initialised; version is a valid out pointer.
        check(unsafe { sys::cuDriverGetVersion(&mut version) }, "cuDriverGetVersion")?;
        if version < MIN_OPPORTUNISTIC_DRIVER {
            let mut disabled: i32 = 0;
            this.set_attribute(
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
                (&mut disabled as *mut i32).cast(),
            )?;
        }

        let mut threshold: u64 = match release_threshold {
            Some(t) => t as u64,
            None => available_device_memory()?.1 as u64,
        };
        // The release threshold attribute is a cuuint64_t.
        this.set_attribute(
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )?;

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
        self.pool as sys::CUmemoryPool
    }

    /// The device whose memory the pool holds.
    pub fn device(&self) -> DeviceId {
        self.device
    }

    fn set_attribute(&self, attr: sys::CUmemPool_attribute, value: *mut c_void) -> Result<()> {
        // SAFETY: the pool is alive; the caller passes a pointer to a value of the attribute's type.
        check(unsafe { sys::cuMemPoolSetAttribute(self.pool_handle(), attr, value) }, "cuMemPoolSetAttribute")
    }
}

/// The alignment used when priming the pool (any valid one will do).
const CUDA_POOL_ALIGNMENT: usize = crate::resource::DEFAULT_ALIGNMENT;

impl MemoryResource for CudaAsyncMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        cuda_alignment(alignment)?;
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        let mut dptr: sys::CUdeviceptr = 0;
        // The legacy default stream needs a current context; `with_context` makes one current if
        // the call finds none.
        let status = with_context(|| {
            // SAFETY: the driver is loaded and the pool alive; dptr is a valid out pointer. A bad
            // stream handle is the caller's contract (as for every stream-ordered call).
            unsafe { sys::cuMemAllocFromPoolAsync(&mut dptr, bytes, self.pool_handle(), stream.as_raw()) }
        })?;
        check_alloc(status, "cuMemAllocFromPoolAsync", bytes)?;
        Ok(dptr as usize as *mut u8)
    }

    fn deallocate(&self, ptr: *mut u8, _bytes: usize, _alignment: usize, stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        // While the process exits the driver may be gone: the memory goes with the process.
        if crate::process_exit::process_is_exiting() {
            return Ok(());
        }
        let status = with_context(|| {
            // SAFETY: the driver is loaded; it reports pointers it did not hand out as an error.
            unsafe { sys::cuMemFreeAsync(ptr as usize as sys::CUdeviceptr, stream.as_raw()) }
        })?;
        check(status, "cuMemFreeAsync")
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        (other as &dyn Any).downcast_ref::<Self>().is_some_and(|o| o.pool == self.pool)
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        false
    }
}

impl Drop for CudaAsyncMemoryResource {
    fn drop(&mut self) {
        // A live pool implies a loaded driver; the check only keeps hand-built values (tests) from
        // reaching cudarc, which would panic without the library.
        // While the process exits the driver may be gone; the pool goes with the process.
        if self.pool == 0 || crate::process_exit::process_is_exiting() || ensure_driver().is_err() {
            return;
        }
        let ctx = self.context as sys::CUcontext;
        // SAFETY: the context was current when the pool was made and primary contexts are never
        // released by this crate. Pushing it synchronises the pool's device without changing the
        // caller's current context. Errors have nowhere to go in drop and are ignored.
        unsafe {
            if sys::cuCtxPushCurrent_v2(ctx) == sys::CUresult::CUDA_SUCCESS {
                let _ = sys::cuCtxSynchronize();
                let mut popped: sys::CUcontext = std::ptr::null_mut();
                let _ = sys::cuCtxPopCurrent_v2(&mut popped);
            }
        }
        // SAFETY: the pool was created by cuMemPoolCreate and is destroyed once. Allocations still
        // outstanding keep the driver's pool alive until they are freed.
        let _ = unsafe { sys::cuMemPoolDestroy(self.pool_handle()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::resource::CudaMemoryResource;

    /// A value with a fake pool handle: exercises the paths that must not reach the driver.
    fn fake(pool: usize) -> CudaAsyncMemoryResource {
        CudaAsyncMemoryResource { pool, context: 0, device: DeviceId(0) }
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
        // Never dropped: a fake non-null pool must not reach cuMemPoolDestroy on a GPU machine.
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
