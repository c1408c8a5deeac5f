//! The CUDA major a build follows: reported as the feature chose it, and in a CUDA 12 build no
//! pools of managed memory (CUDA 12 has none), refused with a named error on a GPU.

use rmm::capabilities::async_managed_alloc_supported;
use rmm::resource::CudaAsyncManagedMemoryResource;
use rmm::{DeviceId, Error};

#[test]
fn build_cuda_major_follows_the_feature() {
    let expected = if cfg!(feature = "cuda-12") { 12 } else { 13 };
    assert_eq!(rmm::build_cuda_major(), expected);
}

#[test]
fn cuda_12_builds_have_no_managed_pools() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let device = DeviceId::current().unwrap();
    let supported = async_managed_alloc_supported(device).unwrap();
    println!(
        "CUDA {} build, driver {:?}: pools of managed memory {}",
        rmm::build_cuda_major(),
        rmm::capabilities::driver_version(),
        if supported { "supported" } else { "unsupported" }
    );
    if rmm::build_cuda_major() == 12 {
        assert!(!supported);
        match CudaAsyncManagedMemoryResource::new() {
            Err(Error::Unsupported(message)) => assert!(message.contains("CUDA 12 build"), "{message}"),
            Err(e) => panic!("expected Unsupported, got {e}"),
            Ok(_) => panic!("a CUDA 12 build made a pool of managed memory"),
        }
    }
}
