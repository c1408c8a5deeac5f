//! `binning_memory_resource`: its constructor and its bins.

use super::ffi::{ErrorKind, Outcome};
use super::handle::RustResource;
use super::outcome::{guard_outcome, Context};
use rmm::resource::{BinningMemoryResource, SharedResource};
use std::sync::Arc;

type Binning = BinningMemoryResource<SharedResource>;

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
        let binning = match r.kind::<Binning>("add_bin", "binning_memory_resource") {
            Ok(b) => b,
            Err(e) => return Outcome::from_error(&e, Context::Construct),
        };
        match binning.add_bin(allocation_size, bin) {
            Ok(()) => Outcome::ok(0),
            // A fixed-size bin whose first chunk the upstream could not give fails as an allocation.
            Err(e) => Outcome::from_error(&e, if e.is_bad_alloc() { Context::Allocate } else { Context::Construct }),
        }
    })
}
