//! The bridge for the `cuda_async` family (owning, view, managed), the system and SAM-headroom
//! resources, and the capability checks of `rmm/detail/runtime_capabilities.hpp`.

use super::ffi::{Capability, ErrorKind, Outcome};
use super::outcome::{guard_outcome, Context};
use super::resources::RustResource;
use rmm::capabilities::{self, AllocationHandleType};
use rmm::device::DeviceId;
use rmm::error::{Error, Result};
use rmm::resource::{
    CudaAsyncManagedMemoryResource, CudaAsyncMemoryResource, CudaAsyncViewMemoryResource, SamHeadroomMemoryResource,
    SharedResource, SystemMemoryResource,
};
use std::sync::Arc;

/// A size whose `has_` flag is false was not given (RMM's default applies). `export_handle_type`
/// is the value of RMM's `allocation_handle_type`; one that is no such value, or that the device
/// does not support, is refused (`rmm::logic_error`) before any pool is made.
pub(crate) fn new_cuda_async_memory_resource(
    initial_pool_size: usize,
    has_initial_pool_size: bool,
    release_threshold: usize,
    has_release_threshold: bool,
    export_handle_type: u32,
) -> Box<RustResource> {
    RustResource::make("cuda_async_memory_resource", || {
        let handle_type = AllocationHandleType::from_bits(export_handle_type).ok_or_else(|| {
            Error::Unsupported(format!("Requested IPC memory handle type not supported: {export_handle_type:#x}"))
        })?;
        let made = CudaAsyncMemoryResource::with_export_handle_type(
            has_initial_pool_size.then_some(initial_pool_size),
            has_release_threshold.then_some(release_threshold),
            handle_type,
        )?;
        Ok(Arc::new(made) as SharedResource)
    })
}

/// A view of the `cudaMemPool_t` `pool` (0 for an empty view), which C++ keeps alive.
pub(crate) fn new_cuda_async_view_memory_resource(pool: usize) -> Box<RustResource> {
    RustResource::make("cuda_async_view_memory_resource", || {
        // SAFETY: the C++ contract of cuda_async_view_memory_resource: the pool outlives the view.
        let view = unsafe { CudaAsyncViewMemoryResource::new(pool as cudarc::driver::sys::CUmemoryPool) }?;
        Ok(Arc::new(view) as SharedResource)
    })
}

pub(crate) fn new_cuda_async_managed_memory_resource() -> Box<RustResource> {
    RustResource::make("cuda_async_managed_memory_resource", || {
        Ok(Arc::new(CudaAsyncManagedMemoryResource::new()?) as SharedResource)
    })
}

pub(crate) fn new_system_memory_resource() -> Box<RustResource> {
    RustResource::make("system_memory_resource", || Ok(Arc::new(SystemMemoryResource::new()?) as SharedResource))
}

pub(crate) fn new_sam_headroom_memory_resource(headroom: usize) -> Box<RustResource> {
    RustResource::make("sam_headroom_memory_resource", || {
        Ok(Arc::new(SamHeadroomMemoryResource::new(headroom)?) as SharedResource)
    })
}

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
