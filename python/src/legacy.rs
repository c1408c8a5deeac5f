//! The native half of `librmm_cffi`, the original RMM's Python module (before 0.15): thin calls
//! into the legacy API (`rmm-legacy`, the Rust functions behind the C API), each returning the `rmmError_t` code with its
//! result, so that the Python half raises `RMMError` with the code's name as the original did.
//!
//! The calls go straight to the Rust functions (no `dlopen`): the module and `import rmm` share one
//! C API session and one per-device table. Calls that may wait (allocate, free, initialise,
//! finalise) run without the GIL.

use pyo3::prelude::*;
use rmm_legacy::{self as c_api, RmmAllocationMode, RmmError, RmmOptions};
use std::ffi::{c_long, c_void, CStr, CString};
use std::ptr::null_mut;

/// The `cudaStream_t` of a stream handle.
fn stream<T>(handle: usize) -> *mut T {
    handle as *mut T
}

/// `file` as the NUL-terminated string the C API records (a NUL inside it ends it early).
fn c_file(file: &str) -> CString {
    let end = file.find('\0').unwrap_or(file.len());
    CString::new(&file[..end]).unwrap_or_default()
}

/// `rmmInitialize`, or a move to new options when initialised with others (see
/// [`c_api::reinitialize`]): `librmm.initialize()`. Returns the code.
#[pyfunction]
fn legacy_initialize(py: Python<'_>, allocation_mode: i32, initial_pool_size: usize, enable_logging: bool) -> i32 {
    let options = RmmOptions::new(RmmAllocationMode(allocation_mode), initial_pool_size, enable_logging);
    py.detach(|| c_api::reinitialize(options)).0
}

/// `rmmFinalize`. Returns the code.
#[pyfunction]
fn legacy_finalize(py: Python<'_>) -> i32 {
    py.detach(c_api::rmmFinalize).0
}

/// `rmmIsInitialized`: the options in use `(allocation_mode, initial_pool_size, enable_logging)`,
/// or `None` when not initialised.
#[pyfunction]
fn legacy_options() -> Option<(i32, usize, bool)> {
    let mut o = RmmOptions::default();
    // SAFETY: `o` is a valid, writable rmmOptions_t.
    let initialised = unsafe { c_api::rmmIsInitialized(&mut o) };
    initialised.then(|| (o.allocation_mode.0, o.initial_pool_size, o.logging_enabled()))
}

/// `rmmAlloc` of `size` bytes on `stream_handle`: `(code, address)`, the address 0 on failure.
#[pyfunction]
fn legacy_alloc(py: Python<'_>, size: usize, stream_handle: usize, file: &str, line: u32) -> (i32, usize) {
    let file = c_file(file);
    py.detach(|| {
        let mut p: *mut c_void = null_mut();
        // SAFETY: `p` is writable; the stream handle is the caller's (a live stream or a default
        // stream handle, as for any stream-ordered call); `file` is NUL-terminated and outlives
        // the call.
        let code = unsafe { c_api::rmmAlloc(&mut p, size, stream(stream_handle), file.as_ptr(), line) };
        (code.0, p as usize)
    })
}

/// `rmmRealloc` of the allocation at `ptr` (0: a new one) to `new_size` bytes on `stream_handle`:
/// `(code, address)`; on failure the address is `ptr`, still valid.
#[pyfunction]
fn legacy_realloc(
    py: Python<'_>,
    ptr: usize,
    new_size: usize,
    stream_handle: usize,
    file: &str,
    line: u32,
) -> (i32, usize) {
    let file = c_file(file);
    py.detach(|| {
        let mut p = ptr as *mut c_void;
        // SAFETY: `p` is readable and writable; the C API checks that it is one of its pointers;
        // stream and file as in `legacy_alloc`.
        let code = unsafe { c_api::rmmRealloc(&mut p, new_size, stream(stream_handle), file.as_ptr(), line) };
        (code.0, p as usize)
    })
}

/// `rmmFree` of `ptr` on `stream_handle`. Returns the code.
#[pyfunction]
fn legacy_free(py: Python<'_>, ptr: usize, stream_handle: usize, file: &str, line: u32) -> i32 {
    let file = c_file(file);
    // SAFETY: the C API checks that `ptr` is one of its live pointers before freeing it; stream
    // and file as in `legacy_alloc`.
    py.detach(|| unsafe { c_api::rmmFree(ptr as *mut c_void, stream(stream_handle), file.as_ptr(), line) }).0
}

/// `rmmGetAllocationOffset`: `(code, offset)` of `ptr` from the start of its driver allocation.
#[pyfunction]
fn legacy_allocation_offset(ptr: usize) -> (i32, i64) {
    let mut offset: c_long = 0;
    // SAFETY: `offset` is writable; the C API checks that `ptr` lies in one of its allocations.
    let code = unsafe { c_api::rmmGetAllocationOffset(&mut offset, ptr as *mut c_void, null_mut()) };
    (code.0, offset as i64)
}

/// `rmmGetInfo`: `(code, free, total)` bytes of the session's device.
#[pyfunction]
fn legacy_get_info(py: Python<'_>) -> (i32, usize, usize) {
    py.detach(|| {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: both out pointers are writable.
        let code = unsafe { c_api::rmmGetInfo(&mut free, &mut total, null_mut()) };
        (code.0, free, total)
    })
}

/// The event log as CSV (`rmmLogSize` and `rmmGetLog`).
#[pyfunction]
fn legacy_csv_log() -> String {
    let mut buf = vec![0u8; c_api::rmmLogSize()];
    // SAFETY: `buf` has `buf.len()` writable bytes. A log that grew since it was sized is cut.
    let code = unsafe { c_api::rmmGetLog(buf.as_mut_ptr().cast(), buf.len()) };
    if code != RmmError::SUCCESS {
        return String::new();
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// `rmmWriteLog(filename)`. Returns the code.
#[pyfunction]
fn legacy_write_log(filename: &str) -> i32 {
    let Ok(name) = CString::new(filename) else {
        return RmmError::INVALID_ARGUMENT.0;
    };
    // SAFETY: `name` is NUL-terminated and outlives the call.
    unsafe { c_api::rmmWriteLog(name.as_ptr()) }.0
}

/// `rmmGetErrorString(code)`: the code's enumerator name.
#[pyfunction]
fn legacy_error_name(code: i32) -> String {
    // SAFETY: rmmGetErrorString returns a static NUL-terminated string for any value.
    unsafe { CStr::from_ptr(c_api::rmmGetErrorString(RmmError(code))) }.to_string_lossy().into_owned()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(legacy_initialize, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_finalize, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_options, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_alloc, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_realloc, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_free, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_allocation_offset, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_get_info, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_csv_log, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_write_log, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_error_name, m)?)?;
    Ok(())
}
