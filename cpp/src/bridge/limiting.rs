//! `limiting_resource_adaptor`: its constructor and its queries.

use super::ffi::Outcome;
use super::handle::{query_outcome, RustResource};
use rmm::adaptor::LimitingResourceAdaptor;
use rmm::resource::SharedResource;
use std::sync::Arc;

type Limiting = LimitingResourceAdaptor<SharedResource>;

/// Counts each allocation as its size rounded up to `alignment` (a power of two), as RMM does.
pub(crate) fn new_limiting_adaptor(
    upstream: &RustResource,
    allocation_limit: usize,
    alignment: usize,
) -> Box<RustResource> {
    RustResource::make("limiting_resource_adaptor", || {
        let limiting = Limiting::with_alignment(upstream.shared()?.clone(), allocation_limit, alignment)?;
        Ok(Arc::new(limiting) as SharedResource)
    })
}

/// Bytes allocated through the adaptor (each rounded up to its alignment).
pub(crate) fn limiting_allocated_bytes(r: &RustResource) -> Outcome {
    query_outcome("get_allocated_bytes", || {
        Ok(r.kind::<Limiting>("get_allocated_bytes", "limiting_resource_adaptor")?.allocated_bytes())
    })
}

/// The limit given at construction.
pub(crate) fn limiting_allocation_limit(r: &RustResource) -> Outcome {
    query_outcome("get_allocation_limit", || {
        Ok(r.kind::<Limiting>("get_allocation_limit", "limiting_resource_adaptor")?.allocation_limit())
    })
}
