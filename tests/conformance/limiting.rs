//! `LimitingResourceAdaptor` over a pool on host memory, with a limit the suite never reaches.
conformance!(Spec::HOST, || rmm::adaptor::LimitingResourceAdaptor::new(crate::common::host_pool(), 1 << 30));
