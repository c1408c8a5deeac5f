//! `rmm.pylibrmm.memory_resource`: the resource classes, each a thin Python face over a Rust
//! resource, and the per-device current resource.
//!
//! Every class derives from `DeviceMemoryResource`, which holds the resource as a
//! [`SharedResource`]: what buffers, the allocator hooks and the per-device table use. Adaptors
//! derive from `UpstreamResourceAdaptor`, which also keeps the Python upstream object alive (and
//! answers `upstream_mr`), so a Python program sees the same objects it passed in.

use crate::error::IntoPy;
use crate::helper::CSize;
use crate::stream::StreamArg;
use pyo3::exceptions::PySystemError;
use pyo3::prelude::*;
use rmm::{SharedResource, DEFAULT_ALIGNMENT};

mod adaptors;
mod callbacks;
pub(crate) mod capture;
mod driver_resources;
mod history;
mod logging;
mod per_device;
mod resources;
mod suballocators;
mod virtual_pool;

pub use per_device::resource_object;
pub use resources::*;

/// The base of every resource class.
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", name = "DeviceMemoryResource", subclass, frozen)]
pub struct DeviceMemoryResource {
    resource: SharedResource,
    /// Whether the resource's memory is host memory only (read once: it never changes).
    host_only: bool,
}

impl DeviceMemoryResource {
    /// The base-class part of a resource object.
    pub fn new(resource: SharedResource) -> Self {
        let host_only = !resource.is_device_accessible();
        DeviceMemoryResource { resource, host_only }
    }

    /// The Rust resource.
    pub fn resource(&self) -> &SharedResource {
        &self.resource
    }

    /// True when the resource's memory is host memory only (the CPU copies it).
    pub fn is_host_only(&self) -> bool {
        self.host_only
    }
}

/// The resource of a `DeviceMemoryResource` made directly (RMM's base class holds none): every
/// allocation and free is refused with an error Python sees as a `RuntimeError`, as RMM's are.
struct NoResource;

// SAFETY: it hands out no memory and takes none back: every call is an error.
unsafe impl rmm::MemoryResource for NoResource {
    fn allocate(&self, _: usize, _: usize, _: rmm::CudaStreamView) -> rmm::Result<*mut u8> {
        Err(rmm::Error::Unsupported("DeviceMemoryResource has no resource to allocate from".into()))
    }

    fn deallocate(&self, _: *mut u8, _: usize, _: usize, _: rmm::CudaStreamView) -> rmm::Result<()> {
        Err(rmm::Error::Unsupported("DeviceMemoryResource has no resource to free to".into()))
    }
}

#[pymethods]
impl DeviceMemoryResource {
    /// The base class made directly, as RMM allows (a Python subclass, say): it has no resource
    /// behind it, so its `allocate` and `deallocate` raise `RuntimeError`.
    #[new]
    fn new_without_resource() -> Self {
        DeviceMemoryResource::new(std::sync::Arc::new(NoResource))
    }

    /// Allocates `nbytes` for use on `stream`; returns the address as an int.
    /// `stream` left out is `DEFAULT_STREAM`; given, it must be a `Stream` (`None` is RMM's
    /// `TypeError`).
    #[pyo3(signature = (nbytes, stream = StreamArg::Omitted))]
    fn allocate(&self, py: Python<'_>, nbytes: CSize, stream: StreamArg<'_>) -> PyResult<usize> {
        let CSize(nbytes) = nbytes;
        let stream = stream.resolve(py)?;
        let stream = stream.get().view();
        let resource = &self.resource;
        // The GIL stays held where the resource serves without waiting (a pool's own free block,
        // through adaptors that forward the non-waiting call); anything else runs without it.
        if nbytes > 0 {
            if let Some(p) = resource.try_allocate_immediately(nbytes, DEFAULT_ALIGNMENT, stream) {
                return Ok(p as usize);
            }
        }
        py.detach(|| resource.allocate(nbytes, DEFAULT_ALIGNMENT, stream).map(|p| p as usize)).py()
    }

    /// Frees `ptr` (of `nbytes`) on `stream`.
    /// A Python deallocate callback that raised makes this raise `SystemError` ("... returned a
    /// result with an exception set", the callback's exception as its cause), as RMM's does: its
    /// callback leaves the exception set and its `deallocate` returns normally.
    #[pyo3(signature = (ptr, nbytes, stream = StreamArg::Omitted))]
    fn deallocate(slf: &Bound<'_, Self>, ptr: CSize, nbytes: CSize, stream: StreamArg<'_>) -> PyResult<()> {
        let (py, CSize(ptr), CSize(nbytes)) = (slf.py(), ptr, nbytes);
        let stream = stream.resolve(py)?;
        let stream = stream.get().view();
        let resource = &slf.get().resource;
        if resource.try_deallocate_immediately(ptr as *mut u8, nbytes, DEFAULT_ALIGNMENT, stream) {
            return Ok(());
        }
        match py.detach(|| resource.deallocate(ptr as *mut u8, nbytes, DEFAULT_ALIGNMENT, stream)) {
            Ok(()) => Ok(()),
            Err(e) if crate::error::is_from_callback(&e) => {
                let method = slf.getattr("deallocate")?.repr()?.to_string();
                let error = PySystemError::new_err(format!("{method} returned a result with an exception set"));
                error.set_cause(py, Some(crate::error::to_py(e)));
                Err(error)
            }
            Err(e) => Err(crate::error::to_py(e)),
        }
    }
}

/// The base of adaptors and of resources built over another resource.
#[pyclass(module = "rmm.pylibrmm.memory_resource._memory_resource", name = "UpstreamResourceAdaptor", extends = DeviceMemoryResource, subclass, frozen)]
pub struct UpstreamResourceAdaptor {
    upstream: Py<DeviceMemoryResource>,
}

impl UpstreamResourceAdaptor {
    /// The initializer of an adaptor over `upstream` whose Rust resource is `resource`.
    pub fn init(upstream: Py<DeviceMemoryResource>, resource: SharedResource) -> PyClassInitializer<Self> {
        PyClassInitializer::from(DeviceMemoryResource::new(resource)).add_subclass(UpstreamResourceAdaptor { upstream })
    }
}

#[pymethods]
impl UpstreamResourceAdaptor {
    /// The resource this one takes its memory from.
    #[getter]
    fn upstream_mr(&self, py: Python<'_>) -> Py<DeviceMemoryResource> {
        self.upstream.clone_ref(py)
    }

    /// The resource this one takes its memory from.
    fn get_upstream(&self, py: Python<'_>) -> Py<DeviceMemoryResource> {
        self.upstream.clone_ref(py)
    }
}

/// The Rust resource of an `upstream_mr` argument, with a clear error for anything else.
pub fn upstream_arg(upstream: &Bound<'_, PyAny>) -> PyResult<(Py<DeviceMemoryResource>, SharedResource)> {
    if upstream.is_none() {
        // RMM raises this as a plain Exception (its Cython constructors let None through).
        return Err(pyo3::exceptions::PyException::new_err("Argument `upstream_mr` must not be None"));
    }
    let mr = upstream.cast::<DeviceMemoryResource>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "upstream_mr must be a DeviceMemoryResource, not {}",
            upstream.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    Ok((mr.clone().unbind(), mr.get().resource.clone()))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DeviceMemoryResource>()?;
    m.add_class::<UpstreamResourceAdaptor>()?;
    resources::register(m)?;
    adaptors::register(m)?;
    driver_resources::register(m)?;
    suballocators::register(m)?;
    callbacks::register(m)?;
    logging::register(m)?;
    per_device::register(m)?;
    virtual_pool::register(m)?;
    history::register(m)?;
    Ok(())
}
