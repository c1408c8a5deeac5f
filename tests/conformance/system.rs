//! `SystemMemoryResource`: system-allocated memory (HMM or ATS; skipped with the reason where the
//! device has no pageable memory access).
fn supported() -> bool {
    crate::common::device_supports("system-allocated memory", rmm::capabilities::system_memory_supported)
}

conformance!(Spec::DRIVER.host_accessible().max_alignment(4096).supported_when(supported), || {
    rmm::resource::SystemMemoryResource::new().unwrap()
});
