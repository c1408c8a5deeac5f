//! An owned CUDA event used to order one stream after another.

use crate::driver::{check, ensure_context};
use crate::error::Result;
use crate::stream::CudaStreamView;
use cudarc::driver::sys;

/// An event created without timing (cheapest to record), destroyed on drop.
#[derive(Debug)]
pub struct CudaEvent {
    handle: usize,
}

impl CudaEvent {
    /// Creates an event in the current context.
    pub fn new() -> Result<Self> {
        ensure_context()?;
        let mut e: sys::CUevent = std::ptr::null_mut();
        // SAFETY: a context is current; e is a valid out pointer.
        check(
            unsafe { sys::cuEventCreate(&mut e, sys::CUevent_flags_enum::CU_EVENT_DISABLE_TIMING as u32) },
            "cuEventCreate",
        )?;
        Ok(CudaEvent { handle: e as usize })
    }

    /// Captures the work enqueued on `stream` so far.
    pub fn record(&self, stream: CudaStreamView) -> Result<()> {
        // SAFETY: the event is alive; the driver reports a bad stream handle as an error.
        check(unsafe { sys::cuEventRecord(self.raw(), stream.as_raw()) }, "cuEventRecord")
    }

    /// Makes work enqueued on `stream` from now on wait for the captured work.
    pub fn wait_on(&self, stream: CudaStreamView) -> Result<()> {
        // SAFETY: as in `record`.
        check(unsafe { sys::cuStreamWaitEvent(stream.as_raw(), self.raw(), 0) }, "cuStreamWaitEvent")
    }

    fn raw(&self) -> sys::CUevent {
        self.handle as sys::CUevent
    }
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        // While the process exits the context may be gone; the event goes with it.
        if crate::process_exit::process_is_exiting() {
            return;
        }
        // SAFETY: created by cuEventCreate, destroyed once; errors have nowhere to go in drop.
        let _ = unsafe { sys::cuEventDestroy_v2(self.raw()) };
    }
}
