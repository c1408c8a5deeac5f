//! The resources that take their memory straight from the CUDA driver (or the system allocator):
//! stream-ordered pools, managed, system, pinned host and SAM-headroom memory.

use super::DeviceMemoryResource;
use crate::error::IntoPy;
use crate::helper::{optional_size_arg, CSize};
use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rmm::capabilities::AllocationHandleType;
use rmm::resource as r;
use rmm::SharedResource;
use std::sync::{Arc, Weak};

/// The base-class part of a resource object over `resource`.
fn base(resource: SharedResource) -> PyClassInitializer<DeviceMemoryResource> {
    PyClassInitializer::from(DeviceMemoryResource::new(resource))
}

/// The export types RMM's Python layer combines from the two flags (both at once: a pool whose
/// allocations may be exported either way, where the device supports both).
fn export_handle_types(enable_ipc: bool, enable_fabric: bool) -> Vec<AllocationHandleType> {
    let mut types = Vec::new();
    if enable_ipc {
        types.push(AllocationHandleType::PosixFileDescriptor);
    }
    if enable_fabric {
        types.push(AllocationHandleType::Fabric);
    }
    types
}

/// `cudaMallocAsync`/`cudaFreeAsync` from a pool of its own (RMM's `cuda_async_memory_resource`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = DeviceMemoryResource, subclass, frozen)]
pub struct CudaAsyncMemoryResource {
    pool: Arc<r::CudaAsyncMemoryResource>,
}

#[pymethods]
impl CudaAsyncMemoryResource {
    #[new]
    #[pyo3(signature = (initial_pool_size = None, release_threshold = None, enable_ipc = false, enable_fabric = false))]
    fn new(
        py: Python<'_>,
        initial_pool_size: Option<&Bound<'_, PyAny>>,
        release_threshold: Option<usize>,
        enable_ipc: bool,
        enable_fabric: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        let initial = optional_size_arg(initial_pool_size)?;
        let handle_types = export_handle_types(enable_ipc, enable_fabric);
        let pool = py
            .detach(|| r::CudaAsyncMemoryResource::with_export_handle_types(initial, release_threshold, &handle_types))
            .py()?;
        let pool = Arc::new(pool);
        register_owner(&pool);
        Ok(base(pool.clone()).add_subclass(CudaAsyncMemoryResource { pool }))
    }

    /// The handle of the pool, as an int. Private: RMM's `CudaAsyncMemoryResource` has no
    /// `pool_handle` (its view and the experimental managed resource do).
    fn _pool_handle(&self) -> usize {
        self.pool.pool_handle() as usize
    }
}

/// The live owning async resources by pool handle, so that a view made from the handle one of
/// them gave out (`_pool_handle()`) keeps it alive. Weak: the table itself keeps nothing alive; a
/// pool destroyed and its handle reused by a new pool cannot be mistaken, since the old entry no
/// longer upgrades.
static OWNERS: Mutex<Vec<(usize, Weak<r::CudaAsyncMemoryResource>)>> = Mutex::new(Vec::new());

/// Notes `pool` as the owner of its pool handle (and forgets owners that are gone).
fn register_owner(pool: &Arc<r::CudaAsyncMemoryResource>) {
    let mut owners = OWNERS.lock();
    owners.retain(|(_, owner)| owner.strong_count() > 0);
    owners.push((pool.pool_handle() as usize, Arc::downgrade(pool)));
}

/// The live owning resource of the pool `handle`, if one of ours made it.
fn owner_of(handle: usize) -> Option<Arc<r::CudaAsyncMemoryResource>> {
    OWNERS.lock().iter().rev().filter(|(h, _)| *h == handle).find_map(|(_, owner)| owner.upgrade())
}

/// The pool handle of a `CudaAsyncViewMemoryResource` argument: a cuda-python `cudaMemPool_t` or
/// `CUmemoryPool` (an object with `getPtr()` whose `int()` is the handle). Anything else, a plain
/// int included, is RMM's `ValueError`.
fn pool_handle_arg(handle: &Bound<'_, PyAny>) -> PyResult<usize> {
    let refuse = || PyValueError::new_err("pool_handle must be a cudaMemPool_t or CUmemoryPool");
    if !(handle.hasattr("getPtr")? && handle.hasattr("__int__")?) {
        return Err(refuse());
    }
    let value = handle.call_method0("__int__").map_err(|_| refuse())?;
    value.extract::<usize>().map_err(|_| refuse())
}

/// `cudaMallocAsync` from a pool someone else owns (RMM's `cuda_async_view_memory_resource`).
/// When the handle is the pool of a live `CudaAsyncMemoryResource` (its `_pool_handle()`), the
/// view keeps that resource, and so the pool, alive; any other handle is checked with the driver
/// (a pool it does not know is a `ValueError`) and must outlive the view, as in RMM.
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = DeviceMemoryResource, subclass, frozen)]
pub struct CudaAsyncViewMemoryResource {
    view: Arc<r::CudaAsyncViewMemoryResource>,
}

#[pymethods]
impl CudaAsyncViewMemoryResource {
    #[new]
    fn new(py: Python<'_>, pool_handle: &Bound<'_, PyAny>) -> PyResult<PyClassInitializer<Self>> {
        let pool = pool_handle_arg(pool_handle)?;
        let view = match owner_of(pool) {
            Some(owner) => r::CudaAsyncViewMemoryResource::of(owner),
            // SAFETY: RMM's contract for this class, which the Python caller takes on: the pool
            // outlives the resource and its memory (Python code is outside Rust's checks).
            None => py.detach(|| unsafe { r::CudaAsyncViewMemoryResource::new(pool as *mut _) }).py()?,
        };
        let view = Arc::new(view);
        Ok(base(view.clone()).add_subclass(CudaAsyncViewMemoryResource { view }))
    }

    /// The handle of the pool viewed, as an int.
    fn pool_handle(&self) -> usize {
        self.view.pool_handle() as usize
    }
}

/// `cudaMallocManaged` (RMM's `managed_memory_resource`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = DeviceMemoryResource, subclass, frozen)]
pub struct ManagedMemoryResource;

#[pymethods]
impl ManagedMemoryResource {
    #[new]
    fn new() -> PyClassInitializer<Self> {
        base(Arc::new(r::ManagedMemoryResource::new())).add_subclass(ManagedMemoryResource)
    }
}

/// `malloc`/`free`, for devices that can access system memory (RMM's `system_memory_resource`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = DeviceMemoryResource, subclass, frozen)]
pub struct SystemMemoryResource;

#[pymethods]
impl SystemMemoryResource {
    /// Takes no arguments. As in RMM (whose `__cinit__` runs before `__init__` checks them), a
    /// device without system-allocated memory is a `RuntimeError` even where arguments were
    /// given; on one with it, arguments are a `TypeError`.
    #[new]
    #[pyo3(signature = (*args, **kwargs), text_signature = "()")]
    fn new(
        py: Python<'_>,
        args: &Bound<'_, pyo3::types::PyTuple>,
        kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let system = py.detach(r::SystemMemoryResource::new).py()?;
        if !args.is_empty() || kwargs.is_some_and(|k| !k.is_empty()) {
            return Err(pyo3::exceptions::PyTypeError::new_err("SystemMemoryResource() takes no arguments"));
        }
        Ok(base(Arc::new(system)).add_subclass(SystemMemoryResource))
    }
}

/// Page-locked host memory (RMM's `pinned_host_memory_resource`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = DeviceMemoryResource, subclass, frozen)]
pub struct PinnedHostMemoryResource;

#[pymethods]
impl PinnedHostMemoryResource {
    #[new]
    fn new() -> PyClassInitializer<Self> {
        base(Arc::new(r::PinnedHostMemoryResource::new())).add_subclass(PinnedHostMemoryResource)
    }
}

/// System memory that keeps `headroom` bytes of device memory free (RMM's
/// `sam_headroom_memory_resource`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = DeviceMemoryResource, subclass, frozen)]
pub struct SamHeadroomMemoryResource;

#[pymethods]
impl SamHeadroomMemoryResource {
    #[new]
    fn new(py: Python<'_>, headroom: CSize) -> PyResult<PyClassInitializer<Self>> {
        let CSize(headroom) = headroom;
        let sam = py.detach(|| r::SamHeadroomMemoryResource::new(headroom)).py()?;
        Ok(base(Arc::new(sam)).add_subclass(SamHeadroomMemoryResource))
    }
}

/// `cudaMallocFromPoolAsync` from the device's default managed pool (RMM's experimental
/// `cuda_async_managed_memory_resource`).
#[pyclass(module = "rmm.pylibrmm.memory_resource.experimental", extends = DeviceMemoryResource, subclass, frozen)]
pub struct CudaAsyncManagedMemoryResource {
    pool: Arc<r::CudaAsyncManagedMemoryResource>,
}

#[pymethods]
impl CudaAsyncManagedMemoryResource {
    #[new]
    fn new(py: Python<'_>) -> PyResult<PyClassInitializer<Self>> {
        let pool = Arc::new(py.detach(r::CudaAsyncManagedMemoryResource::new).py()?);
        Ok(base(pool.clone()).add_subclass(CudaAsyncManagedMemoryResource { pool }))
    }

    /// The handle of the managed pool, as an int.
    fn pool_handle(&self) -> usize {
        self.pool.pool_handle() as usize
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CudaAsyncMemoryResource>()?;
    m.add_class::<CudaAsyncViewMemoryResource>()?;
    m.add_class::<ManagedMemoryResource>()?;
    m.add_class::<SystemMemoryResource>()?;
    m.add_class::<PinnedHostMemoryResource>()?;
    m.add_class::<SamHeadroomMemoryResource>()?;
    m.add_class::<CudaAsyncManagedMemoryResource>()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_flags_combine_as_rmms() {
        use AllocationHandleType::{Fabric, PosixFileDescriptor};
        assert_eq!(export_handle_types(false, false), vec![]);
        assert_eq!(export_handle_types(true, false), vec![PosixFileDescriptor]);
        assert_eq!(export_handle_types(false, true), vec![Fabric]);
        assert_eq!(export_handle_types(true, true), vec![PosixFileDescriptor, Fabric]);
    }
}
