//! `rmm.allocators.cupy.rmm_cupy_allocator` in Rust: it runs for every CuPy array, so the whole
//! hook is one native call (CuPy's current stream, an [`Allocation`] from the device's current
//! resource, CuPy's `UnownedMemory` and `MemoryPointer` around it), with CuPy's names looked up
//! once.

use crate::allocation::Allocation;
use pyo3::ffi::c_str;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCapsule, PyCapsuleMethods};
use rmm::CudaStreamView;
use std::ffi::CStr;

/// CuPy's C function that `cupy.cuda.get_current_stream().ptr` reads through, in C: the handle of
/// the calling thread's current stream on the current device (Cython's `except? -1`: -1 with a
/// Python error set when it fails). It must be called with the GIL held.
type CurrentStreamPtr = unsafe extern "C" fn() -> isize;

/// The signatures under which Cython exports a C function `intptr_t f()` to other extensions.
const CURRENT_STREAM_PTR_SIGNATURES: [&CStr; 2] = [c_str!("intptr_t (void)"), c_str!("intptr_t (void) except? -1")];

/// CuPy's names the hook uses.
struct CupyNames {
    /// `cupy_backends.cuda.stream.get_current_stream_ptr`, where CuPy exports it with a known
    /// signature: a third of the cost of the Python call below.
    current_stream_ptr: Option<CurrentStreamPtr>,
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
        Ok(CupyNames {
            current_stream_ptr: exported_current_stream_ptr(py),
            get_current_stream: cuda.getattr("get_current_stream")?.unbind(),
            unowned_memory: memory.getattr("UnownedMemory")?.unbind(),
            memory_pointer: memory.getattr("MemoryPointer")?.unbind(),
        })
    })
}

/// The C function behind CuPy's current stream, from the table of C functions Cython modules
/// export to each other (`__pyx_capi__`), if CuPy exports it under a signature we know.
fn exported_current_stream_ptr(py: Python<'_>) -> Option<CurrentStreamPtr> {
    let table = py.import("cupy_backends.cuda.stream").ok()?.getattr("__pyx_capi__").ok()?;
    let capsule = table.get_item("get_current_stream_ptr").ok()?.cast_into::<PyCapsule>().ok()?;
    // SAFETY: the name is read at once, while the capsule (held by `capsule`) is alive.
    let name = unsafe { capsule.name().ok()??.as_cstr() };
    let signature = CURRENT_STREAM_PTR_SIGNATURES.into_iter().find(|s| *s == name)?;
    let pointer = capsule.pointer_checked(Some(signature)).ok()?;
    // SAFETY: Cython exports the function under its C signature, checked above; the module stays
    // imported (in sys.modules) for the life of the process.
    Some(unsafe { std::mem::transmute::<*mut std::ffi::c_void, CurrentStreamPtr>(pointer.as_ptr()) })
}

/// The handle of CuPy's current stream.
fn current_stream(py: Python<'_>, cupy: &CupyNames) -> PyResult<usize> {
    if let Some(f) = cupy.current_stream_ptr {
        // SAFETY: the function CuPy exported with this signature; the GIL is held, as it needs.
        let ptr = unsafe { f() };
        // -1 is also a value: an error is what says it failed.
        if let Some(e) = (ptr == -1).then(|| PyErr::take(py)).flatten() {
            return Err(e);
        }
        return Ok(ptr as usize);
    }
    cupy.get_current_stream.call0(py)?.getattr(py, intern!(py, "ptr"))?.extract(py)
}

/// A CuPy allocator that makes use of RMM: `nbytes` from the current device's resource, allocated
/// (and later freed) on CuPy's current stream. Install it with
/// `cupy.cuda.set_allocator(rmm_cupy_allocator)`.
#[pyfunction]
pub fn rmm_cupy_allocator(py: Python<'_>, nbytes: usize) -> PyResult<Py<PyAny>> {
    let cupy = cupy_names(py)?;
    let stream = current_stream(py, cupy)?;
    let allocation = Allocation::new(py, nbytes, CudaStreamView::from_handle(stream))?;
    let (ptr, device) = (allocation.ptr_value(), allocation.device_value());
    let owner = Py::new(py, allocation)?;
    // The device is known, so CuPy need not ask the driver which device owns the pointer.
    let memory = cupy.unowned_memory.call1(py, (ptr, nbytes, owner, device))?;
    cupy.memory_pointer.call1(py, (memory, 0))
}

/// How the hook finds CuPy's current stream: "exported C function" or "Python call" (None before
/// the first use); for tests and benchmarks.
#[pyfunction]
fn _cupy_current_stream_source(py: Python<'_>) -> Option<&'static str> {
    CUPY.get(py).map(|c| if c.current_stream_ptr.is_some() { "exported C function" } else { "Python call" })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rmm_cupy_allocator, m)?)?;
    m.add_function(wrap_pyfunction!(_cupy_current_stream_source, m)?)
}
