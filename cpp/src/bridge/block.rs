//! The block family ([`BlockResource`]): `fixed_size_memory_resource` and
//! `binning_memory_resource`, which C++ reaches without dynamic dispatch (`direct.rs`); their
//! constructors, the block size and the bins.

use super::ffi::Outcome;
use super::outcome::{answer, Context};
use super::resource::AnyResource;
use rmm::resource::{BinningMemoryResource, FixedSizeMemoryResource, SharedResource};
use std::sync::Arc;

pub(super) type FixedSize = FixedSizeMemoryResource<SharedResource>;
pub(super) type Binning = BinningMemoryResource<SharedResource>;

/// The resource of a block handle, typed: what the fast path calls without the trait object.
pub(super) enum Block {
    /// A fixed-size resource.
    FixedSize(Arc<FixedSize>),
    /// A binning resource.
    Binning(Arc<Binning>),
    /// Not made (or moved from): every call goes to `any`, which holds the error.
    None,
}

/// A handle of the block family.
pub struct BlockResource {
    pub(super) any: AnyResource,
    /// The same resource as `any`, typed.
    pub(super) block: Block,
}

impl BlockResource {
    pub(crate) fn resource(&self) -> &AnyResource {
        &self.any
    }
}

/// Blocks of `block_size` bytes (rounded up to 256) from `upstream`, `blocks_to_preallocate` of
/// them taken at once.
pub(crate) fn new_fixed_size_memory_resource(
    upstream: &AnyResource,
    block_size: usize,
    blocks_to_preallocate: usize,
) -> Box<BlockResource> {
    let mut block = Block::None;
    let any = AnyResource::make("fixed_size_memory_resource", || {
        let made = Arc::new(FixedSize::new(upstream.shared()?.clone(), block_size, blocks_to_preallocate)?);
        block = Block::FixedSize(Arc::clone(&made));
        Ok(made as SharedResource)
    });
    Box::new(BlockResource { any, block })
}

/// Without `has_range`, a binning resource with no bins; with it, fixed-size bins of 2^min to
/// 2^max bytes.
pub(crate) fn new_binning_memory_resource(
    upstream: &AnyResource,
    min_size_exponent: i8,
    max_size_exponent: i8,
    has_range: bool,
) -> Box<BlockResource> {
    let mut block = Block::None;
    let any = AnyResource::make("binning_memory_resource", || {
        let upstream = upstream.shared()?.clone();
        let binning = if has_range {
            Binning::with_bins(upstream, min_size_exponent, max_size_exponent)?
        } else {
            Binning::new(upstream)
        };
        let made = Arc::new(binning);
        block = Block::Binning(Arc::clone(&made));
        Ok(made as SharedResource)
    });
    Box::new(BlockResource { any, block })
}

/// The handle a moved-from fixed-size or binning resource calls.
pub(crate) fn new_moved_from_block_resource() -> Box<BlockResource> {
    Box::new(BlockResource { any: AnyResource::moved_from(), block: Block::None })
}

impl BlockResource {
    /// The size in bytes of every block of a fixed-size resource.
    pub(crate) fn block_size(&self) -> Outcome {
        answer("get_block_size", Context::Construct, || {
            Ok(self.any.kind::<FixedSize>("get_block_size", "fixed_size_memory_resource")?.block_size())
        })
    }

    /// Adds a fixed-size bin over the binning resource's upstream.
    pub(crate) fn add_bin(&self, allocation_size: usize) -> Outcome {
        self.add(allocation_size, None)
    }

    /// Adds a bin served by `bin`.
    pub(crate) fn add_bin_resource(&self, allocation_size: usize, bin: &AnyResource) -> Outcome {
        self.add(allocation_size, Some(bin))
    }

    /// A fixed-size bin whose first chunk the upstream could not give fails as an allocation
    /// (its out-of-memory or bad_alloc error is thrown as such).
    fn add(&self, allocation_size: usize, bin: Option<&AnyResource>) -> Outcome {
        answer("binning_add_bin", Context::Construct, || {
            let bin = bin.map(AnyResource::shared).transpose()?.cloned();
            self.any.kind::<Binning>("add_bin", "binning_memory_resource")?.add_bin(allocation_size, bin)?;
            Ok(0)
        })
    }
}
