//! The arena family ([`ArenaResource`]): `arena_memory_resource`, which C++ reaches without
//! dynamic dispatch; its constructor.

use super::resource::AnyResource;
use rmm::resource::{ArenaMemoryResource, SharedResource};
use std::sync::Arc;

/// The arena as the bridge makes it: over a resource of either side.
pub(super) type Arena = ArenaMemoryResource<SharedResource>;

/// A handle of the arena family.
pub struct ArenaResource {
    pub(super) any: AnyResource,
    /// The same resource as `any`, typed: `None` when it could not be made (or was moved from).
    pub(super) arena: Option<Arc<Arena>>,
}

impl ArenaResource {
    pub(crate) fn resource(&self) -> &AnyResource {
        &self.any
    }
}

/// An arena of `arena_size` bytes (half the device's free memory when `has_arena_size` is false)
/// taken from `upstream`.
pub(crate) fn new_arena_memory_resource(
    upstream: &AnyResource,
    arena_size: usize,
    has_arena_size: bool,
    dump_log_on_failure: bool,
) -> Box<ArenaResource> {
    let mut arena = None;
    let any = AnyResource::make("arena_memory_resource", || {
        let upstream = upstream.shared()?.clone();
        let made = Arc::new(Arena::new(upstream, has_arena_size.then_some(arena_size), dump_log_on_failure)?);
        arena = Some(Arc::clone(&made));
        Ok(made as SharedResource)
    });
    Box::new(ArenaResource { any, arena })
}

/// The handle a moved-from arena calls.
pub(crate) fn new_moved_from_arena_resource() -> Box<ArenaResource> {
    Box::new(ArenaResource { any: AnyResource::moved_from(), arena: None })
}

#[cfg(test)]
mod tests {
    use super::super::plain::new_host_memory_resource;
    use super::*;

    #[test]
    fn arenas_are_made_or_report_why_not() {
        let host = new_host_memory_resource();
        let arena = new_arena_memory_resource(host.resource(), 4 << 20, true, false);
        assert!(arena.resource().shared().is_ok());
        let small = new_arena_memory_resource(host.resource(), 1 << 19, true, false);
        assert!(matches!(small.resource().shared(), Err(rmm::Error::InvalidArgument(_))));
        assert!(small.arena.is_none());
    }
}
