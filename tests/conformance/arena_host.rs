//! `ArenaMemoryResource` over host memory: the arena algorithm without a GPU.
conformance!(Spec::HOST, || {
    rmm::resource::ArenaMemoryResource::new(rmm::resource::HostMemoryResource::new(), Some(64 << 20), false).unwrap()
});
