//! An owned CUDA event used to order one stream after another.

use crate::driver::{self, EventHandle};
use crate::error::Result;
use crate::stream::CudaStreamView;

/// An event created without timing (cheapest to record), destroyed on drop.
#[derive(Debug)]
pub struct CudaEvent {
    handle: EventHandle,
}

impl CudaEvent {
    /// Creates an event in the current context.
    pub fn new() -> Result<Self> {
        Ok(CudaEvent { handle: driver::event_create()? })
    }

    /// Creates an event in the context of `stream`: one that can be recorded on `stream`
    /// whichever device is current (the driver refuses to record an event of another context).
    pub fn for_stream(stream: CudaStreamView) -> Result<Self> {
        Ok(CudaEvent { handle: driver::event_create_for(stream.stream_handle())? })
    }

    /// Captures the work enqueued on `stream` so far.
    pub fn record(&self, stream: CudaStreamView) -> Result<()> {
        driver::event_record(self.handle, stream.stream_handle())
    }

    /// Makes work enqueued on `stream` from now on wait for the captured work.
    pub fn wait_on(&self, stream: CudaStreamView) -> Result<()> {
        driver::stream_wait_event(stream.stream_handle(), self.handle)
    }
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        // While the process exits the context may be gone; the event goes with it.
        if crate::process_exit::process_is_exiting() {
            return;
        }
        // SAFETY: the event was made in `new` and is destroyed once, here; `&self` methods that
        // used it have returned.
        unsafe { driver::event_destroy(self.handle) };
    }
}
