//! What the driver and device support, asked before a resource relies on it (RMM's
//! `rmm/detail/runtime_capabilities.hpp` and `is_system_memory_supported`).
//!
//! Every check asks only what the running driver can answer (an attribute newer than the driver is
//! not queried, a driver function newer than the driver is not called), so no check makes a
//! driver call fail: sanitizers report every failing call.

use crate::device::DeviceId;
use crate::driver::{self, device_attribute};
use crate::error::Result;
use cudarc::driver::sys::CUdevice_attribute as Attr;

/// The driver version from which memory pools exist (`cudaMallocAsync`, CUDA 11.2).
pub const MIN_ASYNC_ALLOC_DRIVER: i32 = 11020;
/// The driver version from which the supported export handle types can be asked (CUDA 11.3).
pub const MIN_HANDLE_TYPES_DRIVER: i32 = 11030;
/// The driver version from which the fabric handle type can be asked about (CUDA 12.3).
pub const MIN_FABRIC_DRIVER: i32 = 12030;
/// The driver version from which hardware decompression is supported (RMM's
/// `RMM_MIN_HWDECOMPRESS_CUDA_VERSION`).
pub const MIN_HWDECOMPRESS_DRIVER: i32 = 12080;
/// The driver version from which pools of managed memory exist (RMM's
/// `RMM_MIN_ASYNC_MANAGED_ALLOC_CUDA_VERSION`).
pub const MIN_ASYNC_MANAGED_ALLOC_DRIVER: i32 = 13000;

/// How allocations of a memory pool may be exported to other processes: RMM's
/// `cuda_async_memory_resource::allocation_handle_type`, with the driver's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum AllocationHandleType {
    /// No export.
    None = 0,
    /// A POSIX file descriptor.
    PosixFileDescriptor = 1,
    /// A Win32 NT handle.
    Win32 = 2,
    /// A Win32 KMT handle.
    Win32Kmt = 4,
    /// A fabric handle (multi-node NVLink).
    Fabric = 8,
}

impl AllocationHandleType {
    /// The type with the driver's value `bits`, if it is one.
    pub fn from_bits(bits: u32) -> Option<Self> {
        [Self::None, Self::PosixFileDescriptor, Self::Win32, Self::Win32Kmt, Self::Fabric]
            .into_iter()
            .find(|t| *t as u32 == bits)
    }
}

/// The driver's version, as `1000 * major + 10 * minor`.
pub fn driver_version() -> Result<i32> {
    driver::ensure_driver()?;
    driver::driver_version()
}

fn attribute_is_one(device: DeviceId, attribute: Attr) -> Result<bool> {
    Ok(device_attribute(device, attribute)? == 1)
}

/// Whether `device` supports the stream-ordered allocator (`cudaMallocAsync`, memory pools).
pub fn async_alloc_supported(device: DeviceId) -> Result<bool> {
    Ok(driver_version()? >= MIN_ASYNC_ALLOC_DRIVER
        && attribute_is_one(device, Attr::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)?)
}

/// The export handle types memory pools of `device` support, as the driver's bit mask (0 where
/// the driver cannot say).
pub fn supported_export_handle_types(device: DeviceId) -> Result<u32> {
    if driver_version()? < MIN_HANDLE_TYPES_DRIVER {
        return Ok(0);
    }
    let mut mask = device_attribute(device, Attr::CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES)? as u32;
    // Fabric handles also need the device's own fabric support, which older drivers cannot report.
    let fabric = AllocationHandleType::Fabric as u32;
    if mask & fabric != 0
        && (driver_version()? < MIN_FABRIC_DRIVER
            || !attribute_is_one(device, Attr::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED)?)
    {
        mask &= !fabric;
    }
    Ok(mask)
}

/// Whether pools of `device` may export their allocations as `handle_types` (a bit mask of
/// [`AllocationHandleType`] values; 0, none, is always supported).
pub fn export_handle_type_supported(device: DeviceId, handle_types: u32) -> Result<bool> {
    if handle_types == 0 {
        return Ok(true);
    }
    Ok(supported_export_handle_types(device)? & handle_types == handle_types)
}

/// Whether the driver supports hardware decompression (12.8 or newer).
pub fn hw_decompress_supported() -> Result<bool> {
    Ok(driver_version()? >= MIN_HWDECOMPRESS_DRIVER)
}

/// Whether `device` can access managed memory while the host does (needed for prefetching and
/// for pools of managed memory).
pub fn concurrent_managed_access(device: DeviceId) -> Result<bool> {
    attribute_is_one(device, Attr::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)
}

/// Whether `device` has pools of managed memory: concurrent managed access, a 13.0 driver and a
/// CUDA 13 build ([`build_cuda_major`](crate::build_cuda_major): CUDA 12 has no such pools, as in
/// RMM's CUDA 12 builds).
pub fn async_managed_alloc_supported(device: DeviceId) -> Result<bool> {
    Ok(crate::build_cuda_major() >= 13
        && concurrent_managed_access(device)?
        && driver_version()? >= MIN_ASYNC_MANAGED_ALLOC_DRIVER)
}

/// Whether `device` shares physical memory with the host (an integrated GPU).
pub fn device_integrated_memory(device: DeviceId) -> Result<bool> {
    attribute_is_one(device, Attr::CU_DEVICE_ATTRIBUTE_INTEGRATED)
}

/// Whether `device` can access memory from the system allocator (`malloc`): HMM or ATS
/// (`CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`).
pub fn system_memory_supported(device: DeviceId) -> Result<bool> {
    attribute_is_one(device, Attr::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_types_have_the_drivers_values() {
        for t in [
            AllocationHandleType::None,
            AllocationHandleType::PosixFileDescriptor,
            AllocationHandleType::Win32,
            AllocationHandleType::Win32Kmt,
            AllocationHandleType::Fabric,
        ] {
            assert_eq!(AllocationHandleType::from_bits(t as u32), Some(t));
        }
        assert_eq!(AllocationHandleType::Fabric as u32, 0x8);
        assert_eq!(AllocationHandleType::from_bits(3), None);
        assert_eq!(AllocationHandleType::from_bits(0x10), None);
    }

    #[test]
    fn none_is_supported_without_asking_the_driver() {
        assert_eq!(export_handle_type_supported(DeviceId(0), 0), Ok(true));
    }

    #[test]
    fn missing_driver_is_an_error_not_a_panic() {
        if crate::cuda_available() {
            return;
        }
        assert!(system_memory_supported(DeviceId(0)).is_err());
        assert!(async_alloc_supported(DeviceId(0)).is_err());
        assert!(export_handle_type_supported(DeviceId(0), 1).is_err());
    }
}
