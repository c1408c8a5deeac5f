//! The adaptor classes: resources that forward to an upstream and observe, limit or shape the
//! traffic.

use super::{upstream_arg, UpstreamResourceAdaptor};
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use rmm::adaptor as a;
use rmm::adaptor::CounterFrame;
use rmm::SharedResource;
use std::sync::Arc;

/// A `rmm.statistics.Statistics` object from a pair of counters.
fn statistics(py: Python<'_>, frame: CounterFrame) -> PyResult<Py<PyAny>> {
    let cls = py.import("rmm.statistics")?.getattr("Statistics")?;
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("current_bytes", frame.bytes.value)?;
    kwargs.set_item("current_count", frame.allocations.value)?;
    kwargs.set_item("peak_bytes", frame.bytes.peak)?;
    kwargs.set_item("peak_count", frame.allocations.peak)?;
    kwargs.set_item("total_bytes", frame.bytes.total)?;
    kwargs.set_item("total_count", frame.allocations.total)?;
    Ok(cls.call((), Some(&kwargs))?.unbind())
}

/// Counts bytes and allocations: current, peak and total, with a stack of frames (RMM's
/// `statistics_resource_adaptor`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = UpstreamResourceAdaptor, subclass, frozen)]
pub struct StatisticsResourceAdaptor {
    adaptor: Arc<a::StatisticsResourceAdaptor<SharedResource>>,
}

#[pymethods]
impl StatisticsResourceAdaptor {
    #[new]
    fn new(upstream_mr: &Bound<'_, PyAny>) -> PyResult<PyClassInitializer<Self>> {
        let (upstream, resource) = upstream_arg(upstream_mr)?;
        let adaptor = Arc::new(a::StatisticsResourceAdaptor::new(resource));
        Ok(UpstreamResourceAdaptor::init(upstream, adaptor.clone()).add_subclass(StatisticsResourceAdaptor { adaptor }))
    }

    /// The current, peak and total bytes and allocations of the innermost frame.
    #[getter]
    fn allocation_counts(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        statistics(py, self.adaptor.counters())
    }

    /// Starts a new frame of counters; returns the frame that was current.
    fn push_counters(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        statistics(py, self.adaptor.push_counters())
    }

    /// Ends the innermost frame (its counts are added to the one below); returns it. Popping the
    /// last frame is an `IndexError`, as RMM's C++ `std::out_of_range` reaches Python.
    fn pop_counters(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let frame = self.adaptor.pop_counters().map_err(|e| PyIndexError::new_err(e.to_string()))?;
        statistics(py, frame)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<StatisticsResourceAdaptor>()?;
    Ok(())
}
