//! The functions behind `rmm.pylibrmm.logger`: the level and flush level of the one logger the
//! Rust core and the C++ face write to (`rmm::logger::default_logger`), as plain ints; the Python
//! module wraps them in `level_enum`.

use pyo3::prelude::*;
use rmm::logger::{default_logger, Level};
use std::sync::atomic::{AtomicI32, Ordering};

/// The logger's level.
#[pyfunction]
fn _logger_level() -> i32 {
    as_set(&REQUESTED_LEVEL, default_logger().level() as i32)
}

/// `level` (what the logger holds), or the value last set from Python where that was `n_levels`
/// and the logger still holds what it maps to (`off`): RMM's logger stores the number as given.
fn as_set(requested: &AtomicI32, level: i32) -> i32 {
    let requested = requested.load(Ordering::Relaxed);
    if requested > level && Level::from_i32(requested) as i32 == level {
        requested
    } else {
        level
    }
}

/// The last level set from Python, as given (the logger keeps `n_levels` as `off`).
static REQUESTED_LEVEL: AtomicI32 = AtomicI32::new(-1);

/// Sets the logger's level (values above `off`, as `n_levels`, mean `off`).
#[pyfunction]
fn _logger_set_level(level: i32) {
    REQUESTED_LEVEL.store(level, Ordering::Relaxed);
    default_logger().set_level(Level::from_i32(level))
}

/// The level at and above which each message is flushed at once.
#[pyfunction]
fn _logger_flush_level() -> i32 {
    as_set(&REQUESTED_FLUSH_LEVEL, default_logger().flush_level() as i32)
}

/// The last flush level set from Python, as given.
static REQUESTED_FLUSH_LEVEL: AtomicI32 = AtomicI32::new(-1);

/// Sets the flush level.
#[pyfunction]
fn _logger_flush_on(level: i32) {
    REQUESTED_FLUSH_LEVEL.store(level, Ordering::Relaxed);
    default_logger().flush_on(Level::from_i32(level))
}

/// Writes buffered messages out.
#[pyfunction]
fn _logger_flush(py: Python<'_>) {
    py.detach(|| default_logger().flush())
}

/// Writes `message` at `level` through the logger (what Python code logs with, so its lines land
/// with the Rust and C++ ones).
#[pyfunction]
fn _logger_log(py: Python<'_>, level: i32, message: &str) {
    py.detach(|| default_logger().log(Level::from_i32(level), format_args!("{message}")))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_logger_level, m)?)?;
    m.add_function(wrap_pyfunction!(_logger_set_level, m)?)?;
    m.add_function(wrap_pyfunction!(_logger_flush_level, m)?)?;
    m.add_function(wrap_pyfunction!(_logger_flush_on, m)?)?;
    m.add_function(wrap_pyfunction!(_logger_flush, m)?)?;
    m.add_function(wrap_pyfunction!(_logger_log, m)?)?;
    Ok(())
}
