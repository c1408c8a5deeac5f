//! The two C functions PyTorch's `CUDAPluggableAllocator` loads from this extension
//! (`rmm.allocators.torch.rmm_torch_allocator`): allocate from and free to a device's current
//! resource, in pure Rust, without the GIL.
//!
//! They are on PyTorch's hot path (every tensor), so the common call takes no lock beyond the
//! resource's own and allocates nothing: the resource comes from [`crate::resource_cache`].
//!
//! As RMM's hook, memory is freed to the device's current resource: changing the resource while
//! PyTorch still holds tensors from the previous one is a usage error (the free is then refused by
//! the new resource and the memory is lost, never handed out twice).

use crate::resource_cache::with_resource;
use rmm::{device, CudaStreamView, DeviceId, DEFAULT_ALIGNMENT};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

extern "C-unwind" {
    /// Throws `std::bad_alloc` (cpp/torch_hook.cpp).
    fn rmm_rs_throw_bad_alloc() -> !;
}

/// The allocate hook PyTorch calls: as [`rmm_rs_torch_allocate_or_null`], but a failure throws
/// `std::bad_alloc` to PyTorch's C++ caller (PyTorch does not test the result for null).
#[no_mangle]
pub extern "C-unwind" fn rmm_rs_torch_allocate(size: usize, device: i32, stream: *mut c_void) -> *mut c_void {
    let p = rmm_rs_torch_allocate_or_null(size, device, stream);
    if p.is_null() && size != 0 {
        // SAFETY: the C++ function only throws; the exception unwinds through this frame alone
        // (declared "C-unwind", nothing left to drop) to PyTorch's C++ code that called the hook.
        unsafe { rmm_rs_throw_bad_alloc() }
    }
    p
}

/// Allocates `size` bytes on `stream` from device `device`'s current resource, with that device
/// current. Returns NULL on any failure and never unwinds (callable from Python's ctypes).
#[no_mangle]
pub extern "C" fn rmm_rs_torch_allocate_or_null(size: usize, device: i32, stream: *mut c_void) -> *mut c_void {
    let stream = CudaStreamView::from_handle(stream as usize);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        device::with_device(DeviceId(device), || {
            with_resource(device, |mr| mr.allocate(size, DEFAULT_ALIGNMENT, stream))
        })
    }));
    match outcome {
        Ok(Ok(ptr)) => ptr.cast(),
        _ => std::ptr::null_mut(),
    }
}

/// Frees `ptr` (of `size` bytes, allocated by [`rmm_rs_torch_allocate_or_null`] for `device`) on `stream`.
/// A failure cannot be reported through this signature; the resource stays consistent.
#[no_mangle]
pub extern "C" fn rmm_rs_torch_deallocate(ptr: *mut c_void, size: usize, device: i32, stream: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    let stream = CudaStreamView::from_handle(stream as usize);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        device::with_device(DeviceId(device), || {
            with_resource(device, |mr| mr.deallocate(ptr.cast(), size, DEFAULT_ALIGNMENT, stream))
        })
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmm::per_device_resource::{reset_per_device_resource, set_per_device_resource};
    use rmm::resource::HostMemoryResource;
    use std::sync::Arc;

    #[test]
    fn failures_are_null_not_panics() {
        // Without a driver with_device fails; with one, device -1 does not exist. Either way the
        // hook answers NULL and the free of NULL is a no-op.
        assert!(rmm_rs_torch_allocate_or_null(256, -1, std::ptr::null_mut()).is_null());
        rmm_rs_torch_deallocate(std::ptr::null_mut(), 256, -1, std::ptr::null_mut());
    }
}
