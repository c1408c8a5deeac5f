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

use rmm::resource::DEFAULT_ALIGNMENT;
use rmm::stream::CudaStreamView;
use rmm::RawStream;
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
    move_with(s, old, new_size, stream, copy_addresses)
}

/// A stream-ordered copy of `bytes` bytes between two device addresses the session handed out.
fn copy_addresses(dst: usize, src: usize, bytes: usize, stream: CudaStreamView) -> rmm::Result<()> {
    // SAFETY: both are live allocations of this API of at least `bytes` bytes; the old block is
    // freed on the same stream after the copy, so it stays valid until the copy has run.
    unsafe { rmm::copy::copy_async(dst as *mut u8, src as *const u8, bytes, stream) }
}

/// [`move_to_new`] with the copy `copy(dst, src, bytes, stream)` (tests pass a host copy).
///
/// Every failure leaves the caller where it was: `*ptr` still names `old`, which is live and
/// holds its data, and nothing else is live. That includes a refused free of `old` after the copy
/// (a resource that no longer knows the block, a foreign upstream that fails): the new block is
/// given back and the error returned, rather than handing out the new block while `old` stays
/// behind. Were the new block refused too, it stays in the live table, so that `rmmFinalize`
/// frees it and reports the failure.
fn move_with(
    s: &Session,
    old: usize,
    new_size: usize,
    stream: CudaStreamView,
    copy: impl FnOnce(usize, usize, usize, CudaStreamView) -> rmm::Result<()>,
) -> Result<usize, RmmError> {
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
    let moved = if n > 0 { copy(new, old, n, stream) } else { Ok(()) };
    let freed_old =
        moved.and_then(|()| old_live.resource.deallocate(old as *mut u8, old_live.bytes, DEFAULT_ALIGNMENT, stream));
    if let Err(e) = freed_old {
        if new != 0 && resource.deallocate(new as *mut u8, new_size, DEFAULT_ALIGNMENT, stream).is_err() {
            s.live.insert(new, Live { bytes: new_size, resource });
        }
        s.live.insert(old, old_live);
        return Err(RmmError::from_error(&e));
    }
    if new != 0 {
        s.live.insert(new, Live { bytes: new_size, resource });
    }
    Ok(new)
}

fn allocation_offset(offset: *mut c_long, ptr: usize) -> Status {
    with_session(|s| {
        if offset.is_null() {
            return Err(RmmError::INVALID_ARGUMENT);
        }
        s.live.containing(ptr).ok_or(RmmError::INVALID_ARGUMENT)?;
        let base = status(rmm::device::allocation_base(ptr))?;
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
pub unsafe fn rmmAlloc(
    ptr: *mut *mut c_void,
    size: usize,
    stream: RawStream,
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
pub unsafe fn rmmRealloc(
    ptr: *mut *mut c_void,
    new_size: usize,
    stream: RawStream,
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
pub unsafe fn rmmFree(ptr: *mut c_void, stream: RawStream, file: *const c_char, line: c_uint) -> RmmError {
    guarded(RmmError::UNKNOWN, || code(free(ptr as usize, CudaStreamView::from_raw(stream), Site { file, line })))
}

/// `rmmError_t rmmGetAllocationOffset(offset_t* offset, void* ptr, cudaStream_t stream)`: how far
/// `ptr` lies from the start of the driver allocation it was carved from (a pool's chunk; 0 for an
/// allocation of its own), e.g. to find it again after `cudaIpcOpenMemHandle`. `ptr` must lie in a
/// live allocation of this API; otherwise `RMM_ERROR_INVALID_ARGUMENT`.
///
/// # Safety
/// `offset` is null or writable.
pub unsafe fn rmmGetAllocationOffset(offset: *mut c_long, ptr: *mut c_void, _stream: RawStream) -> RmmError {
    guarded(RmmError::UNKNOWN, || code(allocation_offset(offset, ptr as usize)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmm::device::DeviceId;
    use rmm::error::{Error, Misuse};
    use rmm::per_device_resource::{reset_per_device_resource, set_per_device_resource};
    use rmm::resource::CallbackMemoryResource;
    use rmm::resource::{HostMemoryResource, MemoryResource};
    use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Host memory that counts what is outstanding and refuses to free the pointer in `refuse`.
    struct Counted {
        host: HostMemoryResource,
        outstanding: AtomicIsize,
        refuse: AtomicUsize,
    }

    /// A host copy, as the driver's would be on host memory.
    fn host_copy(dst: usize, src: usize, n: usize, _: CudaStreamView) -> rmm::Result<()> {
        // SAFETY: both blocks are live host allocations of at least `n` bytes that do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, n) };
        Ok(())
    }

    #[test]
    fn realloc_whose_old_free_fails_leaves_only_the_old_block() {
        let device = DeviceId(-2808);
        let c = Arc::new(Counted {
            host: HostMemoryResource::new(),
            outstanding: AtomicIsize::new(0),
            refuse: AtomicUsize::new(0),
        });
        let (ca, cd) = (c.clone(), c.clone());
        // SAFETY: the callbacks hand out and free blocks of a host resource, which meets the
        // resource contract; refusing a free changes nothing.
        let resource = unsafe {
            CallbackMemoryResource::new(
                move |bytes, alignment, stream| {
                    let p = ca.host.allocate(bytes, alignment, stream)?;
                    ca.outstanding.fetch_add(1, Ordering::SeqCst);
                    Ok(p)
                },
                move |ptr: *mut u8, bytes, alignment, stream| {
                    if cd.refuse.load(Ordering::SeqCst) == ptr as usize {
                        return Err(Error::Misuse(Misuse::UnknownPointer { ptr: ptr as usize }));
                    }
                    cd.host.deallocate(ptr, bytes, alignment, stream)?;
                    cd.outstanding.fetch_sub(1, Ordering::SeqCst);
                    Ok(())
                },
            )
        };
        set_per_device_resource(device, Arc::new(resource));
        let s = Session::for_tests(device);
        let stream = CudaStreamView::DEFAULT;

        let old = allocate(&s, 1000, stream).unwrap();
        // SAFETY: `old` is a live host block of 1000 bytes.
        unsafe { std::ptr::write_bytes(old as *mut u8, 7, 1000) };
        c.refuse.store(old, Ordering::SeqCst);
        assert_eq!(move_with(&s, old, 5000, stream, host_copy), Err(RmmError::INVALID_ARGUMENT));
        assert_eq!(c.outstanding.load(Ordering::SeqCst), 1, "the new block was given back");
        assert_eq!(s.live.len(), 1);
        assert_eq!(s.live.containing(old), Some(old), "the caller's pointer is still live");
        // SAFETY: `old` is still a live host block of 1000 bytes.
        assert!(unsafe { std::slice::from_raw_parts(old as *const u8, 1000) }.iter().all(|&b| b == 7));

        // Once the resource frees it again, the same realloc succeeds and nothing else is live.
        c.refuse.store(0, Ordering::SeqCst);
        let new = move_with(&s, old, 5000, stream, host_copy).unwrap();
        assert_eq!((c.outstanding.load(Ordering::SeqCst), s.live.len()), (1, 1));
        assert_eq!(s.live.containing(new), Some(new));
        // SAFETY: `new` is a live host block of 5000 bytes, its first 1000 copied from `old`.
        assert!(unsafe { std::slice::from_raw_parts(new as *const u8, 1000) }.iter().all(|&b| b == 7));
        let l = s.live.take(new).unwrap();
        l.resource.deallocate(new as *mut u8, l.bytes, DEFAULT_ALIGNMENT, stream).unwrap();
        assert_eq!(c.outstanding.load(Ordering::SeqCst), 0);
        reset_per_device_resource(device);
    }
}
