//! Host memory lent by a Python object through the buffer protocol (bytes, bytearray, memoryview,
//! NumPy arrays), read or written in place: no copy on the way to or from the device.
//!
//! The checks are those of RMM's Cython signatures (`const unsigned char[::1]`): one dimension,
//! C-contiguous, one-byte items, and writable when the copy writes into it.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi::PyObject;
use pyo3::prelude::*;
use std::ffi::{c_char, c_int, c_void, CStr};

/// CPython's `Py_buffer`. Its layout has not changed since Python 3.3; the limited API lists it
/// (and the two functions below) from 3.11 on, when it was declared stable as it already was, so
/// declaring them here keeps the wheel an abi3 wheel for Python 3.10.
#[repr(C)]
struct PyBufferView {
    buf: *mut c_void,
    obj: *mut PyObject,
    len: isize,
    itemsize: isize,
    readonly: c_int,
    ndim: c_int,
    format: *mut c_char,
    shape: *mut isize,
    strides: *mut isize,
    suboffsets: *mut isize,
    internal: *mut c_void,
}

impl PyBufferView {
    fn empty() -> Self {
        PyBufferView {
            buf: std::ptr::null_mut(),
            obj: std::ptr::null_mut(),
            len: 0,
            itemsize: 0,
            readonly: 0,
            ndim: 0,
            format: std::ptr::null_mut(),
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            suboffsets: std::ptr::null_mut(),
            internal: std::ptr::null_mut(),
        }
    }
}

// The request flags of CPython's buffer protocol (Include/pybuffer.h).
const PYBUF_WRITABLE: c_int = 0x0001;
const PYBUF_FORMAT: c_int = 0x0004;
const PYBUF_ND: c_int = 0x0008;
const PYBUF_STRIDES: c_int = 0x0010 | PYBUF_ND;
const PYBUF_C_CONTIGUOUS: c_int = 0x0020 | PYBUF_STRIDES;

extern "C" {
    fn PyObject_GetBuffer(obj: *mut PyObject, view: *mut PyBufferView, flags: c_int) -> c_int;
    fn PyBuffer_Release(view: *mut PyBufferView);
}

/// A buffer held from its exporter until dropped (the exporter keeps the memory where it is
/// meanwhile, so the address may be used without the GIL).
pub struct HostBuffer {
    view: Box<PyBufferView>,
}

impl HostBuffer {
    /// The buffer of `obj`, writable when `writable`. `None` and objects without the buffer
    /// protocol are a `TypeError`; the exporter's own error (e.g. for non-contiguous data) passes
    /// through; several dimensions or wider items are a `ValueError`.
    pub fn get(obj: &Bound<'_, PyAny>, writable: bool, what: &str) -> PyResult<Self> {
        if obj.is_none() {
            return Err(PyTypeError::new_err(format!(
                "Argument `{what}` has incorrect type (expected bytes-like, got NoneType)"
            )));
        }
        let mut flags = PYBUF_C_CONTIGUOUS | PYBUF_FORMAT;
        if writable {
            flags |= PYBUF_WRITABLE;
        }
        let mut view = Box::new(PyBufferView::empty());
        // SAFETY: `obj` is a live object (the GIL is held through `obj`'s token) and `view` is a
        // zeroed Py_buffer that the call fills; on failure nothing needs releasing.
        let rc = unsafe { PyObject_GetBuffer(obj.as_ptr(), &mut *view, flags) };
        if rc != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        // From here on `Drop` releases the view.
        let buffer = HostBuffer { view };
        let ndim = buffer.view.ndim;
        if ndim != 1 {
            return Err(PyValueError::new_err(format!(
                "Buffer has wrong number of dimensions (expected 1, got {ndim})"
            )));
        }
        if buffer.view.itemsize != 1 {
            let format = if buffer.view.format.is_null() {
                "B".to_string()
            } else {
                // SAFETY: a non-null format from the exporter is a NUL-terminated string that
                // lives as long as the view.
                unsafe { CStr::from_ptr(buffer.view.format) }.to_string_lossy().into_owned()
            };
            return Err(PyValueError::new_err(format!(
                "Buffer dtype mismatch, expected 'unsigned char' but got '{format}' (item size {})",
                buffer.view.itemsize
            )));
        }
        Ok(buffer)
    }

    /// The address of the first byte.
    pub fn addr(&self) -> usize {
        self.view.buf as usize
    }

    /// The number of bytes.
    pub fn len(&self) -> usize {
        self.view.len as usize
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: the view was filled by a successful PyObject_GetBuffer (a failed one never
        // makes a HostBuffer) and is released once, here, with the GIL held by `attach`.
        Python::attach(|_| unsafe { PyBuffer_Release(&mut *self.view) });
    }
}
