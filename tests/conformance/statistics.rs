//! `StatisticsResourceAdaptor` over a pool on host memory.
conformance!(Spec::HOST, || rmm::adaptor::StatisticsResourceAdaptor::new(crate::common::host_pool()));
