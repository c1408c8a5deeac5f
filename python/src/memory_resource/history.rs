//! `HistoryResourceAdaptor`: records the allocation history of its upstream and takes snapshots
//! in the pickle layout of PyTorch's memory viewer (not in RMM 26.10: an addition of rmm-rs,
//! behind `rmm.memory._record_memory_history` and `rmm.memory._snapshot`).

use super::{upstream_arg, DeviceMemoryResource, UpstreamResourceAdaptor};
use crate::error::IntoPy;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rmm::adaptor as a;
use rmm::history::{Frame, RecordOptions, Recorder, StackSource};
use rmm::SharedResource;
use std::path::PathBuf;
use std::sync::Arc;

/// The Python stack of the calling thread, innermost frame first (empty where no Python code
/// is running on it). Takes the GIL: only called while stacks are recorded, from the thread that
/// allocates or frees (PyTorch's backward pass allocates on its own threads, which hold no GIL
/// and have no Python frames).
fn python_stack() -> Vec<Frame> {
    // SAFETY: Py_IsInitialized may be called at any time, with or without the GIL.
    if unsafe { pyo3::ffi::Py_IsInitialized() } == 0 {
        return Vec::new(); // an event from a thread after the interpreter went away
    }
    Python::attach(|py| {
        let mut frames = Vec::new();
        let Ok(mut frame) = py.import("sys").and_then(|sys| sys.call_method1("_getframe", (0,))) else {
            return frames;
        };
        while !frame.is_none() {
            let read = || -> PyResult<Frame> {
                let code = frame.getattr("f_code")?;
                Ok(Frame {
                    filename: code.getattr("co_filename")?.extract()?,
                    line: frame.getattr("f_lineno")?.extract::<Option<u32>>()?.unwrap_or(0),
                    name: code.getattr("co_name")?.extract()?,
                })
            };
            match read() {
                Ok(f) => frames.push(f),
                Err(_) => break,
            }
            frame = match frame.getattr("f_back") {
                Ok(back) => back,
                Err(_) => break,
            };
        }
        frames
    })
}

/// Records every allocate and free of its upstream (address, size, stream, device, time and,
/// with ``stacks=True``, the Python stack) once ``record_history()`` is called, and takes
/// snapshots in the layout of ``torch.cuda.memory._snapshot()``.
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = UpstreamResourceAdaptor, subclass, frozen)]
pub struct HistoryResourceAdaptor {
    adaptor: Arc<a::HistoryResourceAdaptor<SharedResource>>,
}

#[pymethods]
impl HistoryResourceAdaptor {
    /// An adaptor over ``upstream_mr``, not recording yet; ``device`` (default: the current
    /// device) is the device its events and segments are reported on.
    #[new]
    #[pyo3(signature = (upstream_mr, device = None))]
    fn new(upstream_mr: &Bound<'_, PyAny>, device: Option<i32>) -> PyResult<PyClassInitializer<Self>> {
        let (upstream, resource) = upstream_arg(upstream_mr)?;
        let adaptor = Arc::new(match device {
            Some(d) if d < 0 => return Err(PyValueError::new_err(format!("device {d} is not a device id"))),
            Some(d) => a::HistoryResourceAdaptor::with_recorder(resource, Arc::new(Recorder::new(d))),
            None => a::HistoryResourceAdaptor::new(resource),
        });
        let source: StackSource = Arc::new(python_stack);
        adaptor.recorder().set_stack_source(Some(source));
        Ok(UpstreamResourceAdaptor::init(upstream, adaptor.clone()).add_subclass(HistoryResourceAdaptor { adaptor }))
    }

    /// Starts (``enabled=True``) or stops recording. ``max_entries`` bounds the events kept (the
    /// oldest go first), ``stacks`` records each event's Python stack, ``clear_history`` forgets
    /// what was recorded. A ``max_entries`` below 1 is a ``ValueError``.
    #[pyo3(signature = (enabled = true, *, max_entries = rmm::history::DEFAULT_MAX_ENTRIES, stacks = false, clear_history = false))]
    fn record_history(&self, enabled: bool, max_entries: usize, stacks: bool, clear_history: bool) -> PyResult<()> {
        let recorder = self.adaptor.recorder();
        if !enabled {
            recorder.disable();
            if clear_history {
                recorder.clear();
            }
            return Ok(());
        }
        recorder
            .enable(RecordOptions { max_entries, stacks, clear: clear_history })
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// True while events are recorded.
    #[getter]
    fn is_recording(&self) -> bool {
        self.adaptor.recorder().is_enabled()
    }

    /// The number of events kept now.
    #[getter]
    fn history_length(&self) -> usize {
        self.adaptor.recorder().len()
    }

    /// The device the events and segments are reported on.
    #[getter]
    fn device(&self) -> i32 {
        self.adaptor.recorder().device()
    }

    /// The snapshot (the upstream's segments and the recorded trace) as pickle bytes:
    /// ``pickle.loads`` gives the dictionary of ``torch.cuda.memory._snapshot()``.
    fn snapshot_pickle<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let bytes = py.detach(|| self.adaptor.snapshot_pickle());
        PyBytes::new(py, &bytes)
    }

    /// Writes the snapshot's pickle to ``path`` (``OSError`` if it cannot).
    fn dump_snapshot(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| self.adaptor.dump_snapshot(&path)).py()
    }

    /// Writes the snapshot and the memory map (an SVG picture) into the folder ``path`` whenever
    /// an allocation runs out of memory; the ``MemoryError``'s message names both files.
    /// ``None`` stops it.
    #[pyo3(signature = (path))]
    fn dump_on_oom(&self, path: Option<PathBuf>) {
        self.adaptor.set_dump_on_oom(path);
    }
}

/// The snapshot of any resource as pickle bytes: the segments of the pool under it (none where
/// it has none) and, for a ``HistoryResourceAdaptor``, its trace.
#[pyfunction]
fn _snapshot_pickle<'py>(mr: &Bound<'py, DeviceMemoryResource>) -> Bound<'py, PyBytes> {
    let py = mr.py();
    if let Ok(h) = mr.cast::<HistoryResourceAdaptor>() {
        return h.get().snapshot_pickle(py);
    }
    let resource = mr.get().resource().clone();
    let bytes = py.detach(|| rmm::history::snapshot_pickle(&resource, None));
    PyBytes::new(py, &bytes)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<HistoryResourceAdaptor>()?;
    m.add_function(wrap_pyfunction!(_snapshot_pickle, m)?)?;
    Ok(())
}
