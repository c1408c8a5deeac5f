//! `limiting_resource_adaptor` in the adaptor family: its constructor and its queries.

use super::adaptors::AdaptorResource;
use super::ffi::Outcome;
use super::outcome::{answer, Context};
use super::resource::AnyResource;
use rmm::adaptor::LimitingResourceAdaptor;
use rmm::resource::SharedResource;
use std::sync::Arc;

type Limiting = LimitingResourceAdaptor<SharedResource>;

/// RMM's class name, which a query of it asked of another adaptor names.
const KIND: &str = "limiting_resource_adaptor";

/// Counts each allocation as its size rounded up to `alignment` (a power of two), as RMM does.
pub(crate) fn new_limiting_adaptor(
    upstream: &AnyResource,
    allocation_limit: usize,
    alignment: usize,
) -> Box<AdaptorResource> {
    AdaptorResource::make(KIND, || {
        let limiting = Limiting::with_alignment(upstream.shared()?.clone(), allocation_limit, alignment)?;
        Ok(Arc::new(limiting) as SharedResource)
    })
}

impl AdaptorResource {
    /// Bytes allocated through the adaptor (each rounded up to its alignment).
    pub(crate) fn limiting_allocated_bytes(&self) -> Outcome {
        answer("get_allocated_bytes", Context::Construct, || {
            Ok(self.resource().kind::<Limiting>("get_allocated_bytes", KIND)?.allocated_bytes())
        })
    }

    /// The limit given at construction.
    pub(crate) fn limiting_allocation_limit(&self) -> Outcome {
        answer("get_allocation_limit", Context::Construct, || {
            Ok(self.resource().kind::<Limiting>("get_allocation_limit", KIND)?.allocation_limit())
        })
    }
}
