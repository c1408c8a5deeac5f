//! The resources that call Python: `CallbackMemoryResource` (allocate and free through Python
//! functions) and `FailureCallbackResourceAdaptor` (ask a Python function whether to retry after
//! running out of memory).
//!
//! Callbacks run on whatever thread allocates, with the GIL taken there (`Python::attach`). A
//! Python exception raised in one becomes the Rust error of the allocation, and the caller sees
//! it again as RMM's Cython layer shows it: `MemoryError` stays a `MemoryError`, anything else is
//! a `RuntimeError`, each with the exception's message.

use super::{upstream_arg, DeviceMemoryResource, UpstreamResourceAdaptor};
use crate::error::from_callback;
use crate::stream::Stream;
use pyo3::prelude::*;
use rmm::adaptor as a;
use rmm::{CudaStreamView, MemoryResource, SharedResource};
use std::cell::RefCell;
use std::sync::Arc;

/// A `Stream` object for a callback's stream argument.
fn stream_object(py: Python<'_>, stream: CudaStreamView) -> PyResult<Py<Stream>> {
    Py::new(py, Stream::from_handle(stream.handle()))
}

/// Allocates and frees through two Python functions (RMM's `callback_memory_resource`):
/// `allocate_func(nbytes, stream) -> int` and `deallocate_func(ptr, nbytes, stream)`.
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = DeviceMemoryResource, subclass, frozen)]
pub struct CallbackMemoryResource;

#[pymethods]
impl CallbackMemoryResource {
    #[new]
    fn new(allocate_func: Py<PyAny>, deallocate_func: Py<PyAny>) -> PyClassInitializer<Self> {
        let allocate = move |bytes: usize, _alignment: usize, stream: CudaStreamView| {
            Python::attach(|py| {
                let called = stream_object(py, stream)
                    .and_then(|s| allocate_func.call1(py, (bytes, s)))
                    .and_then(|ptr| ptr.extract::<usize>(py));
                called.map(|ptr| ptr as *mut u8).map_err(|e| from_callback(py, e, bytes))
            })
        };
        let deallocate = move |ptr: *mut u8, bytes: usize, _alignment: usize, stream: CudaStreamView| {
            let ptr = ptr as usize;
            Python::attach(|py| {
                let called = stream_object(py, stream).and_then(|s| deallocate_func.call1(py, (ptr, bytes, s)));
                called.map(|_| ()).map_err(|e| from_callback(py, e, bytes))
            })
        };
        // SAFETY: the Python caller promises its functions return valid device memory and free
        // only that, RMM's contract for this class; Python code is outside Rust's checks.
        let callback = unsafe { a::CallbackMemoryResource::new(allocate, deallocate) };
        let resource: SharedResource = Arc::new(callback);
        PyClassInitializer::from(DeviceMemoryResource::new(resource)).add_subclass(CallbackMemoryResource)
    }
}

thread_local! {
    /// The error of a failure callback that raised, for the allocation on this thread that called
    /// it: the core adaptor's callback can only answer "retry or not".
    static CALLBACK_ERROR: RefCell<Option<rmm::Error>> = const { RefCell::new(None) };
}

/// The core's failure-callback adaptor over a Python callback.
type Inner = a::FailureCallbackResourceAdaptor<SharedResource, Box<dyn Fn(usize) -> bool + Send + Sync>>;

/// The core adaptor, plus the way back for an exception raised by the callback: it stops the
/// retries (the callback answers "no") and replaces the out-of-memory error the adaptor returns.
struct PyFailureCallback {
    inner: Inner,
}

// SAFETY: blocks come from the core adaptor unchanged (it keeps the contract over its upstream)
// and go back to it; the accessibility answers are its own.
unsafe impl MemoryResource for PyFailureCallback {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> rmm::Result<*mut u8> {
        let result = self.inner.allocate(bytes, alignment, stream);
        let raised = CALLBACK_ERROR.with(|e| e.borrow_mut().take());
        match (result, raised) {
            (Err(_), Some(raised)) => Err(raised),
            (result, _) => result,
        }
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> rmm::Result<()> {
        self.inner.deallocate(ptr, bytes, alignment, stream)
    }

    fn is_device_accessible(&self) -> bool {
        self.inner.is_device_accessible()
    }

    fn is_host_accessible(&self) -> bool {
        self.inner.is_host_accessible()
    }
}

/// Calls `callback(nbytes)` when the upstream runs out of memory, and retries while it returns
/// True (RMM's `failure_callback_resource_adaptor`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = UpstreamResourceAdaptor, subclass, frozen)]
pub struct FailureCallbackResourceAdaptor;

#[pymethods]
impl FailureCallbackResourceAdaptor {
    #[new]
    fn new(upstream_mr: &Bound<'_, PyAny>, callback: Py<PyAny>) -> PyResult<PyClassInitializer<Self>> {
        let (upstream, resource) = upstream_arg(upstream_mr)?;
        let ask = move |bytes: usize| {
            Python::attach(|py| match callback.call1(py, (bytes,)).and_then(|answer| answer.bind(py).is_truthy()) {
                Ok(retry) => retry,
                Err(e) => {
                    let error = from_callback(py, e, bytes);
                    CALLBACK_ERROR.with(|slot| *slot.borrow_mut() = Some(error));
                    false
                }
            })
        };
        let inner: Inner = a::FailureCallbackResourceAdaptor::new(resource, Box::new(ask));
        let resource: SharedResource = Arc::new(PyFailureCallback { inner });
        Ok(UpstreamResourceAdaptor::init(upstream, resource).add_subclass(FailureCallbackResourceAdaptor))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CallbackMemoryResource>()?;
    m.add_class::<FailureCallbackResourceAdaptor>()?;
    Ok(())
}
