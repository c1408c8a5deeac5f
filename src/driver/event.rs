//! Events: creation, recording and destruction.

use super::context::in_context;
use super::stream::stream_context;
use super::{check, ensure_context, with_context, EventHandle, StreamHandle};
use crate::error::Result;
use cudarc::driver::sys;

/// Creates an event without timing (cheapest to record) in the current context.
pub(crate) fn event_create() -> Result<EventHandle> {
    ensure_context()?;
    let mut e: sys::CUevent = std::ptr::null_mut();
    check(
        // SAFETY: a context is current; e is a valid out pointer.
        unsafe { sys::cuEventCreate(&mut e, sys::CUevent_flags_enum::CU_EVENT_DISABLE_TIMING as u32) },
        "cuEventCreate",
    )?;
    Ok(EventHandle::from_raw(e))
}

/// Creates an event without timing in the context of `stream`, so that it can be recorded on
/// `stream` whichever context is current: `cuEventRecord` refuses an event of another context
/// (a stream of device 1 destroyed while device 0 is current). `stream` is live; the default
/// streams (handles 0, 1 and 2) are the current context's.
pub(crate) fn event_create_for(stream: StreamHandle) -> Result<EventHandle> {
    if stream.value() <= 2 {
        return event_create();
    }
    match in_context(stream_context(stream)?, event_create)? {
        (Ok(event), Ok(())) => Ok(event),
        (Ok(event), Err(e)) => {
            // SAFETY: the event was just created and nothing else has it.
            unsafe { event_destroy(event) };
            Err(e)
        }
        (Err(e), _) => Err(e),
    }
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
