//! Bridge constructor of the arena resource (`rmm::mr::arena_memory_resource`).

use super::handle::{Arena, Direct, RustResource};
use rmm::resource::SharedResource;
use std::sync::Arc;

/// An arena of `arena_size` bytes (half the device's free memory when `has_arena_size` is false)
/// taken from `upstream`.
pub(crate) fn new_arena_memory_resource(
    upstream: &RustResource,
    arena_size: usize,
    has_arena_size: bool,
    dump_log_on_failure: bool,
) -> Box<RustResource> {
    let mut direct = Direct::None;
    let mut made = RustResource::make("arena_memory_resource", || {
        let upstream = upstream.shared()?.clone();
        let size = has_arena_size.then_some(arena_size);
        let arena = Arc::new(Arena::new(upstream, size, dump_log_on_failure)?);
        direct = Direct::Arena(Arc::clone(&arena));
        Ok(arena as SharedResource)
    });
    // Calls from C++ reach the arena without dynamic dispatch, as they reach the pool.
    made.direct = direct;
    made
}

#[cfg(test)]
mod tests {
    use super::super::plain::new_host_memory_resource;
    use super::*;

    #[test]
    fn arenas_are_made_or_report_why_not() {
        let host = new_host_memory_resource();
        let arena = new_arena_memory_resource(&host, 4 << 20, true, false);
        assert!(arena.shared().is_ok());
        let small = new_arena_memory_resource(&host, 1 << 19, true, false);
        assert!(matches!(small.shared(), Err(rmm::Error::InvalidArgument(_))));
    }
}
