//! Rust errors as Python exceptions, chosen as RMM's Cython layer translates RMM's C++ exceptions:
//! allocation failures (`rmm::out_of_memory`, `rmm::bad_alloc`, both `std::bad_alloc`) are
//! `MemoryError`, invalid arguments `ValueError`, CUDA and usage errors `RuntimeError`.

use pyo3::exceptions::{PyMemoryError, PyOSError, PyRuntimeError, PySystemError, PyValueError};
use pyo3::prelude::*;

/// The Python exception for a Rust error.
pub fn to_py(err: rmm::Error) -> PyErr {
    use rmm::Error as E;
    let msg = err.to_string();
    match err {
        // A Python exception raised in a callback: RMM rethrows it as `rmm::out_of_memory` (a
        // MemoryError, whose message Cython gives as `std::bad_alloc: ` and the `what()`,
        // `out_of_memory: ` and the exception's message) or `std::runtime_error`, with the
        // exception's own message.
        E::OutOfMemory { pool: None, reason, .. } if reason.starts_with(FROM_CALLBACK) => {
            PyMemoryError::new_err(format!("std::bad_alloc: out_of_memory: {}", &reason[FROM_CALLBACK.len()..]))
        }
        // A free callback that raised: RMM's Cython wrapper returns with the exception still set,
        // which CPython reports as a SystemError.
        E::Unsupported(m) if m.starts_with(FROM_FREE_CALLBACK) => PySystemError::new_err(format!(
            "DeviceMemoryResource.deallocate returned a result with an exception set ({})",
            &m[FROM_FREE_CALLBACK.len()..]
        )),
        E::Unsupported(m) if m.starts_with(FROM_CALLBACK) => {
            PyRuntimeError::new_err(m[FROM_CALLBACK.len()..].to_string())
        }
        E::OutOfMemory { .. } => PyMemoryError::new_err(msg),
        // No driver: RMM's first CUDA call (getDevice, in Python) raises CUDARuntimeError
        // (cudaErrorInsufficientDriver), a RuntimeError; ours says too what was not found.
        E::NoDriver(_) => Python::attach(|py| {
            let (code, text) = crate::gpu::status(E::NoDriver(String::new()));
            crate::gpu::raise_status(py, code, format!("{text} ({msg})"))
        }),
        E::BadAlignment { .. } | E::InvalidArgument(_) | E::SizeOverflow { .. } => PyValueError::new_err(msg),
        E::Io { .. } => PyOSError::new_err(msg),
        // An upstream (a Python callback, say) that returned null or misaligned memory.
        E::BadUpstream(_) => PyRuntimeError::new_err(msg),
        _ => PyRuntimeError::new_err(msg),
    }
}

/// The Python exception for an error met while constructing a pool or an arena of the given
/// sizes, as RMM's: a size no allocation can hold is a `MemoryError` (RMM asks its upstream for it
/// and is refused); another invalid size is RMM's `rmm::logic_error`, a `RuntimeError`.
pub fn construction_error(err: rmm::Error, sizes: &[usize]) -> PyErr {
    match err {
        rmm::Error::InvalidArgument(m) if sizes.iter().any(|&n| n > rmm::pool::MAX_BLOCK_BYTES) => {
            PyMemoryError::new_err(format!("std::bad_alloc: out_of_memory: {m}"))
        }
        rmm::Error::InvalidArgument(m) => PyRuntimeError::new_err(m),
        rmm::Error::BadAlignment { .. } => PyRuntimeError::new_err(err.to_string()),
        other => to_py(other),
    }
}

/// Starts the message of an error that carries a Python callback's exception.
const FROM_CALLBACK: &str = "Python callback raised: ";

/// The Rust error for a Python exception raised in a callback that served a request of `bytes`:
/// as RMM, a `MemoryError` is an out-of-memory error and anything else a runtime error, and
/// [`to_py`] turns it back into that Python type with the exception's message.
pub fn from_callback(py: Python<'_>, err: PyErr, bytes: usize) -> rmm::Error {
    let text = err.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    if err.is_instance_of::<PyMemoryError>(py) {
        rmm::Error::out_of_memory(bytes, format!("{FROM_CALLBACK}{text}"))
    } else {
        rmm::Error::Unsupported(format!("{FROM_CALLBACK}{text}"))
    }
}

/// Starts the message of an error that carries the exception of a Python free callback.
const FROM_FREE_CALLBACK: &str = "Python free callback raised: ";

/// The Rust error for a Python exception raised by a free callback: [`to_py`] turns it into RMM's
/// `SystemError`, naming the exception.
pub fn from_free_callback(py: Python<'_>, err: PyErr) -> rmm::Error {
    let name = err.get_type(py).name().map(|n| n.to_string()).unwrap_or_default();
    let text = err.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    rmm::Error::Unsupported(format!("{FROM_FREE_CALLBACK}{name}: {text}"))
}

/// `Result<T, rmm::Error>` into a Python result.
pub trait IntoPy<T> {
    /// Converts the error with [`to_py`].
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for rmm::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

pub(crate) fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
