//! Rust errors as Python exceptions, chosen as RMM's Cython layer translates RMM's C++ exceptions:
//! allocation failures (`rmm::out_of_memory`, `rmm::bad_alloc`, both `std::bad_alloc`) are
//! `MemoryError`, invalid arguments `ValueError`, CUDA and usage errors `RuntimeError`.

use pyo3::exceptions::{PyMemoryError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// The Python exception for a Rust error.
pub fn to_py(err: rmm::Error) -> PyErr {
    use rmm::Error as E;
    let msg = err.to_string();
    match err {
        E::OutOfMemory { .. } => PyMemoryError::new_err(msg),
        E::BadAlignment { .. } | E::InvalidArgument(_) | E::SizeOverflow { .. } => PyValueError::new_err(msg),
        E::Io { .. } => PyOSError::new_err(msg),
        _ => PyRuntimeError::new_err(msg),
    }
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
