//! `PrefetchResourceAdaptor` over managed memory: every block is prefetched to the current device.
conformance!(Spec::DRIVER.host_accessible(), || {
    rmm::adaptor::PrefetchResourceAdaptor::new(rmm::resource::ManagedMemoryResource::new())
});
