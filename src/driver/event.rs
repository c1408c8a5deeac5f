//! Events: creation, recording and destruction.

use super::{check, ensure_context, with_context};
use crate::error::Result;
use crate::stream::CudaStreamView;
use cudarc::driver::sys;

/// Creates an event without timing (cheapest to record) in the current context; returns its
/// handle.
pub(crate) fn event_create() -> Result<usize> {
    ensure_context()?;
    let mut e: sys::CUevent = std::ptr::null_mut();
    // SAFETY: a context is current; e is a valid out pointer.
    check(
        unsafe { sys::cuEventCreate(&mut e, sys::CUevent_flags_enum::CU_EVENT_DISABLE_TIMING as u32) },
        "cuEventCreate",
    )?;
    Ok(e as usize)
}

/// Captures in `event` the work enqueued on `stream` so far.
/// The legacy default stream needs a current context: the first call on a thread (a free on a
/// thread that never allocated) makes one current, under the context rule of [`with_context`].
pub(crate) fn event_record(event: usize, stream: CudaStreamView) -> Result<()> {
    // SAFETY: the caller's event is alive, and the view names a live stream during the call
    // (CUDA's rule, `CudaStreamView`'s contract; see docs/errors.md).
    let status = with_context(|| unsafe { sys::cuEventRecord(event as sys::CUevent, stream.as_raw()) })?;
    check(status, "cuEventRecord")
}

/// Destroys `event`, made by [`event_create`], for a destructor: errors are ignored.
pub(crate) fn event_destroy(event: usize) {
    // SAFETY: the caller destroys an event it created, once.
    let _ = unsafe { sys::cuEventDestroy_v2(event as sys::CUevent) };
}
