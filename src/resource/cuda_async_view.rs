//! Allocation from a driver memory pool someone else owns (RMM's `cuda_async_view_memory_resource`),
//! and the pool allocation the whole `cuda_async` family shares.

use crate::capabilities::async_alloc_supported;
use crate::device::DeviceId;
use crate::driver::{self, DevicePtr, MemPoolHandle};
use crate::error::{Error, Result};
use crate::resource::claims::ClaimTable;
use crate::resource::driver_backed::cuda_alignment;
use crate::resource::{CudaAsyncManagedMemoryResource, CudaAsyncMemoryResource, MemoryResource};
use crate::stream::CudaStreamView;
use cudarc::driver::sys;
use std::any::Any;
use std::sync::Arc;

/// A memory pool handle as C and C++ code pass it: `cudaMemPool_t` and `CUmemoryPool` are the
/// same type. [`CudaAsyncViewMemoryResource::new`] takes one.
pub type RawMemoryPool = sys::CUmemoryPool;

/// Device memory from an existing `CUmemoryPool` (`cudaMemPool_t`) that this resource does not
/// own: dropping it leaves the pool alone. Two views are equal when they view the same pool, and a
/// view equals the owning [`CudaAsyncMemoryResource`] of its pool (memory of one may be freed
/// through the other).
///
/// A view made with [`of`](Self::of) holds the owning resource, so the pool lives as long as the
/// view; one made from a raw handle with [`new`](Self::new) relies on its caller for that.
#[derive(Debug, Clone)]
pub struct CudaAsyncViewMemoryResource {
    pool: MemPoolHandle,
    /// The resource that owns the pool, when the view was made from it.
    owner: Option<Arc<CudaAsyncMemoryResource>>,
}

impl PartialEq for CudaAsyncViewMemoryResource {
    /// Views of one pool are equal, whether or not they hold its owner.
    fn eq(&self, other: &Self) -> bool {
        self.pool == other.pool
    }
}

impl Eq for CudaAsyncViewMemoryResource {}

impl CudaAsyncViewMemoryResource {
    /// A view of `pool`. A null pool makes an empty view (RMM's default-constructed one), which
    /// refuses every allocation. Any other pool must support the stream-ordered allocator, and is
    /// asked one attribute (`cuMemPoolGetAttribute`): a handle the driver does not know as a pool
    /// (one destroyed already, say) is [`Error::InvalidArgument`] here rather than a failure of
    /// every allocation. The driver cannot vouch for an arbitrary value, hence the contract.
    ///
    /// # Safety
    /// A non-null `pool` must be a live memory pool that outlives every use of this resource and
    /// of the memory it hands out.
    pub unsafe fn new(pool: RawMemoryPool) -> Result<Self> {
        if !pool.is_null() {
            if !async_alloc_supported(DeviceId::current()?)? {
                return Err(Error::Unsupported(
                    "cudaMallocAsync not supported with this CUDA driver/runtime version".into(),
                ));
            }
            driver::mem_pool_check(MemPoolHandle::from_raw(pool))?;
        }
        Ok(CudaAsyncViewMemoryResource { pool: MemPoolHandle::from_raw(pool), owner: None })
    }

    /// A view of `owner`'s pool that keeps `owner` (and so the pool) alive as long as the view and
    /// its clones: safe, unlike a view of a raw handle.
    pub fn of(owner: Arc<CudaAsyncMemoryResource>) -> Self {
        CudaAsyncViewMemoryResource { pool: MemPoolHandle::from_raw(owner.pool_handle()), owner: Some(owner) }
    }

    /// The pool viewed (null for an empty view).
    pub fn pool_handle(&self) -> RawMemoryPool {
        self.pool.raw()
    }

    /// The resource that owns the pool, when the view was made with [`of`](Self::of).
    pub fn owner(&self) -> Option<&Arc<CudaAsyncMemoryResource>> {
        self.owner.as_ref()
    }
}

// SAFETY: blocks come from `cuMemAllocFromPoolAsync` on the viewed pool, which the constructor's
// contract (or the owner this view holds) keeps alive; the driver aligns them to 256 bytes and
// reuses them only after `cuMemFreeAsync`, in stream order. Pool memory is device memory only.
unsafe impl MemoryResource for CudaAsyncViewMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        if self.pool.is_null() && bytes > 0 {
            cuda_alignment(alignment)?;
            return Err(Error::InvalidArgument(
                "this cuda_async_view_memory_resource views no pool (it was made without one)".into(),
            ));
        }
        pool_allocate(self.pool, bytes, alignment, stream)
    }

    fn deallocate(&self, ptr: *mut u8, _bytes: usize, _alignment: usize, stream: CudaStreamView) -> Result<()> {
        pool_deallocate(ptr, stream)
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        pool_handle_of(other) == Some(self.pool)
    }

    crate::resource::accessibility!(device: true, host: false);

    fn claim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        ASYNC_CLAIMS.claim(ptr, bytes)
    }

    fn unclaim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        ASYNC_CLAIMS.unclaim(ptr, bytes)
    }
}

/// Blocks of driver pools that a suballocator claimed, for every resource of the family: one
/// table, since a block may be freed through any resource over its pool, and the driver's blocks
/// of all pools are disjoint.
pub(crate) static ASYNC_CLAIMS: ClaimTable = ClaimTable::new();

/// The `MemoryResource` impl of a resource that holds a live driver pool in its
/// `pool: MemPoolHandle` field (`cuda_async` and `cuda_async_managed`): stream-ordered allocation and free from that
/// pool, equality with every resource over the same pool, and the given host accessibility.
macro_rules! pool_backed_memory_resource {
    ($ty:ty, host_accessible: $host:expr) => {
        // SAFETY: blocks come from `cuMemAllocFromPoolAsync` on the pool this resource holds (alive
        // until it is dropped, `Drop` destroys it after the device is synchronised); the driver
        // aligns them to 256 bytes and reuses them only after `cuMemFreeAsync`, in stream order;
        // `$host` says whether the pool's memory is host accessible (managed memory).
        unsafe impl $crate::resource::MemoryResource for $ty {
            fn allocate(
                &self,
                bytes: usize,
                alignment: usize,
                stream: $crate::stream::CudaStreamView,
            ) -> $crate::error::Result<*mut u8> {
                $crate::resource::cuda_async_view::pool_allocate(self.pool, bytes, alignment, stream)
            }

            fn deallocate(
                &self,
                ptr: *mut u8,
                _bytes: usize,
                _alignment: usize,
                stream: $crate::stream::CudaStreamView,
            ) -> $crate::error::Result<()> {
                $crate::resource::cuda_async_view::pool_deallocate(ptr, stream)
            }

            /// Equal to every resource over the same pool (a view of it included).
            fn is_equal(&self, other: &dyn $crate::resource::MemoryResource) -> bool {
                $crate::resource::cuda_async_view::pool_handle_of(other) == Some(self.pool)
            }

            $crate::resource::accessibility!(device: true, host: $host);

            fn claim(&self, ptr: *mut u8, bytes: usize) -> $crate::error::Result<()> {
                $crate::resource::cuda_async_view::ASYNC_CLAIMS.claim(ptr, bytes)
            }

            fn unclaim(&self, ptr: *mut u8, bytes: usize) -> $crate::error::Result<()> {
                $crate::resource::cuda_async_view::ASYNC_CLAIMS.unclaim(ptr, bytes)
            }
        }
    };
}
pub(crate) use pool_backed_memory_resource;

/// The pool of a resource of the `cuda_async` family (its `CUmemoryPool` handle as an address), for
/// equality across the family: memory from a pool may be freed through any resource over the same
/// pool. `None` for any other resource.
pub fn async_pool_of(r: &dyn MemoryResource) -> Option<usize> {
    pool_handle_of(r).map(|p| p.raw() as usize)
}

/// [`async_pool_of`] as the driver's handle.
pub(crate) fn pool_handle_of(r: &dyn MemoryResource) -> Option<MemPoolHandle> {
    let any = r as &dyn Any;
    if let Some(v) = any.downcast_ref::<CudaAsyncViewMemoryResource>() {
        return Some(v.pool);
    }
    if let Some(a) = any.downcast_ref::<CudaAsyncMemoryResource>() {
        return Some(MemPoolHandle::from_raw(a.pool_handle()));
    }
    any.downcast_ref::<CudaAsyncManagedMemoryResource>().map(|m| MemPoolHandle::from_raw(m.pool_handle()))
}

/// `bytes` from `pool` on `stream` (`cuMemAllocFromPoolAsync`); null for 0 bytes, with no driver
/// call for it or for a bad alignment.
#[inline]
pub(crate) fn pool_allocate(
    pool: MemPoolHandle,
    bytes: usize,
    alignment: usize,
    stream: CudaStreamView,
) -> Result<*mut u8> {
    cuda_alignment(alignment)?;
    if bytes == 0 {
        return Ok(std::ptr::null_mut());
    }
    Ok(driver::mem_alloc_from_pool_async(pool, bytes, stream.stream_handle())?.as_mut_ptr())
}

/// Frees `ptr` from a pool in stream order on `stream` (`cuMemFreeAsync`); nothing for null, or
/// while the process exits (the driver may be gone; the memory goes with the process).
#[inline]
pub(crate) fn pool_deallocate(ptr: *mut u8, stream: CudaStreamView) -> Result<()> {
    if ptr.is_null() || crate::process_exit::process_is_exiting() {
        return Ok(());
    }
    ASYNC_CLAIMS.refuse_claimed(ptr)?;
    // SAFETY: the driver answers a pointer no pool handed out with an error code. One that another
    // resource's pool handed out would be freed: freeing through a resource that did not allocate
    // is the caller's misuse (docs/errors.md), on device memory only.
    unsafe { driver::mem_free_async(DevicePtr::from_ptr(ptr), stream.stream_handle()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_view_refuses_allocations_without_a_driver_call() {
        // SAFETY: a null pool is never used.
        let v = unsafe { CudaAsyncViewMemoryResource::new(std::ptr::null_mut()) }.unwrap();
        assert!(v.allocate(0, 256, CudaStreamView::DEFAULT).unwrap().is_null());
        assert!(matches!(v.allocate(64, 256, CudaStreamView::DEFAULT), Err(Error::InvalidArgument(_))));
        assert!(matches!(v.allocate(64, 3, CudaStreamView::DEFAULT), Err(Error::BadAlignment { .. })));
        v.deallocate(std::ptr::null_mut(), 0, 256, CudaStreamView::DEFAULT).unwrap();
    }

    #[test]
    fn views_of_one_pool_are_equal() {
        let pool = |p: usize| MemPoolHandle::from_raw(p as sys::CUmemoryPool);
        let a = CudaAsyncViewMemoryResource { pool: pool(0x10), owner: None };
        let b = CudaAsyncViewMemoryResource { pool: pool(0x10), owner: None };
        let c = CudaAsyncViewMemoryResource { pool: pool(0x20), owner: None };
        assert!(a.is_equal(&b));
        assert!(!a.is_equal(&c));
        assert!(!a.is_equal(&crate::resource::CudaMemoryResource::new()));
        assert!(a == b && a != c);
    }
}
