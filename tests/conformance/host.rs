//! `HostMemoryResource`: host memory from the global allocator, for tests without a GPU.
conformance!(Spec::HOST, rmm::resource::HostMemoryResource::new);
