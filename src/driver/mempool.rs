//! Memory pools of the driver's stream-ordered allocator, and allocation from them.

use super::{check, check_alloc, with_context, DeviceId, DevicePtr, MemPoolHandle, StreamHandle};
use crate::error::Result;
use cudarc::driver::sys;

/// Creates a pool of pinned memory on `device` whose allocations may be exported as
/// `handle_types` (a `CUmemAllocationHandleType` bit mask, 0 for none; the caller checks that the
/// device supports them). A context must be current.
pub(crate) fn mem_pool_create(device: DeviceId, handle_types: u32) -> Result<MemPoolHandle> {
    // SAFETY: CUmemPoolProps is plain C data whose all-zero pattern is valid (every enum field has a
    // 0 variant, the pointer is null); zeroing also clears the reserved bytes as the driver requires.
    let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
    props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = sys::CUmemAllocationHandleType(handle_types);
    props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = device.0;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: a context is current; props is fully initialised and pool a valid out pointer.
    check(unsafe { sys::cuMemPoolCreate(&mut pool, &props) }, "cuMemPoolCreate")?;
    Ok(MemPoolHandle::from_raw(pool))
}

/// Destroys `pool`, made by [`mem_pool_create`], for a destructor: errors are ignored. Allocations
/// still outstanding keep the driver's pool alive until they are freed.
///
/// # Safety
/// `pool` was made by [`mem_pool_create`] and is destroyed once; nothing allocates from it
/// afterwards.
pub(crate) unsafe fn mem_pool_destroy(pool: MemPoolHandle) {
    // SAFETY: the caller destroys a pool it created, once (this function's contract).
    let _ = unsafe { sys::cuMemPoolDestroy(pool.raw()) };
}

/// Sets whether `pool` may reuse memory freed on one stream for another without an ordering
/// between them (`CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC`).
pub(crate) fn mem_pool_set_reuse_allow_opportunistic(pool: MemPoolHandle, allow: bool) -> Result<()> {
    let mut value = i32::from(allow);
    // SAFETY: the attribute's value is an int.
    unsafe { set_attribute(pool, sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &mut value) }
}

/// Sets the bytes `pool` keeps cached across synchronisations (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`).
pub(crate) fn mem_pool_set_release_threshold(pool: MemPoolHandle, bytes: u64) -> Result<()> {
    let mut value = bytes;
    // SAFETY: the attribute's value is a cuuint64_t.
    unsafe { set_attribute(pool, sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &mut value) }
}

/// The most memory `pool` has reserved from the device at once (`CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH`).
pub(crate) fn mem_pool_reserved_mem_high(pool: MemPoolHandle) -> Result<u64> {
    get_u64_attribute(pool, sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
}

/// The bytes `pool` keeps cached across synchronisations (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`).
pub(crate) fn mem_pool_release_threshold(pool: MemPoolHandle) -> Result<u64> {
    get_u64_attribute(pool, sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
}

/// Whether the driver knows `pool` as a memory pool: one attribute is asked of it, and a handle
/// it does not know (a pool destroyed already) is [`Error::InvalidArgument`](crate::Error).
pub(crate) fn mem_pool_check(pool: MemPoolHandle) -> Result<()> {
    super::ensure_context()?;
    let mut value: u64 = 0;
    let attribute = sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    // SAFETY: the driver is loaded and a context is current; the attribute's value is a
    // cuuint64_t. The handle is the caller's: a pool the driver made, live or destroyed (a raw
    // value the driver never handed out is the contract of the caller's `unsafe` constructor).
    let status = unsafe { sys::cuMemPoolGetAttribute(pool.raw(), attribute, (&mut value as *mut u64).cast()) };
    check(status, "cuMemPoolGetAttribute")
        .map_err(|e| crate::Error::InvalidArgument(format!("{pool:#x} is not a live CUDA memory pool ({e})")))
}

/// The value of a cuuint64_t `attribute` of the live `pool`.
fn get_u64_attribute(pool: MemPoolHandle, attribute: sys::CUmemPool_attribute) -> Result<u64> {
    let mut value: u64 = 0;
    // SAFETY: the pool is alive (callers hold it); the attribute's value is a cuuint64_t.
    let status = unsafe { sys::cuMemPoolGetAttribute(pool.raw(), attribute, (&mut value as *mut u64).cast()) };
    check(status, "cuMemPoolGetAttribute")?;
    Ok(value)
}

/// The default pool of managed memory of `device` (`cuMemGetDefaultMemPool` with
/// `CU_MEM_ALLOCATION_TYPE_MANAGED`). The driver owns it: it is never destroyed. Needs a 13.0
/// driver (the symbol does not exist before), which the caller checks first.
#[cfg(not(feature = "cuda-12"))]
pub(crate) fn mem_get_default_managed_pool(device: DeviceId) -> Result<MemPoolHandle> {
    let mut location = sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: device.0 };
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    let managed = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_MANAGED;
    let status = with_context(|| {
        // SAFETY: the driver is loaded and is 13.0 or newer (the caller's check); both pointers
        // are valid for the call.
        unsafe { sys::cuMemGetDefaultMemPool(&mut pool, &mut location, managed) }
    })?;
    check(status, "cuMemGetDefaultMemPool")?;
    Ok(MemPoolHandle::from_raw(pool))
}

/// CUDA 12 has no pools of managed memory (its bindings lack the call): always
/// [`Error::Unsupported`](crate::Error).
#[cfg(feature = "cuda-12")]
pub(crate) fn mem_get_default_managed_pool(device: DeviceId) -> Result<MemPoolHandle> {
    Err(crate::Error::Unsupported(format!(
        "device {}: pools of managed memory need a CUDA 13 build of rmm-rs (this is a CUDA 12 build)",
        device.0
    )))
}

/// Sets `attribute` of the live `pool` to `value`.
///
/// # Safety
/// `T` must be the type the driver documents for `attribute` (an int or a cuuint64_t).
unsafe fn set_attribute<T>(pool: MemPoolHandle, attribute: sys::CUmemPool_attribute, value: &mut T) -> Result<()> {
    // SAFETY: the pool is alive (the callers own it) and the caller passes the attribute's type.
    let status = unsafe { sys::cuMemPoolSetAttribute(pool.raw(), attribute, (value as *mut T).cast()) };
    check(status, "cuMemPoolSetAttribute")
}

/// `bytes` from `pool`, usable by work on `stream` enqueued after the call
/// (`cuMemAllocFromPoolAsync`). The legacy default stream needs a current context, hence the
/// context rule.
#[inline]
pub(crate) fn mem_alloc_from_pool_async(pool: MemPoolHandle, bytes: usize, stream: StreamHandle) -> Result<DevicePtr> {
    let mut dptr: sys::CUdeviceptr = 0;
    let status = with_context(|| {
        // SAFETY: the driver is loaded; the pool is alive (an owning resource holds it, or a view
        // whose constructor's contract, or owner, keeps it); dptr is a valid out pointer. A live
        // stream is the caller's contract (as for every stream-ordered call).
        unsafe { sys::cuMemAllocFromPoolAsync(&mut dptr, bytes, pool.raw(), stream.raw()) }
    })?;
    check_alloc(status, "cuMemAllocFromPoolAsync", bytes)?;
    Ok(DevicePtr::new(dptr as usize))
}

/// Frees `ptr` in stream order on `stream` (`cuMemFreeAsync`).
///
/// # Safety
/// `ptr` is a live block from a pool of the stream-ordered allocator that the caller owns and
/// frees once, with no work ordered after the free on `stream` still using it; `stream` names a
/// live stream. The driver answers a pointer no pool handed out with an error code, but one that
/// another resource's pool handed out would be freed (the caller's misuse, docs/errors.md).
#[inline]
pub(crate) unsafe fn mem_free_async(ptr: DevicePtr, stream: StreamHandle) -> Result<()> {
    let status = with_context(|| {
        // SAFETY: the driver is loaded; the caller frees a block it owns, once, on a live stream
        // (this function's contract).
        unsafe { sys::cuMemFreeAsync(ptr.raw(), stream.raw()) }
    })?;
    check(status, "cuMemFreeAsync")
}
