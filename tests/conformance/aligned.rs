//! `AlignedResourceAdaptor` over a pool on host memory, aligning every allocation of 1 KiB or more
//! to 64 KiB (so both the pass-through and the over-allocating paths are exercised).
conformance!(Spec::HOST.max_alignment(1 << 16), || {
    rmm::adaptor::AlignedResourceAdaptor::new(crate::common::host_pool(), 1 << 16, 1024).unwrap()
});
