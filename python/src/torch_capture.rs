//! `torch.cuda.graph` over our pools: PyTorch's pluggable allocator calls three hooks around each
//! capture (`cpp/torch_graph_hooks.cpp`, installed by `rmm.allocators.torch`), and this module
//! does what they decide.
//!
//! PyTorch calls `beginAllocateToPool(device, pool, filter)` before a capture begins, with a
//! filter that tells whether a stream is being captured into that graph pool;
//! `endAllocateToPool(device, pool)` after it ended; `releasePool(device, pool)` when the graph
//! is reset or destroyed. Between begin and end, the allocate hook asks the filters about its
//! stream (one relaxed load decides whether any pool is active: nothing else is added to the
//! allocation path outside a capture). A stream being captured is marked on the device's current
//! resource when that is a pool or a virtual pool, directly or under the statistics, tracking,
//! limiting, logging or prefetch adaptors (`begin_capture`): its allocations then come from
//! memory private to the capture, and nothing the pool does for it is illegal during capture.
//! Other resources are left alone (`cudaMallocAsync` is capturable by itself).
//!
//! The end ends the marks. Graphs may share a pool (`torch.cuda.graph(pool=...)`): a pool's
//! captures are given back once `releasePool` was called as often as `beginAllocateToPool`, and
//! only those without live blocks (tensors still held); the others wait for
//! `rmm.allocators.torch.release_graph_memory()`, which retries them.

use crate::memory_resource::capture::capture_pool_of;
use parking_lot::Mutex;
use pyo3::prelude::*;
use rmm::{CudaStreamView, SharedResource};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

extern "C" {
    /// Whether `stream` is being captured into a pool PyTorch allocates to on `device` (its id in
    /// `first`, `second`); asks the filters PyTorch gave (cpp/torch_graph_hooks.cpp).
    fn rmm_rs_torch_pool_of_stream(device: i32, stream: *mut c_void, first: *mut u64, second: *mut u64) -> bool;
    /// The addresses of the three hooks (cpp/torch_graph_hooks.cpp).
    fn rmm_rs_torch_graph_hook_addresses(out: *mut usize);
}

/// How many graph pools PyTorch is allocating to now (set by the C++ hooks).
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// A graph pool of PyTorch: (device, first, second).
type PoolKey = (i32, u64, u64);

/// A stream marked as capturing on a resource, for a graph pool.
struct Marked {
    pool: PoolKey,
    resource: SharedResource,
    stream: usize,
    capture: u64,
    ended: bool,
}

#[derive(Default)]
struct State {
    /// Captures begun per graph pool, less the pool's releases.
    uses: Vec<(PoolKey, usize)>,
    /// Marks of pools still in use.
    marked: Vec<Marked>,
    /// Captures of released pools not yet given back (blocks still live).
    pending: Vec<Marked>,
}

static STATE: Mutex<State> = Mutex::new(State { uses: Vec::new(), marked: Vec::new(), pending: Vec::new() });

/// Whether PyTorch is allocating to a graph pool now: the one test the allocate hook makes.
#[inline(always)]
pub(crate) fn graph_pools_active() -> bool {
    ACTIVE.load(Ordering::Relaxed) != 0
}

/// For the allocate hook while a graph pool is active: marks `stream` on `mr` when it is being
/// captured into one (see the module documentation). An error when the pool cannot mark it
/// (the allocation must then fail: the shared memory would be unsafe for the graph).
#[cold]
#[inline(never)]
pub(crate) fn mark_if_captured(mr: &SharedResource, device: i32, stream: CudaStreamView) -> rmm::Result<()> {
    let (mut first, mut second) = (0u64, 0u64);
    // SAFETY: the out pointers are valid; the C++ function lets no exception out.
    let captured =
        unsafe { rmm_rs_torch_pool_of_stream(device, stream.handle() as *mut c_void, &mut first, &mut second) };
    if !captured {
        return Ok(());
    }
    let Some(pool) = capture_pool_of(&**mr) else {
        return Ok(());
    };
    let capture = pool.begin(stream)?;
    let mut state = STATE.lock();
    let key = (device, first, second);
    let known = state
        .marked
        .iter()
        .any(|m| m.pool == key && m.stream == stream.handle() && m.capture == capture && Arc::ptr_eq(&m.resource, mr));
    if !known {
        state.marked.push(Marked { pool: key, resource: mr.clone(), stream: stream.handle(), capture, ended: false });
    }
    Ok(())
}

/// Ends the marks of `m` (idempotent).
fn end_mark(m: &mut Marked) {
    if !m.ended {
        if let Some(pool) = capture_pool_of(&*m.resource) {
            // SAFETY: the stream PyTorch captures on, alive while its capture is marked.
            pool.end(unsafe { CudaStreamView::from_handle(m.stream) });
        }
        m.ended = true;
    }
}

/// Gives back every pending capture without live blocks; the number given back.
fn release_pending(state: &mut State) -> usize {
    let mut released = 0;
    let mut i = 0;
    while i < state.pending.len() {
        let (resource, capture) = (state.pending[i].resource.clone(), state.pending[i].capture);
        let same = |m: &Marked| m.capture == capture && Arc::ptr_eq(&m.resource, &resource);
        // A capture still marked for a pool in use (a shared pool's other graph) waits.
        if state.marked.iter().any(same) {
            i += 1;
            continue;
        }
        let done = match capture_pool_of(&*resource) {
            // Already given back (by hand) counts as done.
            Some(pool) if pool.captures().contains(&capture) => pool.release(capture).is_ok(),
            _ => true,
        };
        if done {
            released += 1;
            state.pending.retain(|m| !same(m));
        } else {
            i += 1;
        }
    }
    released
}

/// Gives back every released graph's capture whose tensors are all freed (for
/// `torch.cuda.empty_cache()`); the number given back.
pub(crate) fn release_released_graphs() -> usize {
    release_pending(&mut STATE.lock())
}

/// Called by the begin hook with the number of pools now active.
#[no_mangle]
pub extern "C" fn rmm_rs_torch_pool_begun(device: i32, first: u64, second: u64, active: usize) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let mut state = STATE.lock();
        let key = (device, first, second);
        match state.uses.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => state.uses.push((key, 1)),
        }
        ACTIVE.store(active, Ordering::Relaxed);
    }));
}

/// Called by the end hook with the number of pools still active: ends the pool's marks.
#[no_mangle]
pub extern "C" fn rmm_rs_torch_pool_ended(device: i32, first: u64, second: u64, active: usize) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        ACTIVE.store(active, Ordering::Relaxed);
        let mut state = STATE.lock();
        let key = (device, first, second);
        state.marked.iter_mut().filter(|m| m.pool == key).for_each(end_mark);
    }));
}

/// Called by the release hook: once the pool is released as often as it was begun, its captures
/// are given back where they hold no live block, and kept pending otherwise.
#[no_mangle]
pub extern "C" fn rmm_rs_torch_pool_released(device: i32, first: u64, second: u64) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let mut state = STATE.lock();
        let key = (device, first, second);
        let Some(i) = state.uses.iter().position(|(k, _)| *k == key) else {
            return;
        };
        state.uses[i].1 -= 1;
        if state.uses[i].1 > 0 {
            return;
        }
        state.uses.swap_remove(i);
        let (mut done, kept): (Vec<Marked>, Vec<Marked>) = state.marked.drain(..).partition(|m| m.pool == key);
        state.marked = kept;
        done.iter_mut().for_each(end_mark);
        state.pending.extend(done);
        release_pending(&mut state);
    }));
}

/// The addresses of PyTorch's three graph hooks (begin, end, release), for
/// `CUDAPluggableAllocator._allocator.set_begin_allocate_to_pool` and the two other setters.
#[pyfunction]
pub(crate) fn _torch_graph_hooks() -> (usize, usize, usize) {
    let mut out = [0usize; 3];
    // SAFETY: out has room for the three addresses the function writes.
    unsafe { rmm_rs_torch_graph_hook_addresses(out.as_mut_ptr()) };
    (out[0], out[1], out[2])
}

/// Gives back the private memory of every graph PyTorch released whose tensors are all freed;
/// the number of captures given back.
#[pyfunction]
pub(crate) fn _torch_release_graph_memory(py: Python<'_>) -> usize {
    py.detach(|| release_pending(&mut STATE.lock()))
}

/// Captures of released graphs still waiting for their tensors to be freed.
#[pyfunction]
pub(crate) fn _torch_pending_graph_captures() -> Vec<u64> {
    STATE.lock().pending.iter().map(|m| m.capture).collect()
}

/// The graph pools PyTorch is allocating to now, and each pool's captures begun less its
/// releases ((device, first, second), count), for tests.
#[pyfunction]
pub(crate) fn _torch_graph_pools() -> (usize, Vec<(PoolKey, usize)>) {
    (ACTIVE.load(Ordering::Relaxed), STATE.lock().uses.clone())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_torch_graph_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(_torch_graph_pools, m)?)?;
    m.add_function(wrap_pyfunction!(_torch_release_graph_memory, m)?)?;
    m.add_function(wrap_pyfunction!(_torch_pending_graph_captures, m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_is_released_after_as_many_releases_as_begins() {
        rmm_rs_torch_pool_begun(0, 7, 0, 1);
        rmm_rs_torch_pool_begun(0, 7, 0, 2);
        rmm_rs_torch_pool_ended(0, 7, 0, 1);
        rmm_rs_torch_pool_ended(0, 7, 0, 0);
        assert!(!graph_pools_active());
        rmm_rs_torch_pool_released(0, 7, 0);
        assert!(STATE.lock().uses.iter().any(|&(k, n)| k == (0, 7, 0) && n == 1));
        rmm_rs_torch_pool_released(0, 7, 0);
        assert!(STATE.lock().uses.iter().all(|&(k, _)| k != (0, 7, 0)));
        // A release of a pool never begun is ignored.
        rmm_rs_torch_pool_released(0, 9, 9);
    }
}
