//! `CudaAsyncMemoryResource`: the driver's stream-ordered allocator on a pool of its own.
conformance!(Spec::DRIVER, || rmm::resource::CudaAsyncMemoryResource::new(None, None).unwrap());
