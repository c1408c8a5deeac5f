//! `rmm.pylibrmm.cuda_stream_pool.CudaStreamPool`: a fixed set of streams handed out in turn
//! (RMM's `rmm::cuda_stream_pool`).

use crate::error::IntoPy;
use crate::helper::size_t_arg;
use crate::stream::{Stream, NON_BLOCKING, SYNC_DEFAULT};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// RMM's default number of streams in a pool.
const DEFAULT_POOL_SIZE: usize = rmm::CudaStreamPool::DEFAULT_SIZE;

/// A pool of `pool_size` streams created with `flags`; the `Stream`s it hands out keep it alive.
#[pyclass(module = "rmm.pylibrmm.cuda_stream_pool", name = "CudaStreamPool", frozen)]
pub struct CudaStreamPool {
    pool: rmm::CudaStreamPool,
}

#[pymethods]
impl CudaStreamPool {
    #[new]
    #[pyo3(signature = (pool_size = None, flags = SYNC_DEFAULT))]
    fn new(py: Python<'_>, pool_size: Option<&Bound<'_, PyAny>>, flags: u32) -> PyResult<Self> {
        let pool_size = pool_size.map_or(Ok(DEFAULT_POOL_SIZE), size_t_arg)?;
        // RMM_EXPECTS (rmm::logic_error, a RuntimeError in Python) in RMM's constructor.
        if pool_size == 0 {
            return Err(PyRuntimeError::new_err("Stream pool size must be greater than zero"));
        }
        let non_blocking = match flags {
            SYNC_DEFAULT => false,
            NON_BLOCKING => true,
            other => return Err(PyValueError::new_err(format!("unknown CudaStreamFlags value {other}"))),
        };
        let pool = py.detach(|| rmm::CudaStreamPool::with_flags(pool_size, non_blocking)).py()?;
        Ok(CudaStreamPool { pool })
    }

    /// The next stream in turn, or the stream `stream_id` (modulo the pool size).
    #[pyo3(signature = (stream_id = None))]
    fn get_stream(slf: &Bound<'_, Self>, stream_id: Option<usize>) -> PyResult<Py<Stream>> {
        let pool = &slf.get().pool;
        let view = match stream_id {
            None => pool.get_stream(),
            Some(id) => pool.get_stream_by_id(id),
        };
        // SAFETY: the stream pool owns the stream, and the object keeps the pool alive.
        Py::new(slf.py(), unsafe { Stream::with_owner(view.handle(), slf.clone().into_any().unbind()) })
    }

    /// The number of streams.
    fn get_pool_size(&self) -> usize {
        self.pool.len()
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CudaStreamPool>()
}
