//! The capability checks of `rmm/detail/runtime_capabilities.hpp`.

use super::ffi::{Capability, ErrorKind, Outcome};
use super::outcome::{guard_outcome, Context};
use rmm::capabilities;
use rmm::device::DeviceId;
use rmm::error::{Error, Result};

/// Answers `capability` for device ordinal `device` (`handle_types`: the export types asked
/// about): `ptr` is 1 or 0, or the outcome is the driver's error (`rmm::cuda_error`).
pub(crate) fn runtime_capability(capability: Capability, device: i32, handle_types: u32) -> Outcome {
    guard_outcome("runtime_capability", ErrorKind::Cuda, || match answer(capability, DeviceId(device), handle_types) {
        Ok(yes) => Outcome::ok(usize::from(yes)),
        Err(e) => Outcome::from_error(&e, Context::Construct),
    })
}

fn answer(capability: Capability, device: DeviceId, handle_types: u32) -> Result<bool> {
    match capability {
        Capability::AsyncAlloc => capabilities::async_alloc_supported(device),
        Capability::ExportHandleType => capabilities::export_handle_type_supported(device, handle_types),
        Capability::HwDecompress => capabilities::hw_decompress_supported(),
        Capability::ConcurrentManagedAccess => capabilities::concurrent_managed_access(device),
        Capability::AsyncManagedAlloc => capabilities::async_managed_alloc_supported(device),
        Capability::DeviceIntegratedMemory => capabilities::device_integrated_memory(device),
        Capability::SystemMemory => capabilities::system_memory_supported(device),
        _ => Err(Error::InvalidArgument(format!("unknown capability {}", capability.repr))),
    }
}
