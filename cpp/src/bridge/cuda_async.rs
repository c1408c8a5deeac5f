//! The cuda_async family ([`AsyncResource`]: `cuda_async_memory_resource`, its view and its
//! managed variant), reached through the trait object: their constructors and the pool they
//! allocate from.

use super::ffi::Outcome;
use super::outcome::{answer, Context};
use super::resource::dynamic_family;
use rmm::capabilities::AllocationHandleType;
use rmm::error::Error;
use rmm::resource::cuda_async_view::async_pool_of;
use rmm::resource::{
    CudaAsyncManagedMemoryResource, CudaAsyncMemoryResource, CudaAsyncViewMemoryResource, SharedResource,
};
use std::sync::Arc;

dynamic_family!(
    /// A handle of the cuda_async family.
    AsyncResource,
    rmm_rs_async_allocate,
    rmm_rs_async_deallocate,
    new_moved_from_async_resource
);

/// A size whose `has_` flag is false was not given (RMM's default applies). `export_handle_type`
/// is the value of RMM's `allocation_handle_type`; one that is no such value, or that the device
/// does not support, is refused (`rmm::logic_error`) before any pool is made.
pub(crate) fn new_cuda_async_memory_resource(
    initial_pool_size: usize,
    has_initial_pool_size: bool,
    release_threshold: usize,
    has_release_threshold: bool,
    export_handle_type: u32,
) -> Box<AsyncResource> {
    AsyncResource::make("cuda_async_memory_resource", || {
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
pub(crate) fn new_cuda_async_view_memory_resource(pool: usize) -> Box<AsyncResource> {
    AsyncResource::make("cuda_async_view_memory_resource", || {
        // SAFETY: the C++ contract of cuda_async_view_memory_resource: the pool outlives the view.
        let view = unsafe { CudaAsyncViewMemoryResource::new(pool as rmm::resource::RawMemoryPool) }?;
        Ok(Arc::new(view) as SharedResource)
    })
}

pub(crate) fn new_cuda_async_managed_memory_resource() -> Box<AsyncResource> {
    AsyncResource::make("cuda_async_managed_memory_resource", || {
        Ok(Arc::new(CudaAsyncManagedMemoryResource::new()?) as SharedResource)
    })
}

impl AsyncResource {
    /// The `CUmemoryPool` the resource allocates from.
    pub(crate) fn pool_handle(&self) -> Outcome {
        answer("pool_handle", Context::Construct, || {
            let resource = self.0.shared()?;
            Ok(async_pool_of(&**resource).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "pool_handle: the resource is a {}, not of the cuda_async family",
                    self.0.name()
                ))
            })?)
        })
    }
}
