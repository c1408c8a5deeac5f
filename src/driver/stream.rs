//! Streams: creation, destruction, synchronisation, identity and waiting on events.

use super::{check, ensure_context, ensure_driver, with_context, ContextHandle, EventHandle, StreamHandle};
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
