//! `rmm.pylibrmm.device_buffer`: `DeviceBuffer`, untyped memory from a resource, ordered on a
//! stream and freed on it when collected (RMM's `rmm::device_buffer` seen from Python), and the
//! module function `to_device`.
//!
//! The buffer keeps its resource object and stream object alive. Its allocation, size, capacity
//! and stream sit behind a mutex that is only taken for short reads with the GIL held or, for
//! copies, inside `py.detach`. It is never held across a call into the resource: a resource may
//! run Python (a `CallbackMemoryResource`, a `FailureCallbackResourceAdaptor`, a
//! `HistoryResourceAdaptor` recording stacks) and so wait for the GIL, which a thread waiting for
//! the mutex may hold. A new block is allocated before the mutex is taken and a block the buffer
//! let go of is freed after it is released, so no thread holds the mutex while waiting for the
//! GIL. A buffer of a host resource (no device access) is copied by the CPU, so it works without a
//! GPU.
//!
//! As RMM's `device_buffer`, the buffer records the device current when it is made and makes it
//! current again (a `DeviceGuard`) for its later allocations, copies and its free, whichever
//! device the caller has current; a copy (`copy()`) is made on the same device. A free that a pool
//! serves at once (no CUDA call) switches nothing.

mod memory;

use crate::copy::{check_user_pointer, copy_bytes, wait_before_release};
use crate::error::{to_py, IntoPy};
use crate::helper::CSize;
use crate::host_buffer::HostBuffer;
use crate::memory_resource::DeviceMemoryResource;
use crate::stream::{stream_object, Stream, StreamArg};
use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use rmm::{CudaStreamView, DeviceGuard, DeviceId, DEFAULT_ALIGNMENT};

/// What may change over a buffer's life.
struct State {
    ptr: usize,
    size: usize,
    capacity: usize,
    /// The stream the memory is ordered and freed on, and the object that keeps it alive.
    view: CudaStreamView<'static>,
    stream: Py<Stream>,
}

/// Memory from a resource, freed on its stream when the object is collected.
#[pyclass(module = "rmm.pylibrmm.device_buffer", name = "DeviceBuffer", subclass, frozen)]
pub struct DeviceBuffer {
    mr: Py<DeviceMemoryResource>,
    /// The device current when the buffer was made (`NONE` for host memory or without a driver).
    device: DeviceId,
    state: Mutex<State>,
}

/// `numpy.empty`, looked up once.
fn numpy_empty(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static EMPTY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    EMPTY.get_or_try_init(py, || Ok::<_, PyErr>(py.import("numpy")?.getattr("empty")?.unbind())).map(|f| f.bind(py))
}

/// `numpy.dtype`, looked up once.
fn numpy_dtype(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static DTYPE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    DTYPE.get_or_try_init(py, || Ok::<_, PyErr>(py.import("numpy")?.getattr("dtype")?.unbind())).map(|f| f.bind(py))
}

#[pymethods]
impl DeviceBuffer {
    /// `size` bytes from `mr` (default: the current device resource) on `stream`, copied from the
    /// host or device address `ptr` unless it is 0.
    #[new]
    #[pyo3(
        signature = (*, ptr = CSize(0), size = CSize(0), stream = StreamArg::Omitted, mr = None),
        text_signature = "(*, ptr=0, size=0, stream=..., mr=None)"
    )]
    fn new(
        py: Python<'_>,
        ptr: CSize,
        size: CSize,
        stream: StreamArg<'_>,
        mr: Option<Bound<'_, DeviceMemoryResource>>,
    ) -> PyResult<Self> {
        let (CSize(ptr), CSize(size)) = (ptr, size);
        if ptr != 0 {
            check_user_pointer(ptr, size, false)?;
        }
        let stream = stream.resolve(py)?;
        Self::create(py, Some((ptr, false)), size, stream, mr)
    }

    fn __len__(&self) -> usize {
        self.size_now()
    }

    fn __sizeof__(&self) -> usize {
        self.size_now()
    }

    fn __bytes__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyBytes>> {
        Self::tobytes(slf, StreamArg::Omitted)
    }

    /// The size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.size_now()
    }

    /// The size in bytes.
    #[getter]
    fn size(&self) -> usize {
        self.size_now()
    }

    /// The address of the memory (0 when nothing is allocated).
    #[getter]
    fn ptr(&self) -> usize {
        self.state.lock().ptr
    }

    /// Pickles as the bytes, restored by `to_device`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let to_device = py.import("rmm._native")?.getattr("to_device")?;
        let host = Self::copy_to_host(slf, None, StreamArg::Omitted)?;
        PyTuple::new(py, [to_device, PyTuple::new(py, [host])?.into_any()])
    }

    /// The CUDA array interface (version 0) of the bytes.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (ptr, size) = {
            let st = self.state.lock();
            (st.ptr, st.size)
        };
        let dict = PyDict::new(py);
        dict.set_item("data", (ptr, false))?;
        dict.set_item("shape", (size,))?;
        dict.set_item("strides", py.None())?;
        dict.set_item("typestr", "|u1")?;
        dict.set_item("version", 0)?;
        Ok(dict)
    }

    /// Prefetches managed memory to `device` (default: the current device; -1 is the host) on
    /// `stream` (default: the buffer's); does nothing for other memory.
    #[pyo3(signature = (device = None, stream = None))]
    fn prefetch(&self, py: Python<'_>, device: Option<i32>, stream: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let given = stream.map(stream_object).transpose()?;
        let given = given.as_ref().map(|s| s.get().view());
        if let Some(d) = device {
            // RMM passes any memory to cudaMemPrefetchAsync and ignores only its "invalid value"
            // answer for memory that is not managed: a device that does not exist is an error
            // whatever the memory.
            let count = rmm::device::device_count().unwrap_or(usize::MAX);
            if d >= 0 && d as usize >= count && self.size_now() > 0 {
                let err = rmm::Error::Cuda {
                    call: "cuMemPrefetchAsync",
                    code: 101,
                    name: "CUDA_ERROR_INVALID_DEVICE".into(),
                };
                return Err(pyo3::exceptions::PyRuntimeError::new_err(err.to_string()));
            }
        }
        if self.host_only() {
            return Ok(()); // host memory is never managed memory
        }
        let device = match device {
            Some(d) => DeviceId(d),
            None => DeviceId::current().py()?,
        };
        py.detach(|| {
            let st = self.state.lock();
            // The buffer's stream read under the same lock as the memory: alive while it is held.
            rmm::prefetch::prefetch(st.ptr as *const u8, st.size, device, given.unwrap_or(st.view))
        })
        .py()
    }

    /// A copy in new memory from the same resource, on the same stream.
    fn copy(slf: &Bound<'_, Self>) -> PyResult<Self> {
        let py = slf.py();
        let this = slf.get();
        loop {
            // The stream object is cloned with the GIL. The copy's memory is allocated without the
            // lock (the resource may run Python), and the bytes are copied on the stream only if
            // the buffer is still there with the same size when the lock is taken again (else,
            // changed meanwhile by `reserve` or `resize`, try again), so the new buffer's stream
            // object is always the one that keeps its stream alive.
            let (stream, view, size) = {
                let st = this.state.lock();
                (st.stream.clone_ref(py), st.view, st.size)
            };
            let copied = py
                .detach(|| -> rmm::Result<Option<usize>> {
                    if size == 0 {
                        return Ok(Some(0));
                    }
                    // Same resource, same device: made with the source's device current.
                    let _on_device = this.on_device()?;
                    let ptr = this.resource().allocate(size, DEFAULT_ALIGNMENT, view)? as usize;
                    let filled = this.copy_into(ptr, size, view);
                    if !matches!(filled, Ok(true)) {
                        // Unused; on an error, the error that matters is the copy's.
                        let _ = this.resource().deallocate(ptr as *mut u8, size, DEFAULT_ALIGNMENT, view);
                    }
                    Ok(filled?.then_some(ptr))
                })
                .py()?;
            if let Some(ptr) = copied {
                let state = State { ptr, size, capacity: size, view, stream };
                return Ok(DeviceBuffer { mr: this.mr.clone_ref(py), device: this.device, state: Mutex::new(state) });
            }
        }
    }

    fn __copy__(slf: &Bound<'_, Self>) -> PyResult<Self> {
        Self::copy(slf)
    }

    /// A new buffer holding a copy of the host buffer `b`.
    #[staticmethod]
    #[pyo3(name = "to_device", signature = (b, stream = StreamArg::Omitted))]
    fn to_device_static(py: Python<'_>, b: &Bound<'_, PyAny>, stream: StreamArg<'_>) -> PyResult<Self> {
        to_device(py, b, stream)
    }

    /// Copies the bytes into `ary` (any writable buffer of at least `size` bytes), or into a new
    /// NumPy `uint8` array when `ary` is `None`; returns it.
    #[pyo3(signature = (ary = None, stream = StreamArg::Omitted))]
    fn copy_to_host<'py>(
        slf: &Bound<'py, Self>,
        ary: Option<Bound<'py, PyAny>>,
        stream: StreamArg<'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let stream = stream.resolve(py)?;
        let view = stream.get().view();
        let ary = match ary {
            Some(a) if !a.is_none() => a,
            _ => numpy_empty(py)?.call1(((this.size_now(),), "u1"))?,
        };
        let host = HostBuffer::get(&ary, true, "ary")?;
        let (dst, room) = (host.addr(), host.len());
        py.detach(|| -> PyResult<()> {
            let _on_device = this.on_device().map_err(to_py)?;
            let st = this.state.lock();
            if room < st.size {
                return Err(PyValueError::new_err(format!(
                    "Argument `ary` is too small. Need space for {} bytes.",
                    st.size
                )));
            }
            // SAFETY: `host` holds `room >= size` writable bytes until it is dropped, after the
            // wait below; the buffer's memory is live while the lock is held.
            let enqueued = unsafe { copy_bytes(dst, st.ptr, st.size, view, this.host_only()) }.map_err(to_py)?;
            // Whether `ary` is new or the caller's, it is filled when this returns.
            wait_before_release(view, enqueued).map_err(to_py)
        })?;
        drop(host);
        Ok(ary)
    }

    /// Copies the host buffer `ary` (at most `size` bytes) to the start of the buffer.
    #[pyo3(signature = (ary, stream = StreamArg::Omitted))]
    fn copy_from_host(&self, py: Python<'_>, ary: &Bound<'_, PyAny>, stream: StreamArg<'_>) -> PyResult<()> {
        let stream = stream.resolve(py)?;
        let view = stream.get().view();
        let host = HostBuffer::get(ary, false, "ary")?;
        let (src, n) = (host.addr(), host.len());
        py.detach(|| -> PyResult<()> {
            let _on_device = self.on_device().map_err(to_py)?;
            let st = self.state.lock();
            if n > st.size {
                return Err(PyValueError::new_err(format!("Argument `ary` is too large. Need space for {n} bytes.")));
            }
            // SAFETY: `host` holds `n` readable bytes until it is dropped, after the wait below;
            // `n <= size`.
            let enqueued = unsafe { copy_bytes(st.ptr, src, n, view, self.host_only()) }.map_err(to_py)?;
            wait_before_release(view, enqueued).map_err(to_py)
        })?;
        drop(host);
        Ok(())
    }

    /// Copies a 1-D contiguous object with `__cuda_array_interface__` (at most `size` bytes) to
    /// the start of the buffer; not waited for, as in RMM.
    #[pyo3(signature = (cuda_ary, stream = StreamArg::Omitted))]
    fn copy_from_device(&self, py: Python<'_>, cuda_ary: &Bound<'_, PyAny>, stream: StreamArg<'_>) -> PyResult<()> {
        let stream = stream.resolve(py)?;
        let view = stream.get().view();
        if !cuda_ary.hasattr("__cuda_array_interface__")? {
            return Err(PyValueError::new_err("Expected object to support `__cuda_array_interface__` protocol"));
        }
        let interface = cuda_ary.getattr("__cuda_array_interface__")?;
        let shape = interface.get_item("shape")?;
        let strides = interface.call_method1("get", ("strides",))?;
        let itemsize: usize =
            numpy_dtype(py)?.call1((interface.get_item("typestr")?,))?.getattr("itemsize")?.extract()?;
        let ndim = shape.len()?;
        if ndim > 1 {
            return Err(PyValueError::new_err(format!("Only 1-D contiguous arrays are supported, got {ndim}-D array")));
        }
        if !strides.is_none() && strides.get_item(0)?.extract::<isize>()? != itemsize as isize {
            return Err(PyValueError::new_err("Only 1-D contiguous arrays are supported, got a non-contiguous array"));
        }
        let src: usize = interface.get_item("data")?.get_item(0)?.extract()?;
        let n =
            shape.get_item(0)?.extract::<usize>()?.checked_mul(itemsize).ok_or_else(|| {
                pyo3::exceptions::PyOverflowError::new_err("the array's size in bytes overflows size_t")
            })?;
        check_user_pointer(src, n, false)?;
        py.detach(|| -> PyResult<()> {
            let _on_device = self.on_device().map_err(to_py)?;
            let st = self.state.lock();
            if n > st.size {
                return Err(PyValueError::new_err(format!("Argument `hb` is too large. Need space for {n} bytes.")));
            }
            // SAFETY: the object vouches for `n` readable bytes at `src` until the copy has run, and
            // `n <= size`. Not waited for (RMM's contract): on a stream other than the buffer's,
            // the caller orders freeing the buffer after the copy, as with cudaMemcpyAsync.
            unsafe { copy_bytes(st.ptr, src, n, view, false) }.map(|_| ()).map_err(to_py)
        })
    }

    /// The bytes, as a `bytes` object.
    #[pyo3(signature = (stream = StreamArg::Omitted))]
    fn tobytes<'py>(slf: &Bound<'py, Self>, stream: StreamArg<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let py = slf.py();
        let this = slf.get();
        let stream = stream.resolve(py)?;
        let view = stream.get().view();
        let size = this.size_now();
        PyBytes::new_with(py, size, |out| {
            let dst = out.as_mut_ptr() as usize;
            py.detach(|| -> rmm::Result<()> {
                let _on_device = this.on_device()?;
                let st = this.state.lock();
                // SAFETY: `out` is the new object's `size` writable bytes, waited for below.
                let enqueued = unsafe { copy_bytes(dst, st.ptr, st.size.min(size), view, this.host_only())? };
                if enqueued {
                    view.synchronize()?;
                }
                Ok(())
            })
            .py()
        })
    }

    /// Grows the allocation to at least `new_capacity` bytes, keeping the contents; the buffer
    /// moves to `stream`.
    #[pyo3(signature = (new_capacity, stream = StreamArg::Omitted))]
    fn reserve(&self, py: Python<'_>, new_capacity: CSize, stream: StreamArg<'_>) -> PyResult<()> {
        let stream = stream.resolve(py)?;
        self.change(py, stream, new_capacity.0, None)
    }

    /// Sets the size to `new_size`, keeping the contents up to the smaller size; reallocates only
    /// when `new_size` exceeds the capacity. The buffer moves to `stream`.
    #[pyo3(signature = (new_size, stream = StreamArg::Omitted))]
    fn resize(&self, py: Python<'_>, new_size: CSize, stream: StreamArg<'_>) -> PyResult<()> {
        let stream = stream.resolve(py)?;
        self.change(py, stream, new_size.0, Some(new_size.0))
    }

    /// Bytes allocated (at least `size`).
    fn capacity(&self) -> usize {
        self.state.lock().capacity
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let st = self.state.get_mut();
        if st.capacity == 0 {
            return;
        }
        let (ptr, capacity, view) = (st.ptr, st.capacity, st.view);
        let resource = self.resource();
        if resource.try_deallocate_immediately(ptr as *mut u8, capacity, DEFAULT_ALIGNMENT, view) {
            return;
        }
        // A free may wait on a driver lock that a thread waiting for the GIL holds: free without it.
        // A failed free (or a device that cannot be made current) cannot be reported from a
        // destructor; the memory is then leaked.
        let device = self.device;
        Python::attach(|py| {
            py.detach(|| {
                if let Ok(_on_device) = DeviceGuard::new(device) {
                    let _ = resource.deallocate(ptr as *mut u8, capacity, DEFAULT_ALIGNMENT, view);
                }
            })
        });
    }
}

/// A new buffer, from the current device resource, holding a copy of the host buffer `b`.
#[pyfunction]
#[pyo3(signature = (b, stream = StreamArg::Omitted))]
pub fn to_device(py: Python<'_>, b: &Bound<'_, PyAny>, stream: StreamArg<'_>) -> PyResult<DeviceBuffer> {
    let stream = stream.resolve(py)?;
    let host = HostBuffer::get(b, false, "b")?;
    DeviceBuffer::create(py, Some((host.addr(), true)), host.len(), stream, None)
}

/// The resource `buffer`'s memory comes from. Not an attribute of the buffer: RMM's
/// `DeviceBuffer` keeps its resource and stream out of Python's reach (reading `buffer.mr` or
/// `buffer.stream` is an `AttributeError` there too).
#[pyfunction]
fn _device_buffer_mr(py: Python<'_>, buffer: &Bound<'_, DeviceBuffer>) -> Py<DeviceMemoryResource> {
    buffer.get().mr.clone_ref(py)
}

/// The stream `buffer`'s memory is ordered and freed on (see [`_device_buffer_mr`]).
#[pyfunction]
fn _device_buffer_stream(py: Python<'_>, buffer: &Bound<'_, DeviceBuffer>) -> Py<Stream> {
    buffer.get().state.lock().stream.clone_ref(py)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_device_buffer_mr, m)?)?;
    m.add_function(wrap_pyfunction!(_device_buffer_stream, m)?)?;
    m.add_class::<DeviceBuffer>()?;
    m.add_function(wrap_pyfunction!(to_device, m)?)?;
    Ok(())
}
