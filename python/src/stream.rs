//! `rmm.pylibrmm.stream`: `Stream` (a CUDA stream, owned or borrowed from CuPy, Numba, PyTorch or
//! any object with `__cuda_stream__`), `_OwningStream`, and the default-stream constants.

use crate::error::IntoPy;
use pyo3::exceptions::{PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use rmm::{CudaStream, CudaStreamView};

/// `cudaStreamDefault` creation flags: the stream synchronises with the legacy default stream.
pub const SYNC_DEFAULT: u32 = 0;
/// `cudaStreamNonBlocking`.
pub const NON_BLOCKING: u32 = 1;

/// A CUDA stream this module created; destroyed when the last `Stream` over it is collected.
#[pyclass(module = "rmm.pylibrmm.stream", name = "_OwningStream", frozen)]
pub struct OwningStream {
    stream: CudaStream,
}

#[pymethods]
impl OwningStream {
    #[new]
    #[pyo3(signature = (flags = SYNC_DEFAULT))]
    fn new(py: Python<'_>, flags: u32) -> PyResult<Self> {
        let non_blocking = match flags {
            SYNC_DEFAULT => false,
            NON_BLOCKING => true,
            other => return Err(PyValueError::new_err(format!("unknown CudaStreamFlags value {other}"))),
        };
        let stream = py.detach(|| CudaStream::with_flags(non_blocking)).py()?;
        Ok(OwningStream { stream })
    }
}

/// A CUDA stream as RMM's Python API sees it: a handle plus the object that keeps it alive.
#[pyclass(module = "rmm.pylibrmm.stream", name = "Stream", subclass, frozen)]
pub struct Stream {
    handle: usize,
    owner: Option<Py<PyAny>>,
}

impl Stream {
    /// The stream as the Rust core names it, borrowing this object: the owner kept here keeps
    /// the stream alive, and a handle Python gave without one names a live stream by RMM's
    /// contract for stream arguments.
    pub fn view(&self) -> CudaStreamView<'_> {
        // SAFETY: as said above: the stream lives at least as long as this object, which the view
        // borrows.
        unsafe { CudaStreamView::from_handle(self.handle) }
    }

    /// An object for `handle` that owns nothing.
    ///
    /// # Safety
    /// `handle` names a stream that outlives the object (a default stream), or one that Python
    /// code keeps alive while it uses the object (RMM's contract for stream arguments).
    pub unsafe fn from_handle(handle: usize) -> Self {
        Stream { handle, owner: None }
    }

    /// An object for `handle` that keeps `owner` alive.
    ///
    /// # Safety
    /// `owner` keeps the stream `handle` alive for as long as it lives (it destroys the stream,
    /// or holds what does).
    pub unsafe fn with_owner(handle: usize, owner: Py<PyAny>) -> Self {
        Stream { handle, owner: Some(owner) }
    }
}

/// The module's constants `DEFAULT_STREAM`, `LEGACY_DEFAULT_STREAM` and `PER_THREAD_DEFAULT_STREAM`
/// (handles 0, 1 and 2), made on first use.
static DEFAULT_STREAMS: [PyOnceLock<Py<Stream>>; 3] = [PyOnceLock::new(), PyOnceLock::new(), PyOnceLock::new()];

/// The module's constant for the default stream with `handle` (0, 1 or 2), or `None` for any
/// other handle. Default streams are never destroyed, so these objects own nothing.
pub fn default_stream_object(py: Python<'_>, handle: usize) -> Option<&Bound<'_, Stream>> {
    let cell = DEFAULT_STREAMS.get(handle)?;
    let make = || {
        // SAFETY: the default streams (handles 0, 1 and 2 only get here) are never destroyed.
        let stream = unsafe { Stream::from_handle(handle) };
        Py::new(py, stream).expect("allocating a default stream")
    };
    Some(cell.get_or_init(py, make).bind(py))
}

/// The `DEFAULT_STREAM` object.
pub fn default_stream(py: Python<'_>) -> &Bound<'_, Stream> {
    default_stream_object(py, 0).expect("handle 0 is a default stream")
}

/// A `stream=` argument of RMM's Cython signatures (`Stream stream=DEFAULT_STREAM`): left out it is
/// `DEFAULT_STREAM`; given, it must be a `Stream` (RMM's `as_stream` refuses `None`).
pub enum StreamArg<'py> {
    /// Not passed.
    Omitted,
    /// What the caller passed.
    Given(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for StreamArg<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(StreamArg::Given(obj.to_owned()))
    }
}

impl<'py> StreamArg<'py> {
    /// The `Stream` object, or RMM's `TypeError`.
    pub fn resolve(self, py: Python<'py>) -> PyResult<Bound<'py, Stream>> {
        match self {
            StreamArg::Omitted => Ok(default_stream(py).clone()),
            StreamArg::Given(obj) => stream_object(obj),
        }
    }
}

/// `obj` as a `Stream`: `None` and other types are a `TypeError`, as RMM's typed arguments are.
pub fn stream_object(obj: Bound<'_, PyAny>) -> PyResult<Bound<'_, Stream>> {
    if obj.is_none() {
        return Err(PyTypeError::new_err("stream argument cannot be None. Please provide a valid Stream instance."));
    }
    match obj.cast_into::<Stream>() {
        Ok(s) => Ok(s),
        Err(e) => {
            let got = e.into_inner().get_type().name().map(|n| n.to_string()).unwrap_or_default();
            Err(PyTypeError::new_err(format!(
                "Argument 'stream' has incorrect type (expected rmm.pylibrmm.stream.Stream, got {got})"
            )))
        }
    }
}

/// The handle of a Numba, CuPy or PyTorch stream, or `None` when `obj` is none of them. A
/// library is imported only when `obj`'s type comes from it, so no call imports one needlessly.
fn foreign_stream_handle(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    let module = obj.get_type().module()?.to_string();
    let root = module.split('.').next().unwrap_or_default();
    if root == "numba" || root == "numba_cuda" {
        if let Ok(numba_cuda) = py.import("numba.cuda") {
            let driver_stream = numba_cuda.getattr("cudadrv")?.getattr("driver")?.getattr("Stream")?;
            if obj.is_instance(&driver_stream)? {
                // int(numba_stream) is its handle.
                return Ok(Some(obj.call_method0("__int__")?.extract()?));
            }
        }
    }
    if root == "cupy" || root == "cupy_backends" {
        if let Ok(cupy_stream) = py.import("cupy.cuda.stream") {
            for name in ["Stream", "ExternalStream"] {
                if obj.is_instance(&cupy_stream.getattr(name)?)? {
                    return Ok(Some(obj.getattr("ptr")?.extract()?));
                }
            }
        }
    }
    // PyTorch streams without `__cuda_stream__` (older releases) name their handle `cuda_stream`.
    if root == "torch" {
        if let Ok(torch_cuda) = py.import("torch.cuda") {
            if obj.is_instance(&torch_cuda.getattr("Stream")?)? {
                return Ok(Some(obj.getattr("cuda_stream")?.extract()?));
            }
        }
    }
    Ok(None)
}

#[pymethods]
impl Stream {
    #[new]
    #[pyo3(signature = (obj = None, flags = None))]
    fn new(py: Python<'_>, obj: Option<&Bound<'_, PyAny>>, flags: Option<u32>) -> PyResult<Self> {
        let Some(obj) = obj else {
            let owning = Py::new(py, OwningStream::new(py, flags.unwrap_or(SYNC_DEFAULT))?)?;
            let handle = owning.get().stream.view().handle();
            return Ok(Stream { handle, owner: Some(owning.into_any()) });
        };
        if flags.is_some() {
            return Err(PyValueError::new_err(
                "flags may only be specified when obj is None; flags cannot be applied to an existing stream.",
            ));
        }
        if let Ok(other) = obj.cast::<Stream>() {
            let other = other.get();
            return Ok(Stream { handle: other.handle, owner: other.owner.as_ref().map(|o| o.clone_ref(py)) });
        }
        if obj.hasattr("__cuda_stream__")? {
            let (version, handle): (i64, usize) = obj.call_method0("__cuda_stream__")?.extract()?;
            if version != 0 {
                return Err(PyNotImplementedError::new_err(format!(
                    "RMM does not currently support the CUDA Stream Protocol version: '{version}'."
                )));
            }
            return Ok(Stream { handle, owner: Some(obj.clone().unbind()) });
        }
        match foreign_stream_handle(py, obj)? {
            Some(handle) => Ok(Stream { handle, owner: Some(obj.clone().unbind()) }),
            None => Err(PyTypeError::new_err(format!("Cannot create stream from {}", obj.get_type()))),
        }
    }

    /// The CUDA stream protocol: `(version, handle)`.
    fn __cuda_stream__(&self) -> (i64, usize) {
        (0, self.handle)
    }

    /// Blocks until all work on the stream has finished.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        let view = self.view();
        py.detach(|| view.synchronize()).py()
    }

    /// True for the legacy default stream (0 or `cudaStreamLegacy`).
    fn is_default(&self) -> bool {
        self.view().is_default()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Stream>().map(|o| o.get().handle == self.handle).unwrap_or(false)
    }

    fn __hash__(&self) -> u64 {
        self.handle as u64
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<OwningStream>()?;
    m.add_class::<Stream>()?;
    let py = m.py();
    for (name, handle) in [("DEFAULT_STREAM", 0), ("LEGACY_DEFAULT_STREAM", 1), ("PER_THREAD_DEFAULT_STREAM", 2)] {
        m.add(name, default_stream_object(py, handle))?;
    }
    Ok(())
}
