//! `rmmAlloc`, `rmmRealloc`, `rmmFree` and `rmmGetAllocationOffset`.
//!
//! Allocations come from the current resource of the device `rmmInitialize` ran on, with RMM's
//! 256-byte alignment, on the caller's stream. Each live pointer is recorded with its size and
//! resource (see [`LiveTable`](super::live::LiveTable)): `rmmFree` of a pointer this API did not
//! hand out, or freed already, is `RMM_ERROR_INVALID_ARGUMENT` and changes nothing (the original
//! passed it on to the resource). Zero bytes give a null pointer, and freeing null does nothing.

use super::codes::{code, status, RmmError, Status};
use super::event_log::{Kind, Site, Timer};
use super::guarded;
use super::live::Live;
use super::session::{with_session, Session};
use crate::driver;
use crate::resource::DEFAULT_ALIGNMENT;
use crate::stream::CudaStreamView;
use cudarc::driver::sys::CUstream;
use std::ffi::{c_char, c_long, c_uint, c_void};

/// Allocates `size` bytes into `*out` and records them.
fn allocate(s: &Session, size: usize, stream: CudaStreamView) -> Result<usize, RmmError> {
    let resource = s.current_resource();
    let p = status(resource.allocate(size, DEFAULT_ALIGNMENT, stream))? as usize;
    if p != 0 {
        s.live.insert(p, Live { bytes: size, resource });
    }
    Ok(p)
}

fn alloc(out: *mut *mut c_void, size: usize, stream: CudaStreamView, site: Site) -> Status {
    with_session(|s| {
        if out.is_null() {
            return if size == 0 { Ok(()) } else { Err(RmmError::INVALID_ARGUMENT) };
        }
        let timer = Timer::start();
        let p = allocate(s, size, stream)?;
        // SAFETY: `out` is not null (checked above) and the caller passes a writable pointer.
        unsafe { out.write(p as *mut c_void) };
        timer.record(s, Kind::Alloc, p, size, stream, site);
        Ok(())
    })
}

fn free(ptr: usize, stream: CudaStreamView, site: Site) -> Status {
    with_session(|s| {
        if ptr == 0 {
            return Ok(());
        }
        let timer = Timer::start();
        let live = s.live.take(ptr).ok_or(RmmError::INVALID_ARGUMENT)?;
        if let Err(e) = live.resource.deallocate(ptr as *mut u8, live.bytes, DEFAULT_ALIGNMENT, stream) {
            // The resource kept the block: keep it live so that a later free or finalize can retry.
            s.live.insert(ptr, live);
            return Err(RmmError::from_error(&e));
        }
        timer.record(s, Kind::Free, ptr, 0, stream, site);
        Ok(())
    })
}

fn realloc(inout: *mut *mut c_void, new_size: usize, stream: CudaStreamView, site: Site) -> Status {
    with_session(|s| {
        if inout.is_null() {
            return if new_size == 0 { Ok(()) } else { Err(RmmError::INVALID_ARGUMENT) };
        }
        let timer = Timer::start();
        // SAFETY: `inout` is not null (checked above) and the caller passes a readable pointer.
        let old = unsafe { inout.read() } as usize;
        let new = if old == 0 { allocate(s, new_size, stream)? } else { move_to_new(s, old, new_size, stream)? };
        // SAFETY: as above; the caller passes a writable pointer.
        unsafe { inout.write(new as *mut c_void) };
        timer.record(s, Kind::Realloc, new, new_size, stream, site);
        Ok(())
    })
}

/// Allocates `new_size` bytes, copies what fits from `old` on `stream`, and frees `old` on
/// `stream`: the copy is queued before the free, so the stream-ordered free keeps the old block
/// from reuse until the copy has run. On failure `old` stays live and unchanged.
fn move_to_new(s: &Session, old: usize, new_size: usize, stream: CudaStreamView) -> Result<usize, RmmError> {
    let old_live = s.live.take(old).ok_or(RmmError::INVALID_ARGUMENT)?;
    let resource = s.current_resource();
    let new = match resource.allocate(new_size, DEFAULT_ALIGNMENT, stream) {
        Ok(p) => p as usize,
        Err(e) => {
            s.live.insert(old, old_live);
            return Err(RmmError::from_error(&e));
        }
    };
    let n = old_live.bytes.min(new_size);
    if n > 0 {
        if let Err(e) = driver::memcpy_async(new, old, n, stream) {
            let _ = resource.deallocate(new as *mut u8, new_size, DEFAULT_ALIGNMENT, stream);
            s.live.insert(old, old_live);
            return Err(RmmError::from_error(&e));
        }
    }
    if new != 0 {
        s.live.insert(new, Live { bytes: new_size, resource });
    }
    let (old_bytes, old_resource) = (old_live.bytes, old_live.resource.clone());
    if let Err(e) = old_resource.deallocate(old as *mut u8, old_bytes, DEFAULT_ALIGNMENT, stream) {
        // The data moved; the old block is kept live so that finalize frees it.
        s.live.insert(old, old_live);
        return Err(RmmError::from_error(&e));
    }
    Ok(new)
}

fn allocation_offset(offset: *mut c_long, ptr: usize) -> Status {
    with_session(|s| {
        if offset.is_null() {
            return Err(RmmError::INVALID_ARGUMENT);
        }
        s.live.containing(ptr).ok_or(RmmError::INVALID_ARGUMENT)?;
        let base = status(driver::mem_allocation_base(ptr))?;
        let delta = c_long::try_from(ptr - base).map_err(|_| RmmError::UNKNOWN)?;
        // SAFETY: `offset` is not null (checked above) and the caller passes a writable pointer.
        unsafe { offset.write(delta) };
        Ok(())
    })
}

/// `rmmError_t rmmAlloc(void** ptr, size_t size, cudaStream_t stream, const char* file, unsigned
/// int line)`: `size` bytes from the current device resource on `stream` into `*ptr` (null for 0
/// bytes). `RMM_ERROR_NOT_INITIALIZED` before `rmmInitialize`, `RMM_ERROR_INVALID_ARGUMENT` for a
/// null `ptr` (unless `size` is 0), `RMM_ERROR_OUT_OF_MEMORY` when the resource has no memory;
/// `*ptr` is null after any failure. `file` and `line` go to the event log.
///
/// # Safety
/// `ptr` is null or writable; `stream` is a live stream (or a default-stream handle); `file` is null
/// or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn rmmAlloc(
    ptr: *mut *mut c_void,
    size: usize,
    stream: CUstream,
    file: *const c_char,
    line: c_uint,
) -> RmmError {
    let result =
        guarded(RmmError::UNKNOWN, || code(alloc(ptr, size, CudaStreamView::from_raw(stream), Site { file, line })));
    if result != RmmError::SUCCESS && !ptr.is_null() {
        // SAFETY: not null (checked) and writable, as the caller promises.
        unsafe { ptr.write(std::ptr::null_mut()) };
    }
    result
}

/// `rmmError_t rmmRealloc(void** ptr, size_t new_size, cudaStream_t stream, const char* file,
/// unsigned int line)`: moves the allocation at `*ptr` to a new one of `new_size` bytes (copying
/// what fits, stream-ordered on `stream`) and frees the old one on `stream`; a null `*ptr` is
/// `rmmAlloc`, and `new_size` 0 frees and leaves `*ptr` null. `RMM_ERROR_INVALID_ARGUMENT` for a
/// null `ptr` or a `*ptr` this API did not hand out; on any failure `*ptr` and its memory are
/// unchanged.
///
/// # Safety
/// As [`rmmAlloc`]; `*ptr` is readable.
#[no_mangle]
pub unsafe extern "C" fn rmmRealloc(
    ptr: *mut *mut c_void,
    new_size: usize,
    stream: CUstream,
    file: *const c_char,
    line: c_uint,
) -> RmmError {
    guarded(RmmError::UNKNOWN, || code(realloc(ptr, new_size, CudaStreamView::from_raw(stream), Site { file, line })))
}

/// `rmmError_t rmmFree(void* ptr, cudaStream_t stream, const char* file, unsigned int line)`:
/// frees `ptr` on `stream` (work queued on `stream` before may still use it). Null is a no-op;
/// a pointer this API did not hand out, or already freed, is `RMM_ERROR_INVALID_ARGUMENT` and
/// changes nothing.
///
/// # Safety
/// `stream` is a live stream (or a default-stream handle); `file` is null or a NUL-terminated
/// string.
#[no_mangle]
pub unsafe extern "C" fn rmmFree(ptr: *mut c_void, stream: CUstream, file: *const c_char, line: c_uint) -> RmmError {
    guarded(RmmError::UNKNOWN, || code(free(ptr as usize, CudaStreamView::from_raw(stream), Site { file, line })))
}

/// `rmmError_t rmmGetAllocationOffset(offset_t* offset, void* ptr, cudaStream_t stream)`: how far
/// `ptr` lies from the start of the driver allocation it was carved from (a pool's chunk; 0 for an
/// allocation of its own), e.g. to find it again after `cudaIpcOpenMemHandle`. `ptr` must lie in a
/// live allocation of this API; otherwise `RMM_ERROR_INVALID_ARGUMENT`.
///
/// # Safety
/// `offset` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn rmmGetAllocationOffset(offset: *mut c_long, ptr: *mut c_void, _stream: CUstream) -> RmmError {
    guarded(RmmError::UNKNOWN, || code(allocation_offset(offset, ptr as usize)))
}
