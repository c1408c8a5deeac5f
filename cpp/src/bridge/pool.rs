//! `pool_memory_resource`: its constructor, its query and its release.

use super::ffi::Outcome;
use super::handle::{query_outcome, Direct, Pool, RustResource};
use rmm::resource::SharedResource;
use std::sync::Arc;

/// A pool over `upstream` of `initial_size` bytes, growing up to `maximum_size` when `has_maximum`.
pub(crate) fn new_pool_memory_resource(
    upstream: &RustResource,
    initial_size: usize,
    maximum_size: usize,
    has_maximum: bool,
) -> Box<RustResource> {
    let mut direct = Direct::None;
    let mut made = RustResource::make("pool_memory_resource", || {
        let pool = Arc::new(Pool::new(upstream.shared()?.clone(), initial_size, has_maximum.then_some(maximum_size))?);
        direct = Direct::Pool(Arc::clone(&pool));
        Ok(pool as SharedResource)
    });
    // Calls from C++ reach the pool without dynamic dispatch.
    made.direct = direct;
    made
}

/// Bytes the pool took from its upstream (handed out and free).
pub(crate) fn pool_size(r: &RustResource) -> Outcome {
    query_outcome("pool_size", || Ok(r.kind::<Pool>("pool_size", "pool_memory_resource")?.pool_size()))
}

/// Gives the pool's wholly free chunks back to its upstream, after synchronising every stream
/// (see `PoolMemoryResource::release`); the bytes given back.
pub(crate) fn pool_release(r: &RustResource) -> Outcome {
    query_outcome("release", || r.kind::<Pool>("release", "pool_memory_resource")?.release())
}
