//! The device queries behind `rmm._cuda.gpu`, over the core's driver module. Failures are raised
//! as `rmm._cuda.gpu.CUDARuntimeError` (made by `CUDARuntimeError._from_native(status, message)`),
//! carrying the CUDA runtime's error number for the failure and RMM's `"<name>: <text>"` message.

use pyo3::prelude::*;
use rmm::{DeviceId, Error};

/// The runtime's `cudaErrorInsufficientDriver`: what the CUDA runtime (and so RMM) answers when
/// no driver can be loaded.
const INSUFFICIENT_DRIVER: i32 = 35;
/// The runtime's `cudaErrorInvalidDevice`.
const INVALID_DEVICE: i32 = 101;

/// The runtime's name and text of the statuses device queries meet, as `cudaGetErrorName` and
/// `cudaGetErrorString` give them (RMM's message is `"<name>: <text>"`). The driver's numbers are
/// the runtime's for these.
fn runtime_text(code: i32) -> Option<(&'static str, &'static str)> {
    Some(match code {
        1 => ("cudaErrorInvalidValue", "invalid argument"),
        2 => ("cudaErrorMemoryAllocation", "out of memory"),
        3 => ("cudaErrorInitializationError", "initialization error"),
        INSUFFICIENT_DRIVER => {
            ("cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version")
        }
        100 => ("cudaErrorNoDevice", "no CUDA-capable device is detected"),
        INVALID_DEVICE => ("cudaErrorInvalidDevice", "invalid device ordinal"),
        _ => return None,
    })
}

/// The CUDA runtime status and message of a core error.
pub(crate) fn status(err: Error) -> (i32, String) {
    let code = match err {
        Error::NoDriver(_) => INSUFFICIENT_DRIVER,
        Error::InvalidArgument(_) => INVALID_DEVICE,
        Error::Cuda { code, .. } => code as i32,
        ref other => return (999, other.to_string()),
    };
    match runtime_text(code) {
        Some((name, text)) => (code, format!("{name}: {text}")),
        None => match err {
            Error::Cuda { ref name, .. } => (code, format!("{name}: {err}")),
            other => (code, other.to_string()),
        },
    }
}

/// Raises `rmm._cuda.gpu.CUDARuntimeError` with the runtime status and message of `err`.
pub(crate) fn raise(py: Python<'_>, err: Error) -> PyErr {
    let (code, message) = status(err);
    raise_status(py, code, message)
}

/// Raises `rmm._cuda.gpu.CUDARuntimeError` with `code` and `message`.
pub(crate) fn raise_status(py: Python<'_>, code: i32, message: String) -> PyErr {
    let make = py.import("rmm._cuda.gpu").and_then(|m| m.getattr("CUDARuntimeError")?.getattr("_from_native"));
    match make {
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
fn _set_device(py: Python<'_>, device: &Bound<'_, PyAny>) -> PyResult<()> {
    let device = crate::helper::c_int_arg(device)?;
    py.detach(|| rmm::device::set_current_device(DeviceId(device))).map_err(|e| raise(py, e))
}

/// The number of devices.
#[pyfunction]
fn _get_device_count(py: Python<'_>) -> PyResult<usize> {
    py.detach(rmm::device::device_count).map_err(|e| raise(py, e))
}

/// The CUDA version the driver supports (`1000 * major + 10 * minor`); 0 without a driver, as
/// `cudaDriverGetVersion` answers.
#[pyfunction]
fn _driver_get_version(py: Python<'_>) -> PyResult<i32> {
    match py.detach(rmm::device::driver_version) {
        Err(Error::NoDriver(_)) => Ok(0),
        other => other.map_err(|e| raise(py, e)),
    }
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
        assert_eq!(
            status(Error::NoDriver("x".into())),
            (35, "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version".into())
        );
        assert_eq!(
            status(Error::InvalidArgument("device 9".into())).1,
            "cudaErrorInvalidDevice: invalid device ordinal"
        );
        let cuda = Error::Cuda { call: "cuCtxGetDevice", code: 201, name: "CUDA_ERROR_INVALID_CONTEXT".into() };
        assert_eq!(status(cuda).0, 201);
    }
}
