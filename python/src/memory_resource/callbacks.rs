//! The resources that call Python: `CallbackMemoryResource` (allocate and free through Python
//! functions) and `FailureCallbackResourceAdaptor` (ask a Python function whether to retry after
//! running out of memory).
//!
//! Callbacks run on whatever thread allocates, with the GIL taken there (`Python::attach`). A
//! Python exception raised in one becomes the Rust error of the allocation, and the caller sees
//! it again as RMM's Cython layer shows it: `MemoryError` stays a `MemoryError`, anything else is
//! a `RuntimeError`, each with the exception's message; from a free, that exception is the cause
//! of a `SystemError` (`DeviceMemoryResource.deallocate`).

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
    // SAFETY: the stream of an allocate or deallocate call is alive for that call, which is when
    // the Python callback gets the object; a callback that keeps it longer takes on RMM's contract
    // for stream arguments.
    Py::new(py, unsafe { Stream::from_handle(stream.handle()) })
}

/// Allocates and frees through two Python functions (RMM's `callback_memory_resource`):
/// `allocate_func(nbytes, stream) -> int` and `deallocate_func(ptr, nbytes, stream)`. For a
/// non-empty request, an answer that is null is a `MemoryError`, one that is no int (or out of
/// range) a `RuntimeError`, and one not aligned to 256 bytes a `RuntimeError` after it is handed
/// back to `deallocate_func` (`docs/differences.md#callback-bad-address`).
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", extends = DeviceMemoryResource, subclass, frozen)]
pub struct CallbackMemoryResource;

/// Calls `allocate_func(bytes, stream)`; its answer as an address. An answer that is no int, or
/// one out of an address's range, is a runtime error that shows it.
fn call_allocate(func: &Py<PyAny>, bytes: usize, stream: CudaStreamView) -> rmm::Result<*mut u8> {
    Python::attach(|py| {
        let answer = stream_object(py, stream)
            .and_then(|s| func.call1(py, (bytes, s)))
            .map_err(|e| from_callback(py, e, bytes))?;
        let answer = answer.bind(py);
        answer.extract::<usize>().map(|ptr| ptr as *mut u8).map_err(|e| {
            let shown = answer.repr().map(|r| r.to_string()).unwrap_or_else(|_| "an object".into());
            rmm::Error::BadUpstream(format!(
                "allocate_func returned {shown} for {bytes} bytes, which is not an address ({})",
                e.value(py)
            ))
        })
    })
}

/// Calls `deallocate_func(ptr, bytes, stream)`; an exception it raises becomes the cause of
/// RMM's `SystemError` from `DeviceMemoryResource.deallocate`.
fn call_deallocate(func: &Py<PyAny>, ptr: *mut u8, bytes: usize, stream: CudaStreamView) -> rmm::Result<()> {
    let ptr = ptr as usize;
    Python::attach(|py| {
        let called = stream_object(py, stream).and_then(|s| func.call1(py, (ptr, bytes, s)));
        called.map(|_| ()).map_err(|e| from_callback(py, e, bytes))
    })
}

/// The core callback resource, plus what RMM's does and the core's leaves out: a zero-byte request
/// and a free of a null pointer reach the Python functions too (RMM calls them for every request;
/// the answer to a zero-byte request is handed back as it is, since no byte of it may be used).
/// And what RMM leaves out: an address for a non-empty request that is not aligned to the
/// effective alignment (at least 256 bytes) is handed back to `deallocate_func` and refused with
/// [`rmm::Error::BadUpstream`] (a `RuntimeError`), as the core refuses null (a `MemoryError`):
/// nothing misaligned is ever handed out.
struct PyCallbackResource<R> {
    inner: R,
    allocate_func: Arc<Py<PyAny>>,
    deallocate_func: Arc<Py<PyAny>>,
}

impl<R: MemoryResource> PyCallbackResource<R> {
    /// Gives the misaligned `ptr` back to `deallocate_func` (with the size and stream it was
    /// asked for, so a callback pair that tracks its blocks loses none) and says so in the error.
    #[cold]
    #[inline(never)]
    fn refuse_misaligned(
        &self,
        ptr: *mut u8,
        bytes: usize,
        alignment: usize,
        needed: usize,
        stream: CudaStreamView,
    ) -> rmm::Error {
        let handed_back = match self.inner.deallocate(ptr, bytes, alignment, stream) {
            Ok(()) => "it was handed back to deallocate_func".to_string(),
            Err(e) => format!("handing it back to deallocate_func failed ({e})"),
        };
        rmm::Error::BadUpstream(format!(
            "allocate_func returned {:#x} for {bytes} bytes, which is not aligned to {needed} bytes; {handed_back}",
            ptr as usize
        ))
    }
}

// SAFETY: non-empty requests and non-null frees are the core resource's, which refuses null, and
// its answers are refused here unless aligned, over functions whose remaining promise (the memory
// is theirs to hand out until freed) the Python caller makes; a zero-byte answer gives access to
// no byte, and a null free frees nothing Rust handed out.
unsafe impl<R: MemoryResource> MemoryResource for PyCallbackResource<R> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> rmm::Result<*mut u8> {
        let needed = rmm::resource::effective_alignment(alignment)?;
        if bytes == 0 {
            return call_allocate(&self.allocate_func, 0, stream);
        }
        let ptr = self.inner.allocate(bytes, alignment, stream)?;
        if !(ptr as usize).is_multiple_of(needed) {
            return Err(self.refuse_misaligned(ptr, bytes, alignment, needed, stream));
        }
        Ok(ptr)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> rmm::Result<()> {
        if ptr.is_null() {
            return call_deallocate(&self.deallocate_func, ptr, bytes, stream);
        }
        self.inner.deallocate(ptr, bytes, alignment, stream)
    }

    fn is_device_accessible(&self) -> bool {
        self.inner.is_device_accessible()
    }

    fn is_host_accessible(&self) -> bool {
        self.inner.is_host_accessible()
    }

    fn claim(&self, ptr: *mut u8, bytes: usize) -> rmm::Result<()> {
        self.inner.claim(ptr, bytes)
    }

    fn unclaim(&self, ptr: *mut u8, bytes: usize) -> rmm::Result<()> {
        self.inner.unclaim(ptr, bytes)
    }
}

#[pymethods]
impl CallbackMemoryResource {
    #[new]
    fn new(allocate_func: Py<PyAny>, deallocate_func: Py<PyAny>) -> PyClassInitializer<Self> {
        let (allocate_func, deallocate_func) = (Arc::new(allocate_func), Arc::new(deallocate_func));
        let (alloc, dealloc) = (allocate_func.clone(), deallocate_func.clone());
        let allocate =
            move |bytes: usize, _alignment: usize, stream: CudaStreamView| call_allocate(&alloc, bytes, stream);
        let deallocate = move |ptr: *mut u8, bytes: usize, _alignment: usize, stream: CudaStreamView| {
            call_deallocate(&dealloc, ptr, bytes, stream)
        };
        // SAFETY: the Python caller promises its functions return valid device memory and free
        // only that, RMM's contract for this class; Python code is outside Rust's checks, so
        // `PyCallbackResource` refuses a misaligned answer before anything uses it (the core
        // refuses null).
        let inner = unsafe { rmm::resource::CallbackMemoryResource::new(allocate, deallocate) };
        let resource: SharedResource = Arc::new(PyCallbackResource { inner, allocate_func, deallocate_func });
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

    fn claim(&self, ptr: *mut u8, bytes: usize) -> rmm::Result<()> {
        self.inner.claim(ptr, bytes)
    }

    fn unclaim(&self, ptr: *mut u8, bytes: usize) -> rmm::Result<()> {
        self.inner.unclaim(ptr, bytes)
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
