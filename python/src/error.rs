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
        // A Python exception raised in a callback: RMM rethrows it as `rmm::out_of_memory` (a
        // MemoryError whose message is that error's `what()`) or `std::runtime_error` (a
        // RuntimeError with the exception's own message). A free callback's exception is
        // RMM's `SystemError`, made by `DeviceMemoryResource.deallocate`, this as its cause.
        E::OutOfMemory { pool: None, reason, .. } if reason.starts_with(FROM_CALLBACK) => {
            PyMemoryError::new_err(format!("{OUT_OF_MEMORY_WHAT}{}", &reason[FROM_CALLBACK.len()..]))
        }
        E::Unsupported(m) if m.starts_with(FROM_CALLBACK) => {
            PyRuntimeError::new_err(m[FROM_CALLBACK.len()..].to_string())
        }
        // In RMM's words (a pool's or a limiting adaptor's refusal): RMM's what() is the message.
        E::OutOfMemory { verbatim: true, .. } => PyMemoryError::new_err(format!("{OUT_OF_MEMORY_WHAT}{msg}")),
        E::OutOfMemory { .. } => PyMemoryError::new_err(msg),
        // A failed allocating CUDA call: RMM's `rmm::bad_alloc`, whose what() Cython raises.
        E::CudaAlloc { .. } => PyMemoryError::new_err(format!("{BAD_ALLOC_WHAT}{msg}")),
        // No driver: RMM's first CUDA call (getDevice, in Python) raises CUDARuntimeError
        // (cudaErrorInsufficientDriver), a RuntimeError; ours says too what was not found.
        E::NoDriver(_) => Python::attach(|py| {
            let (code, text) = crate::gpu::status(E::NoDriver(String::new()));
            crate::gpu::raise_status(py, code, format!("{text} ({msg})"))
        }),
        E::BadAlignment { .. } | E::InvalidArgument(_) | E::SizeOverflow { .. } | E::BadPointer { .. } => {
            PyValueError::new_err(msg)
        }
        E::Io { .. } => PyOSError::new_err(msg),
        // An upstream (a Python callback, say) that returned null or misaligned memory.
        E::BadUpstream(_) => PyRuntimeError::new_err(msg),
        _ => PyRuntimeError::new_err(msg),
    }
}

/// The whole text of `err` for an exception of another library (PyTorch's out-of-memory error):
/// its message and, for a pool's refusal in RMM's words, the pool's size, free bytes and largest
/// free block too.
pub fn full_message(err: &rmm::Error) -> String {
    match err {
        rmm::Error::OutOfMemory { verbatim: true, pool: Some(p), reason, .. } => format!(
            "{}; pool size {}, free {}, largest free block {}",
            reason.trim_end(),
            p.pool_size,
            p.free_bytes,
            p.largest_free_block
        ),
        _ => err.to_string().trim_end().to_string(),
    }
}

/// What RMM's `rmm::bad_alloc` puts before the exception's message in its `what()`.
const BAD_ALLOC_WHAT: &str = "std::bad_alloc: ";

/// What RMM's `rmm::out_of_memory` (thrown for a callback's `MemoryError`) puts before the
/// exception's message in its `what()`, which Cython raises as the `MemoryError`'s message.
const OUT_OF_MEMORY_WHAT: &str = "std::bad_alloc: out_of_memory: ";

/// True for an error that carries a Python callback's exception (made by [`from_callback`]).
pub fn is_from_callback(err: &rmm::Error) -> bool {
    match err {
        rmm::Error::OutOfMemory { pool: None, reason, .. } => reason.starts_with(FROM_CALLBACK),
        rmm::Error::Unsupported(m) => m.starts_with(FROM_CALLBACK),
        _ => false,
    }
}

/// The Python exception for an error met while constructing a pool or an arena of the given
/// sizes, as RMM's: a size no allocation can hold is a `MemoryError` (RMM asks its upstream for it
/// and is refused); another invalid size is RMM's `rmm::logic_error`, a `RuntimeError`.
pub fn construction_error(err: rmm::Error, sizes: &[usize]) -> PyErr {
    match err {
        rmm::Error::InvalidArgument(m) if sizes.iter().any(|&n| n > rmm::pool::MAX_BLOCK_BYTES) => {
            PyMemoryError::new_err(format!("{OUT_OF_MEMORY_WHAT}{m}"))
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
