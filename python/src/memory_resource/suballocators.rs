//! The resources that carve an upstream's memory up: arena, fixed-size blocks and size bins.

use super::{upstream_arg, DeviceMemoryResource, UpstreamResourceAdaptor};
use crate::error::IntoPy;
use crate::helper::{optional_size_arg, CSize};
use parking_lot::Mutex;
use pyo3::prelude::*;
use rmm::resource as r;
use rmm::SharedResource;
use std::sync::Arc;

/// Per-thread arenas over one global arena (RMM's `arena_memory_resource`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = UpstreamResourceAdaptor, subclass, frozen)]
pub struct ArenaMemoryResource;

#[pymethods]
impl ArenaMemoryResource {
    #[new]
    #[pyo3(signature = (upstream_mr, arena_size = None, dump_log_on_failure = false))]
    fn new(
        py: Python<'_>,
        upstream_mr: &Bound<'_, PyAny>,
        arena_size: Option<&Bound<'_, PyAny>>,
        dump_log_on_failure: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        let (upstream, resource) = upstream_arg(upstream_mr)?;
        let size = optional_size_arg(arena_size)?;
        let arena = py.detach(|| r::ArenaMemoryResource::new(resource, size, dump_log_on_failure));
        let arena = arena.map_err(|e| crate::error::construction_error(e, &[size.unwrap_or(0)]))?;
        Ok(UpstreamResourceAdaptor::init(upstream, Arc::new(arena)).add_subclass(ArenaMemoryResource))
    }
}

/// Blocks of one size, taken from the upstream a chunk at a time (RMM's
/// `fixed_size_memory_resource`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = UpstreamResourceAdaptor, subclass, frozen)]
pub struct FixedSizeMemoryResource;

#[pymethods]
impl FixedSizeMemoryResource {
    #[new]
    #[pyo3(
        signature = (upstream_mr, block_size = CSize(1_048_576), blocks_to_preallocate = CSize(128)),
        text_signature = "(upstream_mr, block_size=1048576, blocks_to_preallocate=128)"
    )]
    fn new(
        py: Python<'_>,
        upstream_mr: &Bound<'_, PyAny>,
        block_size: CSize,
        blocks_to_preallocate: CSize,
    ) -> PyResult<PyClassInitializer<Self>> {
        let (CSize(block_size), CSize(blocks_to_preallocate)) = (block_size, blocks_to_preallocate);
        let (upstream, resource) = upstream_arg(upstream_mr)?;
        let fixed = py.detach(|| r::FixedSizeMemoryResource::new(resource, block_size, blocks_to_preallocate)).py()?;
        Ok(UpstreamResourceAdaptor::init(upstream, Arc::new(fixed)).add_subclass(FixedSizeMemoryResource))
    }
}

/// Requests sorted into size bins, each served by its own resource; larger ones go to the
/// upstream (RMM's `binning_memory_resource`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = UpstreamResourceAdaptor, subclass, frozen)]
pub struct BinningMemoryResource {
    binning: Arc<r::BinningMemoryResource<SharedResource>>,
    /// The bin resources given to `add_bin`, kept alive (and listed by `bin_mrs`) as RMM does.
    bin_mrs: Mutex<Vec<Py<DeviceMemoryResource>>>,
}

#[pymethods]
impl BinningMemoryResource {
    #[new]
    #[pyo3(
        signature = (upstream_mr, min_size_exponent = -1, max_size_exponent = -1),
        text_signature = "(upstream_mr, min_size_exponent=-1, max_size_exponent=-1)"
    )]
    fn new(
        py: Python<'_>,
        upstream_mr: &Bound<'_, PyAny>,
        min_size_exponent: i8,
        max_size_exponent: i8,
    ) -> PyResult<PyClassInitializer<Self>> {
        let (upstream, resource) = upstream_arg(upstream_mr)?;
        // No bins when either exponent is -1 or none lies between them, as in RMM. An exponent
        // outside 0..=62 asks RMM for a bin no allocation can fill: its constructor's upstream
        // allocation fails, a MemoryError.
        let binning = if min_size_exponent == -1 || max_size_exponent == -1 || min_size_exponent > max_size_exponent {
            r::BinningMemoryResource::new(resource)
        } else {
            py.detach(|| r::BinningMemoryResource::with_bins(resource, min_size_exponent, max_size_exponent)).map_err(
                |e| match e {
                    rmm::Error::InvalidArgument(m) => {
                        pyo3::exceptions::PyMemoryError::new_err(format!("std::bad_alloc: out_of_memory: {m}"))
                    }
                    other => crate::error::to_py(other),
                },
            )?
        };
        let binning = Arc::new(binning);
        Ok(UpstreamResourceAdaptor::init(upstream, binning.clone())
            .add_subclass(BinningMemoryResource { binning, bin_mrs: Mutex::new(Vec::new()) }))
    }

    /// Adds a bin for requests of up to `allocation_size` bytes, served by `bin_resource`, or by
    /// a new fixed-size resource over the upstream when it is `None`.
    #[pyo3(signature = (allocation_size, bin_resource = None))]
    fn add_bin(
        &self,
        py: Python<'_>,
        allocation_size: CSize,
        bin_resource: Option<&Bound<'_, DeviceMemoryResource>>,
    ) -> PyResult<()> {
        let CSize(allocation_size) = allocation_size;
        let resource = bin_resource.map(|b| b.get().resource().clone());
        let binning = &self.binning;
        py.detach(|| binning.add_bin(allocation_size, resource)).py()?;
        if let Some(b) = bin_resource {
            self.bin_mrs.lock().push(b.clone().unbind());
        }
        Ok(())
    }

    /// The bin resources passed to `add_bin`, in the order they were added.
    #[getter]
    fn bin_mrs(&self, py: Python<'_>) -> Vec<Py<DeviceMemoryResource>> {
        self.bin_mrs.lock().iter().map(|b| b.clone_ref(py)).collect()
    }

    /// The same list under the name of RMM's attribute.
    #[getter(_bin_mrs)]
    fn bin_mrs_attribute(&self, py: Python<'_>) -> Vec<Py<DeviceMemoryResource>> {
        self.bin_mrs(py)
    }

    /// The sizes of the bins, increasing (not part of RMM's Python API; for tests).
    fn _bin_sizes(&self) -> Vec<usize> {
        self.binning.bin_sizes()
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ArenaMemoryResource>()?;
    m.add_class::<FixedSizeMemoryResource>()?;
    m.add_class::<BinningMemoryResource>()?;
    Ok(())
}
