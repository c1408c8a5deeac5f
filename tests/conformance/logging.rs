//! `LoggingResourceAdaptor` over a pool on host memory, logging to nowhere.
conformance!(Spec::HOST, || {
    rmm::adaptor::LoggingResourceAdaptor::with_writer(crate::common::host_pool(), Box::new(std::io::sink()))
});
