//! Streams: creation, destruction, synchronisation, identity and waiting on events.

use super::{
    check, ensure_context, ensure_driver, entry_point, missing, with_context, ContextHandle, EntryPoint, EventHandle,
    StreamHandle, Versioned,
};
use crate::error::Result;
use cudarc::driver::sys;

/// Creates a stream on the current device: non-blocking (it does not synchronise with the legacy
/// default stream) or blocking (`cudaStreamDefault`, what RMM's `cuda_stream` makes by default).
pub(crate) fn stream_create_with_flags(non_blocking: bool) -> Result<StreamHandle> {
    ensure_context()?;
    let flags = if non_blocking { sys::CUstream_flags_enum::CU_STREAM_NON_BLOCKING as u32 } else { 0 };
    let mut s: sys::CUstream = std::ptr::null_mut();
    // SAFETY: a context is current; s is a valid out pointer.
    check(unsafe { sys::cuStreamCreate(&mut s, flags) }, "cuStreamCreate")?;
    Ok(StreamHandle::new(s as usize))
}

/// Destroys the stream `handle`, made by [`stream_create_with_flags`], for a destructor: errors are ignored.
/// Pending work still completes; the driver releases the stream afterwards.
///
/// # Safety
/// `handle` was made by [`stream_create_with_flags`] and is destroyed once; no work is enqueued on
/// it afterwards.
pub(crate) unsafe fn stream_destroy(handle: StreamHandle) {
    // SAFETY: the caller destroys a stream it created, once (this function's contract).
    let _ = unsafe { sys::cuStreamDestroy_v2(handle.raw()) };
}

/// Blocks until all work on `stream` has finished.
pub(crate) fn stream_synchronize(stream: StreamHandle) -> Result<()> {
    ensure_context()?;
    // SAFETY: the driver is loaded and a context is current. The handle names a live stream during
    // the call (CUDA's rule for every stream argument, and `CudaStreamView`'s contract); the
    // driver cannot tell a destroyed stream's handle from a live one (see docs/errors.md).
    check(unsafe { sys::cuStreamSynchronize(stream.raw()) }, "cuStreamSynchronize")
}

/// The driver's unique id of the stream `handle` (never the same for two streams of a process,
/// unlike handles, which the driver reuses). `handle` must name a live stream.
pub(crate) fn stream_id(handle: StreamHandle) -> Result<u64> {
    ensure_driver()?;
    let mut id: std::ffi::c_ulonglong = 0;
    // SAFETY: the driver is initialised; the caller names a live stream; id is a valid out pointer.
    check(unsafe { sys::cuStreamGetId(handle.raw(), &mut id) }, "cuStreamGetId")?;
    Ok(id)
}

/// Makes work enqueued on `stream` from now on wait for the work `event` captured.
/// As [`event_record`](super::event_record) does, the first call on a thread makes a context current.
pub(crate) fn stream_wait_event(stream: StreamHandle, event: EventHandle) -> Result<()> {
    // SAFETY: the caller's event is alive, and the handle names a live stream (as in
    // `stream_synchronize`).
    let status = with_context(|| unsafe { sys::cuStreamWaitEvent(stream.raw(), event.raw(), 0) })?;
    check(status, "cuStreamWaitEvent")
}

/// The context the stream `handle` was created in (`cuStreamGetCtx`). `handle` must name a live
/// stream other than the default ones (whose context is whichever is current).
pub(crate) fn stream_context(handle: StreamHandle) -> Result<ContextHandle> {
    ensure_driver()?;
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: the driver is initialised; the caller names a live stream; ctx is a valid out pointer.
    check(unsafe { sys::cuStreamGetCtx(handle.raw(), &mut ctx) }, "cuStreamGetCtx")?;
    ContextHandle::from_raw(ctx).ok_or_else(|| super::context::no_context("cuStreamGetCtx"))
}

/// The capture `handle` is being captured into (`cuStreamGetCaptureInfo`, legal during capture):
/// its unique id while the capture is active, `None` when the stream is not capturing. An
/// invalidated capture counts as capturing (work enqueued on it is still illegal until it ends).
/// The stream need not be of the current context; the per-thread and legacy default streams are
/// those of the calling thread.
pub(crate) fn stream_capture_id(handle: StreamHandle) -> Result<Option<u64>> {
    let entry = entry_point(Versioned::CaptureInfo)?;
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let mut id: sys::cuuint64_t = 0;
    let none = std::ptr::null_mut();
    let result = match entry {
        EntryPoint::Newer => with_context(|| {
            // SAFETY: the driver exports the symbol (entry_point); the caller names a live stream
            // (or a default one); status and id are valid out pointers, and the graph, dependency
            // and edge outputs are optional (null: not asked for).
            unsafe {
                sys::cuStreamGetCaptureInfo_v3(
                    handle.raw(),
                    &mut status,
                    &mut id,
                    none,
                    none.cast(),
                    none.cast(),
                    none.cast(),
                )
            }
        })?,
        #[cfg(feature = "cuda-12")]
        EntryPoint::Older => with_context(|| {
            // SAFETY: as for cuStreamGetCaptureInfo_v3 above, which adds only the edge output.
            unsafe {
                sys::cuStreamGetCaptureInfo_v2(handle.raw(), &mut status, &mut id, none, none.cast(), none.cast())
            }
        })?,
        _ => return Err(missing(Versioned::CaptureInfo)),
    };
    check(result, "cuStreamGetCaptureInfo")?;
    Ok((status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE).then_some(id))
}

/// The calling thread's capture interaction mode as `cuThreadExchangeStreamCaptureMode` numbers it
/// (0 global, 1 thread-local, 2 relaxed).
pub(crate) const CAPTURE_MODE_RELAXED: u32 = 2;

/// Sets the calling thread's capture interaction mode to `mode` and returns the one it had
/// (`cuThreadExchangeStreamCaptureMode`); a mode above 2 is refused.
pub(crate) fn exchange_capture_mode(mode: u32) -> Result<u32> {
    use sys::CUstreamCaptureMode_enum as M;
    let mut m = match mode {
        0 => M::CU_STREAM_CAPTURE_MODE_GLOBAL,
        1 => M::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        2 => M::CU_STREAM_CAPTURE_MODE_RELAXED,
        _ => return Err(crate::error::Error::InvalidArgument(format!("{mode} is no stream capture mode"))),
    };
    ensure_driver()?;
    // SAFETY: the driver is initialised; m is a valid in/out pointer.
    check(unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut m) }, "cuThreadExchangeStreamCaptureMode")?;
    Ok(m as u32)
}
