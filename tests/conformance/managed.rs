//! `ManagedMemoryResource`: cuMemAllocManaged.
conformance!(Spec::DRIVER.host_accessible(), rmm::resource::ManagedMemoryResource::new);
