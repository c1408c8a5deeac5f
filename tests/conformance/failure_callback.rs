//! `FailureCallbackResourceAdaptor` over a pool on host memory, with a callback that never retries.
conformance!(Spec::HOST, || rmm::adaptor::FailureCallbackResourceAdaptor::new(crate::common::host_pool(), |_| false));
