//! `TrackingResourceAdaptor` over a pool on host memory.
conformance!(Spec::HOST, || rmm::adaptor::TrackingResourceAdaptor::new(crate::common::host_pool(), false));
