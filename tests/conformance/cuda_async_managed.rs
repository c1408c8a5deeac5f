//! `CudaAsyncManagedMemoryResource`: the device's default managed pool (CUDA 13.0 drivers with
//! concurrent managed access; skipped with the reason elsewhere).
fn supported() -> bool {
    crate::common::device_supports("pools of managed memory", rmm::capabilities::async_managed_alloc_supported)
}

conformance!(Spec::DRIVER.host_accessible().supported_when(supported), || {
    rmm::resource::CudaAsyncManagedMemoryResource::new().unwrap()
});
