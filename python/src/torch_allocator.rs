//! The two C functions PyTorch's `CUDAPluggableAllocator` loads from this extension
//! (`rmm.allocators.torch.rmm_torch_allocator`): allocate from and free to a device's current
//! resource, in pure Rust, without the GIL.
//!
//! They are on PyTorch's hot path (every tensor), so the common call takes no lock beyond the
//! resource's own and allocates nothing: each thread caches the resource of the devices it serves
//! and checks the per-device table's generation (one atomic load) to notice a change. A thread's
//! cache keeps the resource it last used alive until that thread's next call after a change.
//!
//! As RMM's hook, memory is freed to the device's current resource: changing the resource while
//! PyTorch still holds tensors from the previous one is a usage error (the free is then refused by
//! the new resource and the memory is lost, never handed out twice).

use rmm::per_device_resource::{generation, get_per_device_resource_with_generation};
use rmm::{device, CudaStreamView, DeviceId, SharedResource, DEFAULT_ALIGNMENT};
use std::cell::RefCell;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A cached table entry: the device, the table generation it was read at, and the resource.
type Entry = (i32, u64, SharedResource);

thread_local! {
    static CACHE: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with the current resource of `device`, from this thread's cache when the table has not
/// changed since it was read.
fn with_resource<T>(device: i32, f: impl FnOnce(&SharedResource) -> T) -> T {
    let now = generation();
    let cached = CACHE.try_with(|cache| {
        let mut cache = cache.borrow_mut();
        let slot = match cache.iter().position(|e| e.0 == device) {
            Some(i) if cache[i].1 == now => return Some(cache[i].2.clone()),
            Some(i) => i,
            None => {
                let (resource, generation) = get_per_device_resource_with_generation(DeviceId(device));
                cache.push((device, generation, resource));
                cache.len() - 1
            }
        };
        let (resource, generation) = get_per_device_resource_with_generation(DeviceId(device));
        cache[slot] = (device, generation, resource);
        Some(cache[slot].2.clone())
    });
    match cached {
        Ok(Some(resource)) => f(&resource),
        // The thread is being torn down and its cache is gone: read the table directly.
        _ => f(&get_per_device_resource_with_generation(DeviceId(device)).0),
    }
}

/// Allocates `size` bytes on `stream` from device `device`'s current resource, with that device
/// current. Returns NULL on any failure, never unwinds; `rmm_rs_torch_allocate` (cpp/torch_hook.cpp)
/// wraps it and throws `std::bad_alloc` instead of returning NULL.
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
    fn cache_follows_the_table() {
        // An id no real device has, so the test needs no driver.
        const ID: i32 = -31;
        let a: SharedResource = Arc::new(HostMemoryResource::new());
        let b: SharedResource = Arc::new(HostMemoryResource::new());
        set_per_device_resource(DeviceId(ID), a.clone());
        assert!(with_resource(ID, |mr| Arc::ptr_eq(mr, &a)));
        assert!(with_resource(ID, |mr| Arc::ptr_eq(mr, &a)));
        set_per_device_resource(DeviceId(ID), b.clone());
        assert!(with_resource(ID, |mr| Arc::ptr_eq(mr, &b)));
        reset_per_device_resource(DeviceId(ID));
        assert!(!with_resource(ID, |mr| Arc::ptr_eq(mr, &b)));
    }

    #[test]
    fn failures_are_null_not_panics() {
        // Without a driver with_device fails; with one, device -1 does not exist. Either way the
        // hook answers NULL and the free of NULL is a no-op.
        assert!(rmm_rs_torch_allocate_or_null(256, -1, std::ptr::null_mut()).is_null());
        rmm_rs_torch_deallocate(std::ptr::null_mut(), 256, -1, std::ptr::null_mut());
    }
}
