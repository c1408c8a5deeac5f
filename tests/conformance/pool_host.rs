//! `PoolMemoryResource` over host memory: the pool algorithm without a GPU.
conformance!(Spec::HOST, crate::common::host_pool);
