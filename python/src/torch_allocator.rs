//! The two C functions PyTorch's `CUDAPluggableAllocator` loads from this extension
//! (`rmm.allocators.torch.rmm_torch_allocator`): allocate from a device's current resource, and
//! free to the resource that allocated, in pure Rust, without the GIL.
//!
//! They are on PyTorch's allocation path (PyTorch caches what it frees, so they are called far
//! less often than tensors are made), so the common call takes no lock beyond the resource's own
//! and one shard of the owner map, and allocates nothing but the map's occasional growth: the
//! resource comes from [`crate::resource_cache`].
//!
//! Unlike RMM's hook, which frees to whatever resource is current at free time, each pointer goes
//! back to the resource that handed it out: the hook remembers it, by pointer, in a sharded hash
//! map (one insert per allocation, one remove per free), and that entry keeps the resource alive
//! until the last of its tensors is freed. Changing the current resource while PyTorch holds
//! tensors is then harmless. A free of a pointer the hook never handed out is ignored.

use crate::resource_cache::resource_of;
use parking_lot::Mutex;
use rmm::resource::AddressHasher;
use rmm::{device, CudaStreamView, DeviceId, SharedResource, DEFAULT_ALIGNMENT};
use std::collections::HashMap;
use std::ffi::c_void;
use std::hash::BuildHasherDefault;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Shards of the owner map: frees on different threads rarely meet on one lock.
const SHARDS: usize = 16;

type OwnerShard = Mutex<HashMap<usize, SharedResource, BuildHasherDefault<AddressHasher>>>;

/// The resource that allocated each pointer the hook handed out and PyTorch has not freed.
static OWNERS: [OwnerShard; SHARDS] = [const { Mutex::new(HashMap::with_hasher(BuildHasherDefault::new())) }; SHARDS];

fn shard(ptr: usize) -> &'static OwnerShard {
    &OWNERS[((ptr as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize % SHARDS]
}

extern "C-unwind" {
    /// Throws the C++ exception PyTorch reports for a failed allocation, with the `len` bytes of
    /// `message` (cpp/torch_hook.cpp): `c10::OutOfMemoryError` (`torch.OutOfMemoryError` in Python)
    /// when `out_of_memory`, else `c10::Error` (`RuntimeError`); a `std::bad_alloc` carrying the
    /// message where PyTorch's error types are not found.
    fn rmm_rs_throw_allocation_error(message: *const u8, len: usize, out_of_memory: bool) -> !;
}

/// The allocate hook PyTorch calls: as [`rmm_rs_torch_allocate_or_null`], but a failure throws a
/// C++ exception to PyTorch's C++ caller (PyTorch does not test the result for null), which
/// PyTorch raises in Python as `torch.OutOfMemoryError` for an out-of-memory error, with the
/// error's whole message.
#[no_mangle]
pub extern "C-unwind" fn rmm_rs_torch_allocate(size: usize, device: i32, stream: *mut c_void) -> *mut c_void {
    match allocate(size, device, stream) {
        Ok(p) => p,
        // An empty request needs no memory: null, as for a success.
        Err(_) if size == 0 => std::ptr::null_mut(),
        Err(failure) => throw_failure(size, device, failure),
    }
}

/// Allocates `size` bytes on `stream` from device `device`'s current resource, with that device
/// current. Returns NULL on any failure and never unwinds (callable from Python's ctypes).
#[no_mangle]
pub extern "C" fn rmm_rs_torch_allocate_or_null(size: usize, device: i32, stream: *mut c_void) -> *mut c_void {
    allocate(size, device, stream).unwrap_or(std::ptr::null_mut())
}

/// The allocation both hooks make; the error is None for a panic, which is caught here. A block
/// the resource serves at once (a pool's free block of this stream) needs no device switch; any
/// other allocation runs with `device` current.
fn allocate(size: usize, device: i32, stream: *mut c_void) -> Result<*mut c_void, Option<rmm::Error>> {
    // SAFETY: PyTorch passes the live stream the block is used on (its allocator's contract).
    let stream = unsafe { CudaStreamView::from_handle(stream as usize) };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mr = resource_of(device);
        // A captured allocation is marked first (slow path): never served before the mark.
        let capturing = crate::torch_capture::graph_pools_active();
        let immediate = if capturing { None } else { mr.try_allocate_immediately(size, DEFAULT_ALIGNMENT, stream) };
        let ptr = match immediate {
            Some(ptr) => ptr,
            None => device::with_device(DeviceId(device), || {
                if capturing {
                    crate::torch_capture::mark_if_captured(&mr, device, stream)?;
                }
                mr.allocate(size, DEFAULT_ALIGNMENT, stream)
            })?,
        };
        if !ptr.is_null() {
            shard(ptr as usize).lock().insert(ptr as usize, mr);
        }
        Ok(ptr)
    }));
    match outcome {
        Ok(Ok(ptr)) => Ok(ptr.cast()),
        Ok(Err(e)) => Err(Some(e)),
        Err(_) => Err(None),
    }
}

/// Leaves the allocate hook with the C++ exception for `failure`.
#[cold]
#[inline(never)]
fn throw_failure(size: usize, device: i32, failure: Option<rmm::Error>) -> ! {
    let (message, out_of_memory) = match failure {
        Some(e) => (crate::error::full_message(&e), e.is_out_of_memory()),
        None => (format!("allocating {size} bytes on device {device} panicked"), false),
    };
    // SAFETY: the pointer and length describe `message`, which the C++ function copies before it
    // throws; the exception unwinds through this frame and the hook's (declared "C-unwind", which
    // drop `message`) to PyTorch's C++ code that called the hook.
    unsafe { rmm_rs_throw_allocation_error(message.as_ptr(), message.len(), out_of_memory) }
}

/// Frees `ptr` (of `size` bytes, allocated by [`rmm_rs_torch_allocate_or_null`] for `device`) on
/// `stream`, to the resource that allocated it. A pointer the hook did not hand out is left alone.
/// A failure cannot be reported through this signature; the resource stays consistent, and a free
/// it refused can be made again.
#[no_mangle]
pub extern "C" fn rmm_rs_torch_deallocate(ptr: *mut c_void, size: usize, device: i32, stream: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: PyTorch passes the live stream the block is used on (its allocator's contract).
    let stream = unsafe { CudaStreamView::from_handle(stream as usize) };
    let addr = ptr as usize;
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let Some(owner) = shard(addr).lock().remove(&addr) else {
            return;
        };
        // A free the resource takes at once needs no device switch.
        if owner.try_deallocate_immediately(ptr.cast(), size, DEFAULT_ALIGNMENT, stream) {
            return;
        }
        let freed =
            device::with_device(DeviceId(device), || owner.deallocate(ptr.cast(), size, DEFAULT_ALIGNMENT, stream));
        if freed.is_err() {
            shard(addr).lock().insert(addr, owner);
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_null_not_panics() {
        // Without a driver with_device fails; with one, device -1 does not exist. Either way the
        // hook answers NULL and the free of NULL is a no-op.
        assert!(rmm_rs_torch_allocate_or_null(256, -1, std::ptr::null_mut()).is_null());
        rmm_rs_torch_deallocate(std::ptr::null_mut(), 256, -1, std::ptr::null_mut());
        // A pointer the hook never handed out is left alone, whatever is current.
        rmm_rs_torch_deallocate(0x1000 as *mut c_void, 256, -1, std::ptr::null_mut());
    }

    #[test]
    fn pointers_spread_over_the_shards() {
        let used: std::collections::HashSet<usize> =
            (0..1024usize).map(|i| shard(0x7f00_0000_0000 + (i << 21)) as *const OwnerShard as usize).collect();
        assert!(used.len() >= SHARDS / 2, "2 MiB-aligned pointers use {} of {SHARDS} shards", used.len());
    }
}
