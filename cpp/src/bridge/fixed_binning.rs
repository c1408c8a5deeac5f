//! The bridge functions of `fixed_size_memory_resource` and `binning_memory_resource`.

use super::ffi::{ErrorKind, Outcome};
use super::outcome::{guard, guard_outcome, Context};
use super::RustResource;
use rmm::resource::{BinningMemoryResource, FixedSizeMemoryResource, SharedResource};
use std::sync::Arc;

type FixedSize = FixedSizeMemoryResource<SharedResource>;
type Binning = BinningMemoryResource<SharedResource>;

pub(crate) fn new_fixed_size_memory_resource(
    upstream: &RustResource,
    block_size: usize,
    blocks_to_preallocate: usize,
) -> Box<RustResource> {
    RustResource::make("fixed_size_memory_resource", || {
        Ok(Arc::new(FixedSize::new(upstream.shared()?.clone(), block_size, blocks_to_preallocate)?) as SharedResource)
    })
}

/// The block size of a fixed-size resource (0 for other resources).
pub(crate) fn fixed_size_block_size(r: &RustResource) -> usize {
    guard("fixed_size_block_size", |_| 0, || r.downcast::<FixedSize>().map_or(0, |f| f.block_size()))
}

/// Without `has_range`, a binning resource with no bins; with it, fixed-size bins of 2^min to
/// 2^max bytes.
pub(crate) fn new_binning_memory_resource(
    upstream: &RustResource,
    min_size_exponent: i8,
    max_size_exponent: i8,
    has_range: bool,
) -> Box<RustResource> {
    RustResource::make("binning_memory_resource", || {
        let upstream = upstream.shared()?.clone();
        let binning = if has_range {
            Binning::with_bins(upstream, min_size_exponent, max_size_exponent)?
        } else {
            Binning::new(upstream)
        };
        Ok(Arc::new(binning) as SharedResource)
    })
}

/// Adds a fixed-size bin over the binning resource's upstream.
pub(crate) fn binning_add_bin(r: &RustResource, allocation_size: usize) -> Outcome {
    add_bin(r, allocation_size, None)
}

/// Adds a bin served by `bin`.
pub(crate) fn binning_add_bin_resource(r: &RustResource, allocation_size: usize, bin: &RustResource) -> Outcome {
    guard_outcome("binning_add_bin", ErrorKind::Logic, || match bin.shared() {
        Ok(b) => add_bin(r, allocation_size, Some(b.clone())),
        Err(e) => Outcome::from_error(&e, Context::Construct),
    })
}

fn add_bin(r: &RustResource, allocation_size: usize, bin: Option<SharedResource>) -> Outcome {
    guard_outcome("binning_add_bin", ErrorKind::Logic, || {
        let Some(binning) = r.downcast::<Binning>() else {
            return Outcome::error(ErrorKind::Logic, "add_bin on a resource that is not a binning_memory_resource");
        };
        match binning.add_bin(allocation_size, bin) {
            Ok(()) => Outcome::ok(0),
            // A fixed-size bin whose first chunk the upstream could not give is out of memory.
            Err(e) => {
                Outcome::from_error(&e, if e.is_out_of_memory() { Context::Allocate } else { Context::Construct })
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::resources::{new_host_memory_resource, new_statistics_adaptor};
    use super::*;

    #[test]
    fn fixed_size_and_binning_through_the_bridge_functions() {
        let host = new_host_memory_resource();
        let fixed = new_fixed_size_memory_resource(&host, 1000, 2);
        assert!(fixed.status().is_ok(), "{}", fixed.status().message);
        assert_eq!(fixed_size_block_size(&fixed), 1024);
        assert_eq!(fixed.allocate(2000, 256, 0).kind, ErrorKind::OutOfMemory);
        assert_eq!(new_fixed_size_memory_resource(&host, 0, 2).status().kind, ErrorKind::Logic);

        let binning = new_binning_memory_resource(&host, 0, 0, false);
        let stats = new_statistics_adaptor(&host);
        assert!(binning_add_bin_resource(&binning, 4096, &stats).is_ok());
        assert!(binning_add_bin(&binning, 512).is_ok());
        assert_eq!(binning_add_bin(&binning, 0).kind, ErrorKind::Logic);
        assert_eq!(binning_add_bin(&fixed, 512).kind, ErrorKind::Logic);
        let a = binning.allocate(3000, 256, 0);
        assert!(a.is_ok());
        assert_eq!(stats.counters().allocations.value, 1, "3000 bytes went to the 4096 bin");
        assert!(binning.try_deallocate(a.ptr, 3000, 256, 0).is_ok());
        assert_eq!(stats.counters().allocations.value, 0);
        assert_eq!(new_binning_memory_resource(&host, -1, 3, true).status().kind, ErrorKind::Logic);
    }
}
