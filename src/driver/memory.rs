//! Device, managed and pinned host memory, and the device's free and total memory.
//!
//! Device memory (`cuMemAlloc`) follows the context rule of [`with_context`]; managed and pinned
//! host memory make sure of a context before every call with [`ensure_context`], which never lets
//! a call fail for want of one.

use super::{
    check, check_alloc, ensure_context, entry_point, missing, with_context, DeviceId, DevicePtr, EntryPoint,
    StreamHandle, Versioned,
};
use crate::error::Result;
use cudarc::driver::sys;

/// `bytes` of device memory from `cuMemAlloc`.
#[inline]
pub(crate) fn mem_alloc(bytes: usize) -> Result<DevicePtr> {
    let mut dptr: sys::CUdeviceptr = 0;
    // SAFETY: the driver is loaded; dptr is a valid out pointer.
    let status = with_context(|| unsafe { sys::cuMemAlloc_v2(&mut dptr, bytes) })?;
    check_alloc(status, "cuMemAlloc", bytes)?;
    Ok(DevicePtr::new(dptr as usize))
}

/// Frees device memory from [`mem_alloc`] with `cuMemFree`.
///
/// # Safety
/// `ptr` is a live block from [`mem_alloc`] that the caller owns and frees once, with no work
/// still using it: the driver frees any allocation it made, whoever holds it (the driver-backed
/// resources check their table of live blocks first).
#[inline]
pub(crate) unsafe fn mem_free(ptr: DevicePtr) -> Result<()> {
    // SAFETY: the driver is loaded; the caller frees a block it owns, once (this function's
    // contract), and the driver answers a pointer it never handed out with an error code.
    let status = with_context(|| unsafe { sys::cuMemFree_v2(ptr.raw()) })?;
    check(status, "cuMemFree")
}

/// `bytes` of managed memory from `cuMemAllocManaged`, attached globally: any stream on any device
/// may use it.
pub(crate) fn mem_alloc_managed(bytes: usize) -> Result<DevicePtr> {
    ensure_context()?;
    let mut dptr: sys::CUdeviceptr = 0;
    let flags = sys::CUmemAttach_flags_enum::CU_MEM_ATTACH_GLOBAL as u32;
    // SAFETY: the driver is loaded and a context is current; dptr is a valid out pointer.
    check_alloc(unsafe { sys::cuMemAllocManaged(&mut dptr, bytes, flags) }, "cuMemAllocManaged", bytes)?;
    Ok(DevicePtr::new(dptr as usize))
}

/// Frees managed memory from [`mem_alloc_managed`] with `cuMemFree`, under the context rule of its
/// allocation.
///
/// # Safety
/// As for [`mem_free`]: `ptr` is a live block from [`mem_alloc_managed`] that the caller owns and
/// frees once, with no work still using it.
pub(crate) unsafe fn mem_free_managed(ptr: DevicePtr) -> Result<()> {
    ensure_context()?;
    // SAFETY: a context is current; the caller frees a block it owns, once (this function's
    // contract), and the driver answers a pointer it never handed out with an error code.
    check(unsafe { sys::cuMemFree_v2(ptr.raw()) }, "cuMemFree")
}

/// `bytes` of page-locked host memory from `cuMemHostAlloc`, portable: every context, not only the
/// current one, treats it as pinned.
pub(crate) fn mem_host_alloc(bytes: usize) -> Result<*mut u8> {
    ensure_context()?;
    let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: the driver is loaded and a context is current; p is a valid out pointer.
    check_alloc(unsafe { sys::cuMemHostAlloc(&mut p, bytes, sys::CU_MEMHOSTALLOC_PORTABLE) }, "cuMemHostAlloc", bytes)?;
    Ok(p.cast())
}

/// Frees pinned host memory from [`mem_host_alloc`] with `cuMemFreeHost`.
///
/// # Safety
/// As for [`mem_free`]: `ptr` is a live block from [`mem_host_alloc`] that the caller owns and
/// frees once, with no work still using it.
pub(crate) unsafe fn mem_free_host(ptr: *mut u8) -> Result<()> {
    ensure_context()?;
    // SAFETY: a context is current; the caller frees a block it owns, once (this function's
    // contract), and the driver answers
    // a pointer it did not pin with an error code.
    check(unsafe { sys::cuMemFreeHost(ptr.cast()) }, "cuMemFreeHost")
}

/// `(free, total)` bytes of the current context's device.
pub(crate) fn mem_get_info() -> Result<(usize, usize)> {
    ensure_context()?;
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: a context is current; the out pointers are valid.
    check(unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) }, "cuMemGetInfo")?;
    Ok((free, total))
}

/// True when `ptr` is managed memory. `cuPointerGetAttributes` (unlike the singular call) answers
/// "no" for a pointer the driver does not know, so asking about host or foreign memory never makes
/// a call fail.
/// Without a driver no memory is managed, so the answer is then "no" rather than an error.
pub(crate) fn pointer_is_managed(ptr: DevicePtr) -> Result<bool> {
    if super::ensure_driver().is_err() {
        return Ok(false);
    }
    ensure_context()?;
    let mut managed: u32 = 0;
    let mut attribute = sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_IS_MANAGED;
    let mut data: *mut std::ffi::c_void = (&mut managed as *mut u32).cast();
    // SAFETY: a context is current; one attribute and one out pointer to a u32 (the attribute's
    // documented type, a boolean as unsigned int) are passed.
    check(unsafe { sys::cuPointerGetAttributes(1, &mut attribute, &mut data, ptr.raw()) }, "cuPointerGetAttributes")?;
    Ok(managed != 0)
}

/// What the driver knows of an address (see [`pointer_memory_type`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PointerInfo {
    /// `CU_POINTER_ATTRIBUTE_MEMORY_TYPE`: 0 for memory the driver does not know (pageable host
    /// memory, or no memory at all), `CU_MEMORYTYPE_HOST` for page-locked host memory,
    /// `CU_MEMORYTYPE_DEVICE` for device memory.
    pub memory_type: u32,
    /// `CU_POINTER_ATTRIBUTE_IS_MANAGED`.
    pub managed: bool,
    /// `CU_POINTER_ATTRIBUTE_RANGE_START_ADDR`: where the allocation holding the address starts
    /// (for mapped virtual memory, the reserved range it lies in). 0 for an unknown address.
    pub range_start: usize,
    /// `CU_POINTER_ATTRIBUTE_RANGE_SIZE`: the bytes of that allocation. 0 for an unknown address.
    pub range_size: usize,
}

/// What the driver knows of an address: its memory type, whether it is managed, and the
/// allocation it lies in. As [`pointer_is_managed`], asked with `cuPointerGetAttributes`, which
/// answers 0 for each attribute of an unknown address instead of failing. None without a driver
/// (every address is then host memory).
pub(crate) fn pointer_memory_type(ptr: DevicePtr) -> Result<Option<PointerInfo>> {
    if super::ensure_driver().is_err() {
        return Ok(None);
    }
    ensure_context()?;
    let (mut memory_type, mut managed): (u32, u32) = (0, 0);
    let (mut range_start, mut range_size): (sys::CUdeviceptr, usize) = (0, 0);
    let mut attributes = [
        sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_IS_MANAGED,
        sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    ];
    let mut data: [*mut std::ffi::c_void; 4] = [
        (&mut memory_type as *mut u32).cast(),
        (&mut managed as *mut u32).cast(),
        (&mut range_start as *mut sys::CUdeviceptr).cast(),
        (&mut range_size as *mut usize).cast(),
    ];
    // SAFETY: a context is current; four attributes and four out pointers of the attributes'
    // documented types (a CUmemorytype and a boolean as unsigned int, a CUdeviceptr, a size_t)
    // are passed.
    check(
        unsafe { sys::cuPointerGetAttributes(4, attributes.as_mut_ptr(), data.as_mut_ptr(), ptr.raw()) },
        "cuPointerGetAttributes",
    )?;
    Ok(Some(PointerInfo { memory_type, managed: managed != 0, range_start: range_start as usize, range_size }))
}

/// Migrates `bytes` of managed memory at `ptr` to `device`, in stream order on `stream`
/// (`cuMemPrefetchAsync_v2`, or `cuMemPrefetchAsync` on drivers before 12.2); a negative device
/// (`cudaCpuDeviceId`, -1) means host memory. Only for managed memory: callers check with
/// [`pointer_is_managed`]. Migration moves pages, not data: it changes no byte of the range.
pub(crate) fn mem_prefetch_async(ptr: DevicePtr, bytes: usize, device: DeviceId, stream: StreamHandle) -> Result<()> {
    let entry = entry_point(Versioned::Prefetch)?;
    ensure_context()?;
    let status = match entry {
        EntryPoint::Newer => {
            let location = if device.0 < 0 {
                sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST, id: 0 }
            } else {
                sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: device.0 }
            };
            // SAFETY: the driver exports the symbol (entry_point) and a context is current; the
            // range is managed memory (the caller's check) and a bad stream handle is the
            // caller's contract, as for every stream-ordered call.
            unsafe { sys::cuMemPrefetchAsync_v2(ptr.raw(), bytes, location, 0, stream.raw()) }
        }
        #[cfg(feature = "cuda-12")]
        EntryPoint::Older => {
            let device = if device.0 < 0 { super::CU_DEVICE_CPU } else { device.0 };
            // SAFETY: as for cuMemPrefetchAsync_v2 above, with a device ordinal for the location.
            unsafe { sys::cuMemPrefetchAsync(ptr.raw(), bytes, device, stream.raw()) }
        }
        _ => return Err(missing(Versioned::Prefetch)),
    };
    check(status, "cuMemPrefetchAsync")
}
