//! `FixedSizeMemoryResource` over `CudaMemoryResource`.
conformance!(Spec::DRIVER, || {
    rmm::resource::FixedSizeMemoryResource::new(rmm::resource::CudaMemoryResource::new(), 16 << 20, 4).unwrap()
});
