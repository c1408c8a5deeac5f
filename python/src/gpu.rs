//! The device queries behind `rmm._cuda.gpu`, over the core's driver module. Failures are raised
//! as `rmm._cuda.gpu.CUDARuntimeError` (made by `rmm._cuda.gpu._runtime_error(status, message)`),
//! carrying the CUDA runtime's error number for the failure and RMM's `"<name>: <text>"` message.

use pyo3::prelude::*;
use rmm::{DeviceId, Error};

/// The runtime's `cudaErrorNoDevice`: no driver, or no device, leaves nothing to run on.
const NO_DEVICE: i32 = 100;
/// The runtime's `cudaErrorInvalidDevice`.
const INVALID_DEVICE: i32 = 101;

/// The CUDA runtime status and message of a core error. Driver error numbers are the runtime's
/// for the errors device queries meet (`CUDA_ERROR_NO_DEVICE` is 100 in both).
fn status(err: Error) -> (i32, String) {
    match err {
        Error::NoDriver(_) => (NO_DEVICE, "cudaErrorNoDevice: no CUDA-capable device is detected".into()),
        Error::InvalidArgument(_) => (INVALID_DEVICE, "cudaErrorInvalidDevice: invalid device ordinal".into()),
        Error::Cuda { code, ref name, .. } => (code as i32, format!("{name}: {err}")),
        other => (999, other.to_string()),
    }
}

/// Raises `rmm._cuda.gpu.CUDARuntimeError` with the runtime status and message of `err`.
fn raise(py: Python<'_>, err: Error) -> PyErr {
    let (code, message) = status(err);
    match py.import("rmm._cuda.gpu").and_then(|m| m.getattr("_runtime_error")) {
        Ok(make) => match make.call1((code, message)) {
            Ok(exc) => PyErr::from_value(exc),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

/// The current device.
#[pyfunction]
fn _get_device(py: Python<'_>) -> PyResult<i32> {
    py.detach(DeviceId::current).map(DeviceId::value).map_err(|e| raise(py, e))
}

/// Makes `device` current on this thread.
#[pyfunction]
fn _set_device(py: Python<'_>, device: i32) -> PyResult<()> {
    py.detach(|| rmm::device::set_current_device(DeviceId(device))).map_err(|e| raise(py, e))
}

/// The number of devices.
#[pyfunction]
fn _get_device_count(py: Python<'_>) -> PyResult<usize> {
    py.detach(rmm::device::device_count).map_err(|e| raise(py, e))
}

/// The CUDA version the driver supports (`1000 * major + 10 * minor`).
#[pyfunction]
fn _driver_get_version(py: Python<'_>) -> PyResult<i32> {
    py.detach(rmm::device::driver_version).map_err(|e| raise(py, e))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_get_device, m)?)?;
    m.add_function(wrap_pyfunction!(_set_device, m)?)?;
    m.add_function(wrap_pyfunction!(_get_device_count, m)?)?;
    m.add_function(wrap_pyfunction!(_driver_get_version, m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_carry_the_runtime_status() {
        assert_eq!(status(Error::NoDriver("x".into())).0, NO_DEVICE);
        assert_eq!(status(Error::InvalidArgument("device 9".into())).0, INVALID_DEVICE);
        let cuda = Error::Cuda { call: "cuCtxGetDevice", code: 201, name: "CUDA_ERROR_INVALID_CONTEXT".into() };
        assert_eq!(status(cuda).0, 201);
    }
}
