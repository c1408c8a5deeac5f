//! Filling and reading device memory in GPU tests, through the driver.

use cudarc::driver::sys;
use rmm::CudaStreamView;

/// Asserts that a driver call succeeded, naming it otherwise.
pub fn cu(status: sys::CUresult, call: &str) {
    assert_eq!(status, sys::CUresult::CUDA_SUCCESS, "{call} failed");
}

/// Sets `bytes` bytes at `ptr` (a live device block) to `value`, queued on `s`.
pub fn fill_async(ptr: *mut u8, bytes: usize, value: u8, s: CudaStreamView) {
    // SAFETY: ptr..ptr+bytes is a live device allocation (the caller's promise); the stream is valid.
    cu(unsafe { sys::cuMemsetD8Async(ptr as u64, value, bytes, s.as_raw()) }, "cuMemsetD8Async");
}

/// The first `bytes` bytes at `ptr` (a live device block), copied to the host synchronously.
pub fn read(ptr: *mut u8, bytes: usize) -> Vec<u8> {
    let mut out = vec![0u8; bytes];
    // SAFETY: a synchronous copy from a live device allocation into a host buffer of that size.
    cu(unsafe { sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), ptr as u64, bytes) }, "cuMemcpyDtoH");
    out
}
