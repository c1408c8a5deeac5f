//! `BinningMemoryResource` over a pool of `CudaMemoryResource`, with RMM's test bins (256 KiB to
//! 4 MiB).
conformance!(Spec::DRIVER.max_alignment(4096), || {
    let pool = rmm::resource::PoolMemoryResource::new(rmm::resource::CudaMemoryResource::new(), 0, None).unwrap();
    rmm::resource::BinningMemoryResource::with_bins(pool, 18, 22).unwrap()
});
