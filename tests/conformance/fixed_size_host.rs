//! `FixedSizeMemoryResource` over host memory: 16 MiB blocks hold every size the suite asks for.
conformance!(Spec::HOST.max_alignment(256), || {
    rmm::resource::FixedSizeMemoryResource::new(rmm::resource::HostMemoryResource::new(), 16 << 20, 4).unwrap()
});
