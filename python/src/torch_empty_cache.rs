//! `torch.cuda.empty_cache()` over `rmm_torch_allocator`. PyTorch's pluggable allocator has no
//! cache of its own to empty: its `emptyCache` calls the function set with `set_reset_fn`, if any,
//! with no argument (`torch/csrc/cuda/CUDAPluggableAllocator.cpp`); `rmm.allocators.torch` sets
//! this one. It does what PyTorch's caching allocator does there:
//! - gives back the private memory of the CUDA graphs PyTorch released whose tensors are all freed
//!   (`rmm.allocators.torch.release_graph_memory()`);
//! - on every device, releases the pool under the device's current resource (a pool or a virtual
//!   pool, itself or under the statistics, tracking, limiting, logging or prefetch adaptors): its
//!   wholly free chunks go back to the upstream (a virtual pool unmaps its whole free granules),
//!   after every stream is synchronised, so that no queued work still uses them.
//!
//! Errors have no way back to PyTorch through this signature and are dropped; `release()` on the
//! pool itself raises them.

use crate::memory_resource::capture::capture_pool_of;
use pyo3::prelude::*;
use rmm::per_device_resource::get_per_device_resource;
use rmm::{device, DeviceId};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The function PyTorch's `emptyCache` calls (see the module documentation). Never unwinds.
#[no_mangle]
pub extern "C" fn rmm_rs_torch_empty_cache() {
    let _ = catch_unwind(AssertUnwindSafe(empty_cache));
}

/// Releases released graphs' memory, then every device's pool.
fn empty_cache() {
    crate::torch_capture::release_released_graphs();
    let Ok(count) = device::device_count() else { return };
    for d in 0..count as i32 {
        let mr = get_per_device_resource(DeviceId(d));
        // A device never given a resource has the initial one, which holds nothing.
        let Some(pool) = capture_pool_of(&*mr) else { continue };
        // The pool's streams and memory are the device's: release it with the device current.
        let _ = device::with_device(DeviceId(d), || pool.release_free());
    }
}

/// The address of [`rmm_rs_torch_empty_cache`], for `set_reset_fn` of PyTorch's allocator.
#[pyfunction]
fn _torch_empty_cache_hook() -> usize {
    rmm_rs_torch_empty_cache as extern "C" fn() as usize
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_torch_empty_cache_hook, m)?)?;
    Ok(())
}
