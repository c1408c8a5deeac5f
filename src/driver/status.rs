//! Driver statuses to the crate's errors.

use crate::error::{Error, Result};
use cudarc::driver::sys;
use std::ffi::CStr;

/// Maps a driver status to `Ok` or to an [`Error::Cuda`] naming the call.
pub(super) fn check(status: sys::CUresult, call: &'static str) -> Result<()> {
    if status == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    if status == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        return Err(Error::out_of_memory(0, format!("{call} returned CUDA_ERROR_OUT_OF_MEMORY")));
    }
    Err(Error::Cuda { call, code: status as u32, name: error_name(status) })
}

/// The status of an allocating call (RMM's `RMM_CUDA_TRY_ALLOC`): out-of-memory is
/// [`Error::OutOfMemory`] carrying the requested size, any other error [`Error::CudaAlloc`].
pub(super) fn check_alloc(status: sys::CUresult, call: &'static str, bytes: usize) -> Result<()> {
    if status == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    Err(alloc_error(status, call, bytes))
}

#[cold]
#[inline(never)]
fn alloc_error(status: sys::CUresult, call: &'static str, bytes: usize) -> Error {
    if status == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        return Error::out_of_memory(bytes, format!("{call} returned CUDA_ERROR_OUT_OF_MEMORY"));
    }
    Error::CudaAlloc { requested: bytes, call, code: status as u32, name: error_name(status) }
}

fn error_name(status: sys::CUresult) -> String {
    let mut ptr: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: the driver is loaded (a status exists); cuGetErrorName writes a static string or fails.
    let ok = unsafe { sys::cuGetErrorName(status, &mut ptr) } == sys::CUresult::CUDA_SUCCESS;
    if ok && !ptr.is_null() {
        // SAFETY: the driver returns a NUL-terminated static string.
        unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
    } else {
        format!("{status:?}")
    }
}
