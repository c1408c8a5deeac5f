//! `system_memory_resource` and `sam_headroom_memory_resource` (system-allocated memory): their
//! constructors.

use super::handle::RustResource;
use rmm::resource::{SamHeadroomMemoryResource, SharedResource, SystemMemoryResource};
use std::sync::Arc;

/// `system_memory_resource`: memory from the system allocator, where the device can reach it.
pub(crate) fn new_system_memory_resource() -> Box<RustResource> {
    RustResource::make("system_memory_resource", || Ok(Arc::new(SystemMemoryResource::new()?) as SharedResource))
}

/// `sam_headroom_memory_resource`: system memory, leaving `headroom` bytes of the device free.
pub(crate) fn new_sam_headroom_memory_resource(headroom: usize) -> Box<RustResource> {
    RustResource::make("sam_headroom_memory_resource", || {
        Ok(Arc::new(SamHeadroomMemoryResource::new(headroom)?) as SharedResource)
    })
}
