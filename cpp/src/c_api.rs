//! The legacy C API of the original RMM (`rmm.h` / `rmm_api.h`, RMM before 0.15) as a C ABI: one
//! `#[no_mangle] extern "C"` symbol for each function of `include/rmm/rmm_api.h`, each forwarding
//! to the function of the same name in `rmm-legacy` (which holds the session, the table of live
//! pointers and the event log, and catches every panic). C code links against `librmm_cpp.a`.

use rmm::RawStream;
use std::ffi::{c_char, c_long, c_uint, c_void};

pub use rmm_legacy::{RmmAllocationMode, RmmError, RmmOptions};

/// The C symbol `rmmAlloc` of `rmm_api.h`: [`rmm_legacy::rmmAlloc`].
///
/// # Safety
/// As [`rmm_legacy::rmmAlloc`].
#[no_mangle]
pub unsafe extern "C" fn rmmAlloc(
    ptr: *mut *mut c_void,
    size: usize,
    stream: RawStream,
    file: *const c_char,
    line: c_uint,
) -> RmmError {
    // SAFETY: the caller upholds `rmm_legacy::rmmAlloc`'s contract, which is this one.
    unsafe { rmm_legacy::rmmAlloc(ptr, size, stream, file, line) }
}

/// The C symbol `rmmRealloc` of `rmm_api.h`: [`rmm_legacy::rmmRealloc`].
///
/// # Safety
/// As [`rmm_legacy::rmmRealloc`].
#[no_mangle]
pub unsafe extern "C" fn rmmRealloc(
    ptr: *mut *mut c_void,
    new_size: usize,
    stream: RawStream,
    file: *const c_char,
    line: c_uint,
) -> RmmError {
    // SAFETY: the caller upholds `rmm_legacy::rmmRealloc`'s contract, which is this one.
    unsafe { rmm_legacy::rmmRealloc(ptr, new_size, stream, file, line) }
}

/// The C symbol `rmmFree` of `rmm_api.h`: [`rmm_legacy::rmmFree`].
///
/// # Safety
/// As [`rmm_legacy::rmmFree`].
#[no_mangle]
pub unsafe extern "C" fn rmmFree(ptr: *mut c_void, stream: RawStream, file: *const c_char, line: c_uint) -> RmmError {
    // SAFETY: the caller upholds `rmm_legacy::rmmFree`'s contract, which is this one.
    unsafe { rmm_legacy::rmmFree(ptr, stream, file, line) }
}

/// The C symbol `rmmGetAllocationOffset` of `rmm_api.h`: [`rmm_legacy::rmmGetAllocationOffset`].
///
/// # Safety
/// As [`rmm_legacy::rmmGetAllocationOffset`].
#[no_mangle]
pub unsafe extern "C" fn rmmGetAllocationOffset(offset: *mut c_long, ptr: *mut c_void, stream: RawStream) -> RmmError {
    // SAFETY: the caller upholds `rmm_legacy::rmmGetAllocationOffset`'s contract, which is this one.
    unsafe { rmm_legacy::rmmGetAllocationOffset(offset, ptr, stream) }
}

/// The C symbol `rmmGetErrorString` of `rmm_api.h`: [`rmm_legacy::rmmGetErrorString`].
#[no_mangle]
pub extern "C" fn rmmGetErrorString(errcode: RmmError) -> *const c_char {
    rmm_legacy::rmmGetErrorString(errcode)
}

/// The C symbol `rmmWriteLog` of `rmm_api.h`: [`rmm_legacy::rmmWriteLog`].
///
/// # Safety
/// As [`rmm_legacy::rmmWriteLog`].
#[no_mangle]
pub unsafe extern "C" fn rmmWriteLog(filename: *const c_char) -> RmmError {
    // SAFETY: the caller upholds `rmm_legacy::rmmWriteLog`'s contract, which is this one.
    unsafe { rmm_legacy::rmmWriteLog(filename) }
}

/// The C symbol `rmmLogSize` of `rmm_api.h`: [`rmm_legacy::rmmLogSize`].
#[no_mangle]
pub extern "C" fn rmmLogSize() -> usize {
    rmm_legacy::rmmLogSize()
}

/// The C symbol `rmmGetLog` of `rmm_api.h`: [`rmm_legacy::rmmGetLog`].
///
/// # Safety
/// As [`rmm_legacy::rmmGetLog`].
#[no_mangle]
pub unsafe extern "C" fn rmmGetLog(buffer: *mut c_char, buffer_size: usize) -> RmmError {
    // SAFETY: the caller upholds `rmm_legacy::rmmGetLog`'s contract, which is this one.
    unsafe { rmm_legacy::rmmGetLog(buffer, buffer_size) }
}

/// The C symbol `rmmGetInfo` of `rmm_api.h`: [`rmm_legacy::rmmGetInfo`].
///
/// # Safety
/// As [`rmm_legacy::rmmGetInfo`].
#[no_mangle]
pub unsafe extern "C" fn rmmGetInfo(free_size: *mut usize, total_size: *mut usize, stream: RawStream) -> RmmError {
    // SAFETY: the caller upholds `rmm_legacy::rmmGetInfo`'s contract, which is this one.
    unsafe { rmm_legacy::rmmGetInfo(free_size, total_size, stream) }
}

/// The C symbol `rmmInitialize` of `rmm_api.h`: [`rmm_legacy::rmmInitialize`].
///
/// # Safety
/// As [`rmm_legacy::rmmInitialize`].
#[no_mangle]
pub unsafe extern "C" fn rmmInitialize(options: *mut RmmOptions) -> RmmError {
    // SAFETY: the caller upholds `rmm_legacy::rmmInitialize`'s contract, which is this one.
    unsafe { rmm_legacy::rmmInitialize(options) }
}

/// The C symbol `rmmFinalize` of `rmm_api.h`: [`rmm_legacy::rmmFinalize`].
#[no_mangle]
pub extern "C" fn rmmFinalize() -> RmmError {
    rmm_legacy::rmmFinalize()
}

/// The C symbol `rmmIsInitialized` of `rmm_api.h`: [`rmm_legacy::rmmIsInitialized`].
///
/// # Safety
/// As [`rmm_legacy::rmmIsInitialized`].
#[no_mangle]
pub unsafe extern "C" fn rmmIsInitialized(options: *mut RmmOptions) -> bool {
    // SAFETY: the caller upholds `rmm_legacy::rmmIsInitialized`'s contract, which is this one.
    unsafe { rmm_legacy::rmmIsInitialized(options) }
}
