//! The plain family ([`PlainResource`]): the resources with nothing to ask beyond what every
//! handle answers, reached through the trait object: cuda, managed, pinned host, system and
//! SAM-headroom memory, host memory, the callback resource, a C++ resource seen from Rust, and
//! whatever the Rust per-device table holds (`per_device.rs`).

use super::cpp_upstream::{to_error, CppUpstream};
use super::ffi::{self, Outcome};
use super::resource::dynamic_family;
use parking_lot::ReentrantMutex;
use rmm::error::{Error, Result};
use rmm::per_device_resource;
use rmm::resource::{
    CallbackMemoryResource, HostMemoryResource, ManagedMemoryResource, PinnedHostMemoryResource,
    SamHeadroomMemoryResource, SharedResource, SystemMemoryResource,
};
use rmm::stream::CudaStreamView;
use std::sync::Arc;

// SAFETY: the object holds the user's two `std::function`s and their arguments, which RMM calls
// from whichever thread allocates: they are tied to no thread. They need not be thread-safe,
// though, so the type is not `Sync`, and the callback resource calls them under one lock.
unsafe impl Send for ffi::CppAllocationCallbacks {}

dynamic_family!(
    /// A handle of the plain family.
    PlainResource,
    rmm_rs_plain_allocate,
    rmm_rs_plain_deallocate,
    new_moved_from_plain_resource
);

/// Host memory from the global allocator: lets the bridge be tested without a GPU.
pub(crate) fn new_host_memory_resource() -> Box<PlainResource> {
    PlainResource::make("host_memory_resource", || Ok(Arc::new(HostMemoryResource::new()) as SharedResource))
}

/// A C++ resource that is not ours, as a Rust resource (for example a pool's upstream).
pub(crate) fn new_cpp_resource_wrapper(resource: cxx::UniquePtr<ffi::CppResource>) -> Box<PlainResource> {
    PlainResource::make("C++ resource", || {
        CppUpstream::new(resource)
            .map(|r| Arc::new(r) as SharedResource)
            .ok_or_else(|| Error::InvalidArgument("null C++ resource".into()))
    })
}

/// The resource of every C++ `cuda_memory_resource`: the Rust per-device table's initial resource
/// itself, so that the two tables can tell "still the initial resource" by identity.
pub(crate) fn new_cuda_memory_resource() -> Box<PlainResource> {
    PlainResource::make("cuda_memory_resource", || Ok(per_device_resource::initial_resource()))
}

/// `managed_memory_resource`.
pub(crate) fn new_managed_memory_resource() -> Box<PlainResource> {
    PlainResource::make("managed_memory_resource", || Ok(Arc::new(ManagedMemoryResource::new()) as SharedResource))
}

/// `pinned_host_memory_resource`.
pub(crate) fn new_pinned_host_memory_resource() -> Box<PlainResource> {
    PlainResource::make("pinned_host_memory_resource", || {
        Ok(Arc::new(PinnedHostMemoryResource::new()) as SharedResource)
    })
}

/// `system_memory_resource`: memory from the system allocator, where the device can reach it.
pub(crate) fn new_system_memory_resource() -> Box<PlainResource> {
    PlainResource::make("system_memory_resource", || Ok(Arc::new(SystemMemoryResource::new()?) as SharedResource))
}

/// `sam_headroom_memory_resource`: system memory, leaving `headroom` bytes of the device free.
pub(crate) fn new_sam_headroom_memory_resource(headroom: usize) -> Box<PlainResource> {
    PlainResource::make("sam_headroom_memory_resource", || {
        Ok(Arc::new(SamHeadroomMemoryResource::new(headroom)?) as SharedResource)
    })
}

/// The C++ callbacks as the two closures of a [`CallbackMemoryResource`]; an exception of the
/// allocate callback comes back as an error of its kind.
pub(crate) fn new_callback_memory_resource(
    callbacks: cxx::UniquePtr<ffi::CppAllocationCallbacks>,
) -> Box<PlainResource> {
    PlainResource::make("callback_memory_resource", || {
        if callbacks.is_null() {
            return Err(Error::InvalidArgument("null allocation callbacks".into()));
        }
        // One thread in the user's callbacks at a time: a pool over this resource grows its
        // shards under separate locks. Reentrant, so a callback that calls back into this
        // resource on its own thread does not deadlock.
        let callbacks = Arc::new(ReentrantMutex::new(callbacks));
        let dealloc = callbacks.clone();
        let allocate = move |bytes: usize, _alignment: usize, stream: CudaStreamView| -> Result<*mut u8> {
            let mut out = Outcome::ok(0);
            if let Some(c) = callbacks.lock().as_ref() {
                c.allocate(bytes, stream.handle(), &mut out);
            }
            if out.is_ok() {
                Ok(out.ptr as *mut u8)
            } else {
                Err(to_error(out, bytes))
            }
        };
        let deallocate = move |ptr: *mut u8, bytes: usize, _alignment: usize, stream: CudaStreamView| -> Result<()> {
            if let Some(c) = dealloc.lock().as_ref() {
                c.deallocate(ptr as usize, bytes, stream.handle());
            }
            Ok(())
        };
        // SAFETY: the C++ caller of `callback_memory_resource` promises its functions keep the
        // resource contract, as RMM requires of them; C++ is outside Rust's checks.
        let resource = unsafe { CallbackMemoryResource::new(allocate, deallocate) };
        Ok(Arc::new(resource) as SharedResource)
    })
}
