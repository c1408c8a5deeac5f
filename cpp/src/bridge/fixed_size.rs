//! `fixed_size_memory_resource`: its constructor and its block size.

use super::ffi::Outcome;
use super::handle::{query_outcome, RustResource};
use rmm::resource::{FixedSizeMemoryResource, SharedResource};
use std::sync::Arc;

type FixedSize = FixedSizeMemoryResource<SharedResource>;

/// Blocks of `block_size` bytes (rounded up to 256) from `upstream`, `blocks_to_preallocate` of
/// them taken at once.
pub(crate) fn new_fixed_size_memory_resource(
    upstream: &RustResource,
    block_size: usize,
    blocks_to_preallocate: usize,
) -> Box<RustResource> {
    RustResource::make("fixed_size_memory_resource", || {
        Ok(Arc::new(FixedSize::new(upstream.shared()?.clone(), block_size, blocks_to_preallocate)?) as SharedResource)
    })
}

/// The size in bytes of every block.
pub(crate) fn fixed_size_block_size(r: &RustResource) -> Outcome {
    query_outcome("get_block_size", || {
        Ok(r.kind::<FixedSize>("get_block_size", "fixed_size_memory_resource")?.block_size())
    })
}
