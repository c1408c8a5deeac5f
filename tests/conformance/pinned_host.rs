//! `PinnedHostMemoryResource`: cuMemHostAlloc, page-locked host memory the device may access.
conformance!(Spec::DRIVER.host_accessible(), rmm::resource::PinnedHostMemoryResource::new);
