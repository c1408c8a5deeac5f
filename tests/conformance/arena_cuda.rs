//! `ArenaMemoryResource` over `CudaMemoryResource`.
conformance!(Spec::DRIVER.max_alignment(4096), || {
    rmm::resource::ArenaMemoryResource::new(rmm::resource::CudaMemoryResource::new(), Some(256 << 20), false).unwrap()
});
