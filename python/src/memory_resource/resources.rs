//! The resource classes that allocate from the driver or carve up an upstream's memory.

use super::capture::CapturePool;
use super::{upstream_arg, DeviceMemoryResource, UpstreamResourceAdaptor};
use crate::error::IntoPy;
use crate::helper::optional_size_arg;
use crate::stream::StreamArg;
use pyo3::prelude::*;
use rmm::resource as r;
use rmm::SharedResource;
use std::sync::Arc;

/// `cudaMalloc`/`cudaFree` (RMM's `cuda_memory_resource`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = DeviceMemoryResource, subclass, frozen)]
pub struct CudaMemoryResource;

#[pymethods]
impl CudaMemoryResource {
    #[new]
    pub fn new() -> PyClassInitializer<Self> {
        PyClassInitializer::from(DeviceMemoryResource::new(Arc::new(r::CudaMemoryResource::new())))
            .add_subclass(CudaMemoryResource)
    }
}

/// Host memory from the system allocator: not part of RMM's API. Tests use it to run pools and
/// adaptors on machines without a GPU.
#[pyclass(module = "rmm._native", name = "_HostMemoryResource", extends = DeviceMemoryResource, subclass, frozen)]
pub struct HostMemoryResource;

#[pymethods]
impl HostMemoryResource {
    #[new]
    fn new() -> PyClassInitializer<Self> {
        PyClassInitializer::from(DeviceMemoryResource::new(Arc::new(r::HostMemoryResource::new())))
            .add_subclass(HostMemoryResource)
    }
}

/// A resource whose every non-empty allocation fails as an allocating CUDA call that returned the
/// error `name` (`code`): not part of RMM's API. Tests use it to see, without a GPU, what such a
/// failure raises through adaptors and suballocators.
#[pyclass(module = "rmm._native", name = "_FailingAllocationResource", extends = DeviceMemoryResource, subclass, frozen)]
pub struct FailingAllocationResource;

#[pymethods]
impl FailingAllocationResource {
    #[new]
    #[pyo3(signature = (name = "CUDA_ERROR_INVALID_VALUE".to_string(), code = 1))]
    fn new(name: String, code: u32) -> PyClassInitializer<Self> {
        PyClassInitializer::from(DeviceMemoryResource::new(Arc::new(FailingAllocation { name, code })))
            .add_subclass(FailingAllocationResource)
    }
}

/// The Rust side of [`FailingAllocationResource`].
#[derive(Debug)]
struct FailingAllocation {
    name: String,
    code: u32,
}

// SAFETY: hands out no memory (null for 0 bytes, an error otherwise), so there is nothing to keep
// a promise about; a free of anything but null is refused.
unsafe impl rmm::MemoryResource for FailingAllocation {
    fn allocate(&self, bytes: usize, _alignment: usize, _stream: rmm::CudaStreamView) -> rmm::Result<*mut u8> {
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        Err(rmm::Error::CudaAlloc { requested: bytes, call: "cuMemAlloc", code: self.code, name: self.name.clone() })
    }

    fn deallocate(
        &self,
        ptr: *mut u8,
        _bytes: usize,
        _alignment: usize,
        _stream: rmm::CudaStreamView,
    ) -> rmm::Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        Err(rmm::Misuse::UnknownPointer { ptr: ptr as usize }.into())
    }
}

/// The coalescing pool over an upstream (RMM's `pool_memory_resource`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = UpstreamResourceAdaptor, subclass, frozen)]
pub struct PoolMemoryResource {
    pool: Arc<r::PoolMemoryResource<SharedResource>>,
}

#[pymethods]
impl PoolMemoryResource {
    #[new]
    #[pyo3(signature = (upstream_mr, initial_pool_size = None, maximum_pool_size = None))]
    fn new(
        py: Python<'_>,
        upstream_mr: &Bound<'_, PyAny>,
        initial_pool_size: Option<&Bound<'_, PyAny>>,
        maximum_pool_size: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let (upstream, resource) = upstream_arg(upstream_mr)?;
        let initial = match optional_size_arg(initial_pool_size)? {
            Some(n) => n,
            None => rmm::percent_of_free_device_memory(50).py()?,
        };
        let maximum = optional_size_arg(maximum_pool_size)?;
        // RMM checks the initial size's alignment, the maximum's, then their order, each with
        // RMM_EXPECTS (rmm::logic_error, which Cython raises as RuntimeError).
        let refused = if initial % 256 != 0 {
            Some("Error, Initial pool size required to be a multiple of 256 bytes")
        } else if maximum.is_some_and(|m| m % 256 != 0) {
            Some("Error, Maximum pool size required to be a multiple of 256 bytes")
        } else if maximum.is_some_and(|m| initial > m) {
            Some("Initial pool size exceeds the maximum pool size!")
        } else {
            None
        };
        if let Some(message) = refused {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(message));
        }
        let pool = py.detach(|| r::PoolMemoryResource::new(resource, initial, maximum));
        let sizes = [initial, maximum.unwrap_or(0)];
        let pool = Arc::new(pool.map_err(|e| crate::error::construction_error(e, &sizes))?);
        Ok(UpstreamResourceAdaptor::init(upstream, pool.clone()).add_subclass(PoolMemoryResource { pool }))
    }

    /// Bytes the pool holds from its upstream.
    fn pool_size(&self) -> usize {
        self.pool.pool_size()
    }

    /// Gives every chunk whose blocks are all free back to the upstream (an addition of rmm-rs,
    /// not in RMM 26.10: what ``torch.cuda.empty_cache()`` and CuPy's ``free_all_blocks()`` do
    /// for their pools). Every stream is synchronised first, and only blocks freed before that
    /// go: work queued on a stream may still use the blocks freed on it. Chunks holding a live
    /// block stay; the pool grows again as it needs. Returns the bytes given back.
    fn release(&self, py: Python<'_>) -> PyResult<usize> {
        py.detach(|| self.pool.release()).py()
    }

    /// Announces that ``stream`` (a ``Stream``), whose CUDA graph capture has begun, allocates
    /// from memory private to its capture from now on (an addition of rmm-rs, not in RMM 26.10).
    /// Returns the capture's id, the key of ``release_capture``. ``ValueError`` when the stream
    /// is not being captured. See ``rmm.mr.capture_allocations`` for the usual way to call it.
    fn begin_capture(&self, py: Python<'_>, stream: StreamArg<'_>) -> PyResult<u64> {
        let stream = stream.resolve(py)?;
        let stream = stream.get().view();
        let pool = CapturePool::Pool(&self.pool);
        py.detach(|| pool.begin(stream)).py()
    }

    /// The capture on ``stream`` ended: its allocations come from the shared memory again. The
    /// capture's private memory is kept until ``release_capture``. A stream never marked is left
    /// alone.
    fn end_capture(&self, py: Python<'_>, stream: StreamArg<'_>) -> PyResult<()> {
        let stream = stream.resolve(py)?;
        let stream = stream.get().view();
        CapturePool::Pool(&self.pool).end(stream);
        Ok(())
    }

    /// Gives capture ``capture_id``'s private memory back to the pool; call it once every graph
    /// captured with it (and every executable graph made from those) is destroyed. ``ValueError``,
    /// with nothing changed, for an unknown id, while a stream is still marked for the capture,
    /// or while blocks it allocated are live.
    fn release_capture(&self, py: Python<'_>, capture_id: u64) -> PyResult<()> {
        let pool = CapturePool::Pool(&self.pool);
        py.detach(|| pool.release(capture_id)).py()
    }

    /// The ids of the captures whose private memory the pool keeps.
    fn captures(&self) -> Vec<u64> {
        CapturePool::Pool(&self.pool).captures()
    }

    /// Bytes of private memory the pool keeps for capture ``capture_id`` (0 for an unknown one).
    fn capture_pool_size(&self, capture_id: u64) -> usize {
        CapturePool::Pool(&self.pool).pool_size(capture_id)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CudaMemoryResource>()?;
    m.add_class::<HostMemoryResource>()?;
    m.add_class::<FailingAllocationResource>()?;
    m.add_class::<PoolMemoryResource>()?;
    Ok(())
}
