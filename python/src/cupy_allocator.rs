//! `rmm.allocators.cupy.rmm_cupy_allocator` in Rust: it runs for every CuPy array, so the whole
//! hook is one native call (CuPy's current stream and device, a [`DeviceBuffer`] from the device's
//! current resource, CuPy's `UnownedMemory` and `MemoryPointer` around it), with CuPy's names
//! looked up once.

use crate::device_buffer::DeviceBuffer;
use crate::stream::{default_stream_object, Stream};
use pyo3::exceptions::{PyMemoryError, PyModuleNotFoundError};
use pyo3::ffi::c_str;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCapsule, PyCapsuleMethods, PyDict, PyTuple};
use std::ffi::{c_void, CStr};

/// CuPy's C function `cupy_backends.cuda.stream.get_stream_ptr(device_id)`: the handle of the
/// calling thread's current stream on that device (what `cupy.cuda.get_current_stream().ptr` reads
/// for the current device). It fails by setting a Python error (Cython's `except? -1`). Like the
/// function below, it must be called with the GIL held.
type StreamPtr = unsafe extern "C" fn(i32) -> isize;

/// CuPy's `cupy_backends.cuda.api.runtime.getDevice` in C: the runtime's current device, the one
/// CuPy allocates on (failing as above). The argument is Cython's `skip_dispatch`.
type GetDevice = unsafe extern "C" fn(i32) -> i32;

/// The signatures under which Cython exports the two functions to other extensions.
const STREAM_PTR_SIGNATURES: [&CStr; 2] = [c_str!("intptr_t (int)"), c_str!("intptr_t (int) except? -1")];
const GET_DEVICE_SIGNATURES: [&CStr; 2] =
    [c_str!("int (int __pyx_skip_dispatch)"), c_str!("int (int __pyx_skip_dispatch) except? -1")];

/// CuPy's names the hook uses.
struct CupyNames {
    /// CuPy's C functions for the current device and its current stream, where CuPy exports both
    /// with known signatures (about 70 ns together on an H100 host, against about 150 ns for
    /// the Python calls below, which are the fallback and serve non-default streams).
    exported: Option<(GetDevice, StreamPtr)>,
    get_device_id: Py<PyAny>,
    get_current_stream: Py<PyAny>,
    unowned_memory: Py<PyAny>,
    memory_pointer: Py<PyAny>,
}

static CUPY: PyOnceLock<CupyNames> = PyOnceLock::new();

fn cupy_names(py: Python<'_>) -> PyResult<&'static CupyNames> {
    CUPY.get_or_try_init(py, || {
        // Importing CuPy here (not when rmm.allocators.cupy is imported) raises CuPy's own
        // ModuleNotFoundError on first use when it is missing, as RMM's allocator does.
        let cuda = py.import("cupy")?.getattr("cuda")?;
        let memory = cuda.getattr("memory")?;
        let get_device = exported_function(py, "cupy_backends.cuda.api.runtime", "getDevice", &GET_DEVICE_SIGNATURES);
        let stream_ptr = exported_function(py, "cupy_backends.cuda.stream", "get_stream_ptr", &STREAM_PTR_SIGNATURES);
        Ok(CupyNames {
            // SAFETY: `exported_function` found each under one of the C signatures these types
            // spell and returned a non-null address (as a fn pointer must be); the modules stay
            // imported, so the code stays loaded.
            exported: get_device.zip(stream_ptr).map(|(d, s)| unsafe {
                (std::mem::transmute::<*mut c_void, GetDevice>(d), std::mem::transmute::<*mut c_void, StreamPtr>(s))
            }),
            get_device_id: cuda.getattr("device")?.getattr("get_device_id")?.unbind(),
            get_current_stream: cuda.getattr("get_current_stream")?.unbind(),
            unowned_memory: memory.getattr("UnownedMemory")?.unbind(),
            memory_pointer: memory.getattr("MemoryPointer")?.unbind(),
        })
    })
}

/// The address of the C function `name` of the Cython module `module`, from the table of C
/// functions Cython modules export to each other (`__pyx_capi__`), if it is exported under one of
/// `signatures`. The module stays imported (in `sys.modules`) for the life of the process.
fn exported_function(py: Python<'_>, module: &str, name: &str, signatures: &[&CStr]) -> Option<*mut c_void> {
    let table = py.import(module).ok()?.getattr("__pyx_capi__").ok()?;
    let capsule = table.get_item(name).ok()?.cast_into::<PyCapsule>().ok()?;
    // SAFETY: the name is read at once, while the capsule (held by `capsule`) is alive.
    let exported_as = unsafe { capsule.name().ok()??.as_cstr() };
    let signature = signatures.iter().find(|s| **s == exported_as)?;
    Some(capsule.pointer_checked(Some(signature)).ok()?.as_ptr())
}

/// The value of an exported Cython function: an error set is what says it failed (-1 is also a
/// value).
fn checked<T>(py: Python<'_>, value: T) -> PyResult<T> {
    match PyErr::take(py) {
        Some(e) => Err(e),
        None => Ok(value),
    }
}

/// CuPy's current device and, as a `Stream`, its current stream there: the module's constant for
/// a default stream, else a `Stream` that keeps CuPy's stream object alive (as RMM's
/// `Stream(obj=...)` does), so the stream outlives the memory freed on it.
fn device_and_stream<'py>(py: Python<'py>, cupy: &CupyNames) -> PyResult<(i32, Bound<'py, Stream>)> {
    let device = match cupy.exported {
        Some((get_device, stream_ptr)) => {
            // SAFETY: functions CuPy exported with these signatures; the GIL is held, as they need.
            let device = checked(py, unsafe { get_device(1) })?;
            // SAFETY: as above.
            let handle = checked(py, unsafe { stream_ptr(device) })? as usize;
            if let Some(stream) = default_stream_object(py, handle) {
                return Ok((device, stream.clone()));
            }
            device
        }
        None => cupy.get_device_id.call0(py)?.extract(py)?,
    };
    let object = cupy.get_current_stream.bind(py).call0()?;
    let handle: usize = object.getattr(intern!(py, "ptr"))?.extract()?;
    let stream = match default_stream_object(py, handle) {
        Some(stream) => stream.clone(),
        // SAFETY: the CuPy stream object owns its stream (or holds what does) while it lives.
        None => Bound::new(py, unsafe { Stream::with_owner(handle, object.unbind()) })?,
    };
    Ok((device, stream))
}

/// A CuPy allocator that makes use of RMM: `nbytes` from the current device's resource, allocated
/// (and later freed) on CuPy's current stream. The memory is owned by an `rmm.DeviceBuffer`
/// (`memptr.mem._owner`), as with RMM's allocator. Install it with
/// `cupy.cuda.set_allocator(rmm_cupy_allocator)`.
#[pyfunction]
pub fn rmm_cupy_allocator(py: Python<'_>, nbytes: usize) -> PyResult<Py<PyAny>> {
    cupy_not_set_aside(py)?;
    let cupy = cupy_names(py)?;
    let (device, stream) = device_and_stream(py, cupy)?;
    let (owner, ptr) =
        DeviceBuffer::for_device(py, nbytes, stream, device).map_err(|e| cupy_out_of_memory(py, e, nbytes))?;
    // The device is known, so CuPy need not ask the driver which device owns the pointer.
    let memory = cupy.unowned_memory.call1(py, (ptr, nbytes, owner, device))?;
    cupy.memory_pointer.call1(py, (memory, 0))
}

/// CuPy's `cupy.cuda.memory.OutOfMemoryError` for the resource's `MemoryError`, as CuPy's own
/// pool raises on out-of-memory: made with the request's size (and -1, an unknown total
/// allocated), with the resource's message as its message (its `args`) and the `MemoryError` as
/// its cause. Another error, or a CuPy without that type, leaves the error as it is.
#[cold]
fn cupy_out_of_memory(py: Python<'_>, err: PyErr, nbytes: usize) -> PyErr {
    if !err.is_instance_of::<PyMemoryError>(py) {
        return err;
    }
    let made = || -> PyResult<PyErr> {
        let exc = py.import("cupy.cuda.memory")?.getattr("OutOfMemoryError")?.call1((nbytes, -1i64))?;
        exc.setattr("args", PyTuple::new(py, [err.value(py).str()?])?)?;
        let oom = PyErr::from_value(exc);
        oom.set_cause(py, Some(err.clone_ref(py)));
        Ok(oom)
    };
    made().unwrap_or(err)
}

/// The namespace of `rmm.allocators.cupy`, looked up once.
static HOOK_MODULE: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// As RMM's allocator: `ModuleNotFoundError` where `rmm.allocators.cupy.cupy` is None (CuPy
/// missing at import, or set aside since). One dictionary lookup.
fn cupy_not_set_aside(py: Python<'_>) -> PyResult<()> {
    let namespace =
        HOOK_MODULE.get_or_try_init(py, || Ok::<_, PyErr>(py.import("rmm.allocators.cupy")?.dict().unbind()))?;
    match namespace.bind(py).get_item(intern!(py, "cupy"))? {
        Some(value) if value.is_none() => Err(PyModuleNotFoundError::new_err("No module named 'cupy'")),
        _ => Ok(()),
    }
}

/// How the hook reads CuPy's current device and stream: "exported C function" or "Python call"
/// (None before the first use); for tests and benchmarks.
#[pyfunction]
fn _cupy_current_stream_source(py: Python<'_>) -> Option<&'static str> {
    CUPY.get(py).map(|c| if c.exported.is_some() { "exported C function" } else { "Python call" })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rmm_cupy_allocator, m)?)?;
    m.add_function(wrap_pyfunction!(_cupy_current_stream_source, m)?)
}
