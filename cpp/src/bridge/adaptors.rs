//! The adaptor family ([`AdaptorResource`]): every resource adaptor the bridge makes, reached
//! through the trait object. The aligned, thread-safe and prefetch adaptors are made here; the
//! adaptors with queries of their own in `statistics.rs`, `tracking.rs`, `limiting.rs`,
//! `logging.rs` and `history.rs`.

use super::resource::{dynamic_family, AnyResource};
use rmm::adaptor::{AlignedResourceAdaptor, PrefetchResourceAdaptor, ThreadSafeResourceAdaptor};
use rmm::resource::SharedResource;
use std::sync::Arc;

dynamic_family!(
    /// A handle of the adaptor family. A query of one adaptor asked of another is a logic error
    /// naming both.
    AdaptorResource,
    rmm_rs_adaptor_allocate,
    rmm_rs_adaptor_deallocate,
    new_moved_from_adaptor_resource
);

pub(crate) fn new_aligned_adaptor(
    upstream: &AnyResource,
    alignment: usize,
    alignment_threshold: usize,
) -> Box<AdaptorResource> {
    AdaptorResource::make("aligned_resource_adaptor", || {
        let adaptor = AlignedResourceAdaptor::new(upstream.shared()?.clone(), alignment, alignment_threshold)?;
        Ok(Arc::new(adaptor) as SharedResource)
    })
}

pub(crate) fn new_thread_safe_adaptor(upstream: &AnyResource) -> Box<AdaptorResource> {
    AdaptorResource::make("thread_safe_resource_adaptor", || {
        Ok(Arc::new(ThreadSafeResourceAdaptor::new(upstream.shared()?.clone())) as SharedResource)
    })
}

pub(crate) fn new_prefetch_adaptor(upstream: &AnyResource) -> Box<AdaptorResource> {
    AdaptorResource::make("prefetch_resource_adaptor", || {
        Ok(Arc::new(PrefetchResourceAdaptor::new(upstream.shared()?.clone())) as SharedResource)
    })
}
