//! The questions to the driver: the capability checks of `rmm/detail/runtime_capabilities.hpp`,
//! and `rmm::prefetch`.

use super::ffi::{Capability, Outcome};
use super::outcome::{answer, Context};
use super::resource::stream_view;
use rmm::capabilities;
use rmm::device::DeviceId;
use rmm::error::{Error, Result};

/// Answers `capability` for device ordinal `device` (`handle_types`: the export types asked
/// about): `ptr` is 1 or 0, or the outcome is the driver's error (`rmm::cuda_error`).
pub(crate) fn runtime_capability(capability: Capability, device: i32, handle_types: u32) -> Outcome {
    answer("runtime_capability", Context::Driver, || Ok(usize::from(has(capability, DeviceId(device), handle_types)?)))
}

/// `rmm::prefetch`: prefetches managed memory to `device` on `stream`; other memory is left
/// alone. A failed driver call is a `cuda_error`.
///
/// # Safety
/// `stream` names a live stream (or a default one) for the call: RMM's contract for
/// `cuda_stream_view`, which the C++ caller keeps.
pub(crate) unsafe fn prefetch_memory(ptr: usize, bytes: usize, device: i32, stream: usize) -> Outcome {
    answer("prefetch", Context::Driver, || {
        // SAFETY: the caller's contract: `stream` is live for the call.
        let view = unsafe { stream_view(stream) };
        rmm::prefetch::prefetch(ptr as *const u8, bytes, DeviceId(device), view)?;
        Ok(0)
    })
}

fn has(capability: Capability, device: DeviceId, handle_types: u32) -> Result<bool> {
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
