//! `rmm.allocators.cupy.rmm_cupy_allocator` in Rust: it runs for every CuPy array, so the whole
//! hook is one native call (CuPy's current stream, an [`Allocation`] from the device's current
//! resource, CuPy's `UnownedMemory` and `MemoryPointer` around it), with CuPy's classes looked up
//! once.

use crate::allocation::Allocation;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use rmm::CudaStreamView;

/// CuPy's `get_current_stream`, `UnownedMemory` and `MemoryPointer`.
struct CupyNames {
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
            get_current_stream: cuda.getattr("get_current_stream")?.unbind(),
            unowned_memory: memory.getattr("UnownedMemory")?.unbind(),
            memory_pointer: memory.getattr("MemoryPointer")?.unbind(),
        })
    })
}

/// A CuPy allocator that makes use of RMM: `nbytes` from the current device's resource, allocated
/// (and later freed) on CuPy's current stream. Install it with
/// `cupy.cuda.set_allocator(rmm_cupy_allocator)`.
#[pyfunction]
pub fn rmm_cupy_allocator(py: Python<'_>, nbytes: usize) -> PyResult<Py<PyAny>> {
    let cupy = cupy_names(py)?;
    let stream: usize = cupy.get_current_stream.call0(py)?.getattr(py, intern!(py, "ptr"))?.extract(py)?;
    let allocation = Allocation::new(py, nbytes, CudaStreamView::from_handle(stream))?;
    let (ptr, device) = (allocation.ptr_value(), allocation.device_value());
    let owner = Py::new(py, allocation)?;
    // The device is known, so CuPy need not ask the driver which device owns the pointer.
    let memory = cupy.unowned_memory.call1(py, (ptr, nbytes, owner, device))?;
    cupy.memory_pointer.call1(py, (memory, 0))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rmm_cupy_allocator, m)?)
}
