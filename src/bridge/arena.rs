//! Bridge constructor of the arena resource (`rmm::mr::arena_memory_resource`).

use super::resources::RustResource;
use crate::resource::{ArenaMemoryResource, SharedResource};
use std::sync::Arc;

/// An arena of `arena_size` bytes (half the device's free memory when `has_arena_size` is false)
/// taken from `upstream`.
pub(crate) fn new_arena_memory_resource(
    upstream: &RustResource,
    arena_size: usize,
    has_arena_size: bool,
    dump_log_on_failure: bool,
) -> Box<RustResource> {
    RustResource::make("arena_memory_resource", || {
        let upstream = upstream.shared()?.clone();
        let size = has_arena_size.then_some(arena_size);
        Ok(Arc::new(ArenaMemoryResource::new(upstream, size, dump_log_on_failure)?) as SharedResource)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::resources::new_host_memory_resource;

    #[test]
    fn arenas_are_made_or_report_why_not() {
        let host = new_host_memory_resource();
        let arena = new_arena_memory_resource(&host, 4 << 20, true, false);
        assert!(arena.shared().is_ok());
        let small = new_arena_memory_resource(&host, 1 << 19, true, false);
        assert!(matches!(small.shared(), Err(crate::Error::InvalidArgument(_))));
    }
}
