//! Virtual memory management: a range of addresses reserved without memory
//! (`cuMemAddressReserve`), physical memory created on a device (`cuMemCreate`), mapped into the
//! range and unmapped again (`cuMemMap`, `cuMemUnmap`), made accessible to devices
//! (`cuMemSetAccess`) and exported as a file descriptor (`cuMemExportToShareableHandle`).
//!
//! What a device lacks is asked of its attributes first ([`vmm_check`],
//! [`posix_fd_handles_supported`], [`can_access_peer`]), so no call is made to fail.

use super::{check, check_alloc, device_attribute, ensure_context, DeviceId, DevicePtr};
use crate::error::{Error, Result};
use cudarc::driver::sys;

type Attr = sys::CUdevice_attribute;

/// Physical memory made by [`mem_create`] (`CUmemGenericAllocationHandle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct PhysicalHandle(sys::CUmemGenericAllocationHandle);

/// [`Error::Unsupported`], naming the device, where `device` or its driver lacks virtual memory
/// management (`CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED` is 0).
pub(crate) fn vmm_check(device: DeviceId) -> Result<()> {
    if device_attribute(device, Attr::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)? == 1 {
        return Ok(());
    }
    Err(Error::Unsupported(format!(
        "device {} does not support virtual memory management (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_\
         SUPPORTED is 0): a virtual-memory pool cannot be made there; use the pool over cudaMalloc instead",
        device.0
    )))
}

/// Whether physical memory of `device` may be exported as a POSIX file descriptor
/// (`CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED`).
pub(crate) fn posix_fd_handles_supported(device: DeviceId) -> Result<bool> {
    Ok(device_attribute(device, Attr::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)? == 1)
}

/// Whether `device` can access memory of `peer` (`cuDeviceCanAccessPeer`).
pub(crate) fn can_access_peer(device: DeviceId, peer: DeviceId) -> Result<bool> {
    super::ensure_driver()?;
    let mut can = 0;
    // SAFETY: the driver is initialised; can is a valid out pointer. Bad ordinals are reported as
    // an error code.
    check(unsafe { sys::cuDeviceCanAccessPeer(&mut can, device.0, peer.0) }, "cuDeviceCanAccessPeer")?;
    Ok(can == 1)
}

/// The properties of pinned memory on `device`, exportable as a file descriptor when `posix_fd`.
fn allocation_prop(device: DeviceId, posix_fd: bool) -> sys::CUmemAllocationProp {
    // SAFETY: CUmemAllocationProp is plain C data whose all-zero pattern is valid (every enum field
    // has a 0 variant, the pointer is null); zeroing also clears the reserved bytes.
    let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location = device_location(device);
    prop.requestedHandleTypes = if posix_fd {
        sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    } else {
        sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE
    };
    prop
}

fn device_location(device: DeviceId) -> sys::CUmemLocation {
    sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: device.0 }
}

/// The recommended granularity of physical memory on `device` (`cuMemGetAllocationGranularity`,
/// `CU_MEM_ALLOC_GRANULARITY_RECOMMENDED`): sizes and offsets of every map are its multiples.
pub(crate) fn mem_recommended_granularity(device: DeviceId, posix_fd: bool) -> Result<usize> {
    ensure_context()?;
    let prop = allocation_prop(device, posix_fd);
    let mut granularity = 0usize;
    let option = sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED;
    // SAFETY: the driver is loaded and a context is current; prop is fully initialised and
    // granularity a valid out pointer.
    let status = unsafe { sys::cuMemGetAllocationGranularity(&mut granularity, &prop, option) };
    check(status, "cuMemGetAllocationGranularity")?;
    Ok(granularity)
}

/// Reserves `size` bytes of addresses aligned to `alignment` (`cuMemAddressReserve`); no memory
/// backs them until [`mem_map`].
pub(crate) fn mem_address_reserve(size: usize, alignment: usize) -> Result<DevicePtr> {
    ensure_context()?;
    let mut ptr: sys::CUdeviceptr = 0;
    // SAFETY: the driver is loaded and a context is current; ptr is a valid out pointer; no fixed
    // address is asked for (0) and the flags must be 0.
    let status = unsafe { sys::cuMemAddressReserve(&mut ptr, size, alignment, 0, 0) };
    check_alloc(status, "cuMemAddressReserve", size)?;
    Ok(DevicePtr::new(ptr as usize))
}

/// Frees a reservation made by [`mem_address_reserve`], for a destructor: errors are ignored.
///
/// # Safety
/// `[ptr, ptr + size)` is a whole reservation of [`mem_address_reserve`], freed once, with
/// nothing mapped in it any more.
pub(crate) unsafe fn mem_address_free(ptr: DevicePtr, size: usize) {
    // SAFETY: the caller frees a whole reservation it made, once, unmapped (this function's
    // contract).
    let _ = unsafe { sys::cuMemAddressFree(ptr.raw(), size) };
}

/// Creates `size` bytes (a multiple of the granularity) of pinned physical memory on `device`
/// (`cuMemCreate`), exportable as a POSIX file descriptor when `posix_fd` (which the caller
/// checked with [`posix_fd_handles_supported`]).
pub(crate) fn mem_create(device: DeviceId, size: usize, posix_fd: bool) -> Result<PhysicalHandle> {
    ensure_context()?;
    let prop = allocation_prop(device, posix_fd);
    let mut handle: sys::CUmemGenericAllocationHandle = 0;
    // SAFETY: the driver is loaded and a context is current; prop is fully initialised and handle
    // a valid out pointer; the flags must be 0.
    check_alloc(unsafe { sys::cuMemCreate(&mut handle, size, &prop, 0) }, "cuMemCreate", size)?;
    Ok(PhysicalHandle(handle))
}

/// Releases physical memory made by [`mem_create`] (`cuMemRelease`); memory still mapped stays
/// until it is unmapped.
///
/// # Safety
/// `handle` came from [`mem_create`] and is released once.
pub(crate) unsafe fn mem_release(handle: PhysicalHandle) -> Result<()> {
    // SAFETY: the caller releases a handle it made, once (this function's contract).
    check(unsafe { sys::cuMemRelease(handle.0) }, "cuMemRelease")
}

/// Maps all `size` bytes of `handle` at `ptr` (`cuMemMap`); the memory is not accessible until
/// [`mem_set_access`].
///
/// # Safety
/// `[ptr, ptr + size)` lies in a live reservation of [`mem_address_reserve`], is unmapped, and
/// `size` is the size `handle` was created with.
pub(crate) unsafe fn mem_map(ptr: DevicePtr, size: usize, handle: PhysicalHandle) -> Result<()> {
    ensure_context()?;
    // SAFETY: the range is reserved and unmapped and fits the handle (this function's contract);
    // offset and flags must be 0.
    check_alloc(unsafe { sys::cuMemMap(ptr.raw(), size, 0, handle.0, 0) }, "cuMemMap", size)
}

/// Unmaps `[ptr, ptr + size)` (`cuMemUnmap`): the whole range one [`mem_map`] mapped.
///
/// # Safety
/// The range is exactly one mapping of [`mem_map`], and no work queued or running uses it.
pub(crate) unsafe fn mem_unmap(ptr: DevicePtr, size: usize) -> Result<()> {
    // SAFETY: the caller unmaps one whole mapping that nothing uses (this function's contract).
    check(unsafe { sys::cuMemUnmap(ptr.raw(), size) }, "cuMemUnmap")
}

/// Lets `devices` read and write `[ptr, ptr + size)`, which is mapped (`cuMemSetAccess`). The
/// caller checked that each device may access the memory's device ([`can_access_peer`]).
pub(crate) fn mem_set_access(ptr: DevicePtr, size: usize, devices: &[DeviceId]) -> Result<()> {
    ensure_context()?;
    let flags = sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    let descs: Vec<sys::CUmemAccessDesc> =
        devices.iter().map(|&d| sys::CUmemAccessDesc { location: device_location(d), flags }).collect();
    // SAFETY: the driver is loaded and a context is current; descs holds descs.len() initialised
    // descriptors. A range that is not mapped is reported as an error code.
    check(unsafe { sys::cuMemSetAccess(ptr.raw(), size, descs.as_ptr(), descs.len()) }, "cuMemSetAccess")
}

/// A POSIX file descriptor for `handle`'s memory (`cuMemExportToShareableHandle`), which another
/// process imports; the caller owns the descriptor and closes it. The handle was created
/// exportable (`posix_fd` in [`mem_create`]).
pub(crate) fn mem_export_posix_fd(handle: PhysicalHandle) -> Result<i32> {
    ensure_context()?;
    let mut fd: std::ffi::c_int = -1;
    let kind = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    // SAFETY: the driver is loaded and a context is current; for a POSIX descriptor the driver
    // writes an int through the pointer; the flags must be 0.
    let status =
        unsafe { sys::cuMemExportToShareableHandle((&mut fd as *mut std::ffi::c_int).cast(), handle.0, kind, 0) };
    check(status, "cuMemExportToShareableHandle")?;
    Ok(fd)
}
