//! Events: creation, recording and destruction.

use super::{check, ensure_context, with_context, EventHandle, StreamHandle};
use crate::error::Result;
use cudarc::driver::sys;

/// Creates an event without timing (cheapest to record) in the current context.
pub(crate) fn event_create() -> Result<EventHandle> {
    ensure_context()?;
    let mut e: sys::CUevent = std::ptr::null_mut();
    // SAFETY: a context is current; e is a valid out pointer.
    check(
        unsafe { sys::cuEventCreate(&mut e, sys::CUevent_flags_enum::CU_EVENT_DISABLE_TIMING as u32) },
        "cuEventCreate",
    )?;
    Ok(EventHandle::from_raw(e))
}

/// Captures in `event` the work enqueued on `stream` so far.
/// The legacy default stream needs a current context: the first call on a thread (a free on a
/// thread that never allocated) makes one current, under the context rule of [`with_context`].
pub(crate) fn event_record(event: EventHandle, stream: StreamHandle) -> Result<()> {
    // SAFETY: the caller's event is alive, and the handle names a live stream during the call
    // (CUDA's rule, `CudaStreamView`'s contract; see docs/errors.md).
    let status = with_context(|| unsafe { sys::cuEventRecord(event.raw(), stream.raw()) })?;
    check(status, "cuEventRecord")
}

/// Destroys `event`, made by [`event_create`], for a destructor: errors are ignored.
///
/// # Safety
/// `event` was made by [`event_create`] and is destroyed once; nothing uses it afterwards.
pub(crate) unsafe fn event_destroy(event: EventHandle) {
    // SAFETY: the caller destroys an event it created, once (this function's contract).
    let _ = unsafe { sys::cuEventDestroy_v2(event.raw()) };
}
