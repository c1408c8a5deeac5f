//! `PrefetchResourceAdaptor` over a pool on host memory: nothing to prefetch, no driver call.
conformance!(Spec::HOST, || rmm::adaptor::PrefetchResourceAdaptor::new(crate::common::host_pool()));
