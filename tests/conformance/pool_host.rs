//! `PoolMemoryResource` over host memory: the pool algorithm without a GPU.
conformance!(Spec::HOST, || rmm::resource::PoolMemoryResource::new(rmm::resource::HostMemoryResource::new(), 0, None)
    .unwrap());
