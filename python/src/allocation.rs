//! `_Allocation`: the lean device allocation the CuPy and Numba allocator hooks hand out. It holds
//! the pointer, its size, the stream it was allocated on and the resource it came from, and frees
//! itself on that stream when Python collects it. Leaner than a `DeviceBuffer`: no copies, no
//! buffer protocol, one allocation and one free.

use crate::error::IntoPy;
use crate::memory_resource::DeviceMemoryResource;
use crate::resource_cache::with_resource;
use pyo3::prelude::*;
use rmm::{CudaStreamView, DeviceId, SharedResource, DEFAULT_ALIGNMENT};

/// Device memory from the current device's resource, freed on its stream when collected.
#[pyclass(module = "rmm._native", name = "_Allocation", frozen)]
pub struct Allocation {
    ptr: usize,
    size: usize,
    device: i32,
    stream: CudaStreamView,
    resource: SharedResource,
}

impl Allocation {
    /// The address (0 for an empty allocation).
    pub fn ptr_value(&self) -> usize {
        self.ptr
    }

    /// The device the memory belongs to.
    pub fn device_value(&self) -> i32 {
        self.device
    }

    /// Allocates `size` bytes on `stream` from the current device's resource. The GIL stays held
    /// where the resource serves at once (a pool's free block of this stream); everything else
    /// runs without it.
    pub fn new(py: Python<'_>, size: usize, stream: CudaStreamView) -> PyResult<Self> {
        let device = DeviceId::current().py()?.value();
        with_resource(device, |resource| Self::from_resource(py, resource.clone(), device, size, stream))
    }

    /// Allocates from `resource`, recorded as memory of `device`: with the GIL where the resource
    /// serves at once, else without it.
    fn from_resource(
        py: Python<'_>,
        resource: SharedResource,
        device: i32,
        size: usize,
        stream: CudaStreamView,
    ) -> PyResult<Self> {
        let ptr = match resource.try_allocate_immediately(size, DEFAULT_ALIGNMENT, stream) {
            Some(ptr) => ptr as usize,
            None => py.detach(|| resource.allocate(size, DEFAULT_ALIGNMENT, stream).map(|p| p as usize)).py()?,
        };
        Ok(Allocation { ptr, size, device, stream, resource })
    }
}

#[pymethods]
impl Allocation {
    /// The device address (0 for an empty allocation).
    #[getter]
    fn ptr(&self) -> usize {
        self.ptr
    }

    /// The size in bytes.
    #[getter]
    fn size(&self) -> usize {
        self.size
    }

    /// The device that was current when the memory was allocated.
    #[getter]
    fn device(&self) -> i32 {
        self.device
    }

    /// The handle of the stream the memory is allocated (and will be freed) on.
    #[getter]
    fn stream(&self) -> usize {
        self.stream.handle()
    }

    fn __repr__(&self) -> String {
        format!("<rmm._native._Allocation ptr=0x{:x} size={} device={}>", self.ptr, self.size, self.device)
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        // A null pointer is what resources return for empty requests: nothing to give back.
        if self.ptr == 0 {
            return;
        }
        let (ptr, size, stream, resource) = (self.ptr, self.size, self.stream, &self.resource);
        if resource.try_deallocate_immediately(ptr as *mut u8, size, DEFAULT_ALIGNMENT, stream) {
            return;
        }
        // Drop runs with the GIL held (Python collected the object); freeing may wait on the
        // device, so the GIL is released around it. A free that fails cannot be reported from a
        // destructor; the resource stays consistent either way.
        Python::attach(|py| py.detach(|| resource.deallocate(ptr as *mut u8, size, DEFAULT_ALIGNMENT, stream))).ok();
    }
}

/// Allocates `nbytes` on the stream with handle `stream` (0, the default stream, unless given):
/// the CuPy and Numba hooks' allocation. It comes from the current device's resource, or from
/// `mr` when given (then the device is the current one where a driver answers, else -1).
#[pyfunction]
#[pyo3(signature = (nbytes, stream = 0, mr = None))]
fn _allocate(
    py: Python<'_>,
    nbytes: usize,
    stream: usize,
    mr: Option<&Bound<'_, DeviceMemoryResource>>,
) -> PyResult<Allocation> {
    let stream = CudaStreamView::from_handle(stream);
    let Some(mr) = mr else {
        return Allocation::new(py, nbytes, stream);
    };
    let device = DeviceId::current().map(DeviceId::value).unwrap_or(-1);
    Allocation::from_resource(py, mr.get().resource().clone(), device, nbytes, stream)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Allocation>()?;
    m.add_function(wrap_pyfunction!(_allocate, m)?)?;
    Ok(())
}
