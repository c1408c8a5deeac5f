//! The adaptor classes: resources that forward to an upstream and observe, limit or shape the
//! traffic.

use super::{upstream_arg, UpstreamResourceAdaptor};
use crate::helper::{CBool, CSize};
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
        // RMM throws std::out_of_range with this message, which Cython raises as IndexError.
        let frame =
            self.adaptor.pop_counters().map_err(|_| PyIndexError::new_err("cannot pop the last counter pair"))?;
        statistics(py, frame)
    }

    /// The bytes outstanding through the adaptor over all frames, and their peak since the top
    /// frame was pushed or its peaks reset (for `rmm.allocators.torch`'s statistics).
    fn _stack_bytes(&self) -> (i64, i64) {
        let c = self.adaptor.stack_bytes();
        (c.value, c.peak)
    }

    /// Sets the top frame's peaks to its current values.
    fn _reset_peaks(&self) {
        self.adaptor.reset_peaks()
    }
}

/// Refuses allocations that would take the bytes outstanding past a limit (RMM's
/// `limiting_resource_adaptor`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = UpstreamResourceAdaptor, subclass, frozen)]
pub struct LimitingResourceAdaptor {
    adaptor: Arc<a::LimitingResourceAdaptor<SharedResource>>,
}

#[pymethods]
impl LimitingResourceAdaptor {
    #[new]
    fn new(upstream_mr: &Bound<'_, PyAny>, allocation_limit: CSize) -> PyResult<PyClassInitializer<Self>> {
        let CSize(allocation_limit) = allocation_limit;
        let (upstream, resource) = upstream_arg(upstream_mr)?;
        let adaptor = Arc::new(a::LimitingResourceAdaptor::new(resource, allocation_limit));
        Ok(UpstreamResourceAdaptor::init(upstream, adaptor.clone()).add_subclass(LimitingResourceAdaptor { adaptor }))
    }

    /// Bytes allocated through this adaptor and not yet freed.
    fn get_allocated_bytes(&self) -> usize {
        self.adaptor.allocated_bytes()
    }

    /// The most bytes this adaptor lets be outstanding.
    fn get_allocation_limit(&self) -> usize {
        self.adaptor.allocation_limit()
    }
}

/// Records every allocation with its size (and optionally its stack) until it is freed (RMM's
/// `tracking_resource_adaptor`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = UpstreamResourceAdaptor, subclass, frozen)]
pub struct TrackingResourceAdaptor {
    adaptor: Arc<a::TrackingResourceAdaptor<SharedResource>>,
}

#[pymethods]
impl TrackingResourceAdaptor {
    #[new]
    /// `capture_stacks` is read for its truth, as RMM's `bool` argument is (`1`, `"yes"` and
    /// `None` are accepted).
    #[pyo3(signature = (upstream_mr, capture_stacks = CBool(false)), text_signature = "(upstream_mr, capture_stacks=False)")]
    fn new(upstream_mr: &Bound<'_, PyAny>, capture_stacks: CBool) -> PyResult<PyClassInitializer<Self>> {
        let CBool(capture_stacks) = capture_stacks;
        let (upstream, resource) = upstream_arg(upstream_mr)?;
        let adaptor = Arc::new(a::TrackingResourceAdaptor::new(resource, capture_stacks));
        Ok(UpstreamResourceAdaptor::init(upstream, adaptor.clone()).add_subclass(TrackingResourceAdaptor { adaptor }))
    }

    /// Bytes allocated through this adaptor and not yet freed.
    fn get_allocated_bytes(&self) -> usize {
        self.adaptor.allocated_bytes()
    }

    /// One line per outstanding allocation, by address, in RMM's format (`0x7f..: 256 B`, then
    /// ` : callstack:` and the frames when stacks are captured); empty when none is outstanding.
    fn get_outstanding_allocations_str(&self) -> String {
        outstanding_allocations_str(&self.adaptor.outstanding_allocations())
    }

    /// Writes `get_outstanding_allocations_str()` to RMM's debug log (as RMM, at debug level,
    /// so it shows only when the logging level is debug or trace).
    fn log_outstanding_allocations(&self, py: Python<'_>) {
        let adaptor = &self.adaptor;
        py.detach(|| {
            let report = outstanding_allocations_str(&adaptor.outstanding_allocations());
            rmm::log_debug!("Outstanding Allocations: {}", report)
        })
    }
}

/// RMM's `tracking_resource_adaptor::get_outstanding_allocations_str()`: for each allocation, by
/// address, `<address>: <bytes> B` (the address as C++ streams a pointer: `0x..`, or `0` for
/// null) and a newline; with a captured stack, ` : callstack:`, one `#<i> in <frame>` line per
/// frame and a blank line. Nothing outstanding gives an empty string.
fn outstanding_allocations_str(records: &[a::AllocationRecord]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    // Writing into a String cannot fail; the results are ignored for that reason.
    for r in records {
        if r.ptr == 0 {
            s.push('0');
        } else {
            let _ = write!(s, "{:#x}", r.ptr);
        }
        let _ = write!(s, ": {} B", r.bytes);
        if let Some(stack) = &r.stack {
            s.push_str(" : callstack:\n");
            // Rust prints a backtrace as `N: symbol` lines, each followed by `at file:line`.
            for line in stack.to_string().lines() {
                if let Some((index, symbol)) = line.trim().split_once(": ") {
                    if index.parse::<usize>().is_ok() {
                        let _ = writeln!(s, "#{index} in {symbol}");
                    }
                }
            }
        }
        s.push('\n');
    }
    s
}

/// Prefetches every allocation to the device it is made on (RMM's `prefetch_resource_adaptor`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = UpstreamResourceAdaptor, subclass, frozen)]
pub struct PrefetchResourceAdaptor;

#[pymethods]
impl PrefetchResourceAdaptor {
    #[new]
    fn new(upstream_mr: &Bound<'_, PyAny>) -> PyResult<PyClassInitializer<Self>> {
        let (upstream, resource) = upstream_arg(upstream_mr)?;
        let adaptor = Arc::new(a::PrefetchResourceAdaptor::new(resource));
        Ok(UpstreamResourceAdaptor::init(upstream, adaptor).add_subclass(PrefetchResourceAdaptor))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<StatisticsResourceAdaptor>()?;
    m.add_class::<LimitingResourceAdaptor>()?;
    m.add_class::<TrackingResourceAdaptor>()?;
    m.add_class::<PrefetchResourceAdaptor>()?;
    Ok(())
}
