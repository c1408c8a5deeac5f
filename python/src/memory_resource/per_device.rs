//! The per-device current resource as Python sees it: the Python object set for each device (so
//! `get_current_device_resource()` returns the very object passed to `set_...`), mirrored into the
//! Rust table that buffers, the allocator hooks and the C API read.

use super::{CudaMemoryResource, DeviceMemoryResource};
use crate::error::IntoPy;
use parking_lot::Mutex;
use pyo3::prelude::*;
use rmm::per_device_resource as table;
use rmm::DeviceId;
use std::collections::BTreeMap;

/// The Python object of each device whose resource was set or asked for.
static OBJECTS: Mutex<BTreeMap<i32, Py<DeviceMemoryResource>>> = Mutex::new(BTreeMap::new());

/// The Python resource object of `device`, made (a `CudaMemoryResource`, what the Rust table starts
/// with) on first use.
pub fn resource_object(py: Python<'_>, device: i32) -> PyResult<Py<DeviceMemoryResource>> {
    if let Some(mr) = OBJECTS.lock().get(&device) {
        return Ok(mr.clone_ref(py));
    }
    let fresh: Py<DeviceMemoryResource> = Py::new(py, CudaMemoryResource::new())?.into_bound(py).into_super().unbind();
    Ok(OBJECTS.lock().entry(device).or_insert(fresh).clone_ref(py))
}

/// Makes `mr` the resource of `device`, in Python and in the Rust table.
pub fn set_resource_object(device: i32, mr: &Bound<'_, DeviceMemoryResource>) {
    let previous = OBJECTS.lock().insert(device, mr.clone().unbind());
    // The previous Rust resource and Python object are dropped after the lock is released:
    // dropping a resource may run Python code (a callback adaptor) that comes back here.
    let previous_rust = table::set_per_device_resource(DeviceId(device), mr.get().resource().clone());
    drop(previous_rust);
    drop(previous);
}

/// Forgets every device's Python object and puts the Rust table back on its initial resources
/// (what `reinitialize` does first).
pub fn clear() {
    let old = std::mem::take(&mut *OBJECTS.lock());
    for device in old.keys() {
        drop(table::reset_per_device_resource(DeviceId(*device)));
    }
    drop(old);
}

/// The Python resource object of the current device (what `mr=None` means).
fn current_resource_object(py: Python<'_>) -> PyResult<Py<DeviceMemoryResource>> {
    resource_object(py, current_device()?)
}

fn current_device() -> PyResult<i32> {
    Ok(DeviceId::current().py()?.value())
}

/// The resource of `device`.
#[pyfunction]
fn get_per_device_resource(py: Python<'_>, device: i32) -> PyResult<Py<DeviceMemoryResource>> {
    resource_object(py, device)
}

/// Sets the resource of `device`.
#[pyfunction]
fn set_per_device_resource(device: i32, mr: &Bound<'_, DeviceMemoryResource>) {
    set_resource_object(device, mr)
}

/// The resource of the current device.
#[pyfunction]
fn get_current_device_resource(py: Python<'_>) -> PyResult<Py<DeviceMemoryResource>> {
    current_resource_object(py)
}

/// Sets the resource of the current device.
#[pyfunction]
fn set_current_device_resource(mr: &Bound<'_, DeviceMemoryResource>) -> PyResult<()> {
    set_resource_object(current_device()?, mr);
    Ok(())
}

/// `(free, total)` bytes of the current device.
#[pyfunction]
fn available_device_memory(py: Python<'_>) -> PyResult<(usize, usize)> {
    py.detach(rmm::available_device_memory).py()
}

/// Forgets all per-device objects (for `_initialize`).
#[pyfunction]
fn _clear_per_device_resources() {
    clear()
}

/// The devices that have a Python resource object, with it.
#[pyfunction]
fn _per_device_resources(py: Python<'_>) -> Vec<(i32, Py<DeviceMemoryResource>)> {
    OBJECTS.lock().iter().map(|(d, mr)| (*d, mr.clone_ref(py))).collect()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(get_per_device_resource, m)?)?;
    m.add_function(wrap_pyfunction!(set_per_device_resource, m)?)?;
    m.add_function(wrap_pyfunction!(get_current_device_resource, m)?)?;
    m.add_function(wrap_pyfunction!(set_current_device_resource, m)?)?;
    m.add_function(wrap_pyfunction!(available_device_memory, m)?)?;
    m.add_function(wrap_pyfunction!(_clear_per_device_resources, m)?)?;
    m.add_function(wrap_pyfunction!(_per_device_resources, m)?)?;
    Ok(())
}
