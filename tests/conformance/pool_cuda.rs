//! `PoolMemoryResource` over `CudaMemoryResource`.
conformance!(Spec::DRIVER.max_alignment(4096), || {
    rmm::resource::PoolMemoryResource::new(rmm::resource::CudaMemoryResource::new(), 64 << 20, None).unwrap()
});
