//! `BinningMemoryResource` over a host pool, with fixed-size bins of 256 B to 1 MiB: larger
//! requests and alignments above 256 go to the pool.
conformance!(Spec::HOST, || {
    rmm::resource::BinningMemoryResource::with_bins(crate::common::host_pool(), 8, 20).unwrap()
});
