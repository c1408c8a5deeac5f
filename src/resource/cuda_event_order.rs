//! [`StreamOrder`] for device memory: one CUDA event per stream, recorded when the pool publishes
//! that stream's free blocks.

use crate::driver::{check, ensure_context};
use crate::error::{Error, Result};
use crate::event::CudaEvent;
use crate::pool::{StreamKey, StreamOrder};
use crate::stream::CudaStreamView;
use cudarc::driver::sys;
use parking_lot::Mutex;
use std::collections::HashMap;

/// Orders streams with lazily created events, recorded when the pool publishes a stream's free
/// blocks: on every free in a pool shard several streams share (as RMM does), else only at the
/// owner's next call after another stream asked for its blocks, which covers every free enqueued
/// before it.
#[derive(Default)]
pub struct CudaEventOrder {
    events: Mutex<HashMap<StreamKey, CudaEvent>>,
}

impl CudaEventOrder {
    /// An order with no events yet.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The stream a key names, seen from the thread that owns it (per-thread keys are only ever
/// used from their own thread).
fn view_of(key: StreamKey) -> CudaStreamView {
    match key.per_thread_owner() {
        Some(_) => CudaStreamView::PER_THREAD,
        None => CudaStreamView::from_handle(key.0),
    }
}

impl StreamOrder for CudaEventOrder {
    fn record(&self, owner: StreamKey) -> Result<()> {
        let mut events = self.events.lock();
        let event = match events.entry(owner) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(CudaEvent::new()?),
        };
        event.record(view_of(owner))
    }

    fn wait(&self, owner: StreamKey, waiter: StreamKey) -> Result<()> {
        match self.events.lock().get(&owner) {
            Some(event) => event.wait_on(view_of(waiter)),
            None => Err(Error::InvalidArgument(format!("no event was recorded for stream {:#x}", owner.0))),
        }
    }

    fn synchronize_all(&self) -> Result<()> {
        ensure_context()?;
        // SAFETY: a context is current.
        check(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize")
    }
}
