//! The resource classes that allocate from the driver or carve up an upstream's memory.

use super::{upstream_arg, DeviceMemoryResource, UpstreamResourceAdaptor};
use crate::error::IntoPy;
use crate::helper::optional_size_arg;
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
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CudaMemoryResource>()?;
    m.add_class::<HostMemoryResource>()?;
    m.add_class::<PoolMemoryResource>()?;
    Ok(())
}
