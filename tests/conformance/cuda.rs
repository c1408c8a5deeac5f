//! `CudaMemoryResource`: cuMemAlloc / cuMemFree.
conformance!(Spec::DRIVER, rmm::resource::CudaMemoryResource::new);
