//! The resources with nothing to ask beyond the calls every handle answers: cuda, managed, pinned
//! host and host memory, a C++ resource seen from Rust, and the stand-in of a moved-from resource.

use super::cpp_upstream::CppUpstream;
use super::ffi;
use super::handle::RustResource;
use rmm::error::Error;
use rmm::per_device_resource;
use rmm::resource::{HostMemoryResource, ManagedMemoryResource, PinnedHostMemoryResource, SharedResource};
use std::sync::Arc;

/// Host memory from the global allocator: lets the bridge be tested without a GPU.
pub(crate) fn new_host_memory_resource() -> Box<RustResource> {
    RustResource::make("host_memory_resource", || Ok(Arc::new(HostMemoryResource::new()) as SharedResource))
}

/// A C++ resource that is not ours, as a Rust resource (for example a pool's upstream).
pub(crate) fn new_cpp_resource_wrapper(resource: cxx::UniquePtr<ffi::CppResource>) -> Box<RustResource> {
    RustResource::make("C++ resource", || {
        CppUpstream::new(resource)
            .map(|r| Arc::new(r) as SharedResource)
            .ok_or_else(|| Error::InvalidArgument("null C++ resource".into()))
    })
}

/// The resource of every C++ `cuda_memory_resource`: the Rust per-device table's initial resource
/// itself, so that the two tables can tell "still the initial resource" by identity.
pub(crate) fn new_cuda_memory_resource() -> Box<RustResource> {
    RustResource::make("cuda_memory_resource", || Ok(per_device_resource::initial_resource()))
}

/// What a moved-from C++ resource calls instead of its (gone) handle: it owns nothing, so every
/// allocation fails and every free is refused (and reported) by the construction error.
pub(crate) fn new_moved_from_resource() -> Box<RustResource> {
    RustResource::make("moved-from resource", || {
        Err(Error::InvalidArgument("the resource was moved from and owns no memory; nothing was freed".into()))
    })
}

/// `managed_memory_resource`.
pub(crate) fn new_managed_memory_resource() -> Box<RustResource> {
    RustResource::make("managed_memory_resource", || Ok(Arc::new(ManagedMemoryResource::new()) as SharedResource))
}

/// `pinned_host_memory_resource`.
pub(crate) fn new_pinned_host_memory_resource() -> Box<RustResource> {
    RustResource::make(
        "pinned_host_memory_resource",
        || Ok(Arc::new(PinnedHostMemoryResource::new()) as SharedResource),
    )
}
