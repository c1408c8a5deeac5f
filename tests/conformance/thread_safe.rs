//! `ThreadSafeResourceAdaptor` over a pool on host memory.
conformance!(Spec::HOST, || rmm::adaptor::ThreadSafeResourceAdaptor::new(crate::common::host_pool()));
