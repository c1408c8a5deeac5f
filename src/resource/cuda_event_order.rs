//! [`StreamOrder`] for device memory: one CUDA event per stream, recorded only when another stream
//! takes that stream's free blocks.

use crate::driver::{check, ensure_context};
use crate::error::Result;
use crate::event::CudaEvent;
use crate::pool::{current_thread_number, StreamKey, StreamOrder};
use crate::stream::CudaStreamView;
use cudarc::driver::sys;
use parking_lot::Mutex;
use std::collections::HashMap;

/// Orders streams with lazily created events. Recording at the moment of the hand-over (rather than
/// at every free, as RMM does) waits for slightly more work, but every free on the owner stream was
/// enqueued before it, so the blocks are safe; in exchange frees cost no CUDA call at all.
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

fn view_of(key: StreamKey) -> CudaStreamView {
    match key.per_thread_owner() {
        Some(_) => CudaStreamView::PER_THREAD,
        None => CudaStreamView::from_handle(key.0),
    }
}

/// Waits for all work in the current context: the fallback when an event cannot express the order.
fn synchronize_context() -> Result<()> {
    ensure_context()?;
    // SAFETY: a context is current.
    check(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize")
}

impl StreamOrder for CudaEventOrder {
    fn order(&self, owner: StreamKey, waiter: StreamKey) -> Result<()> {
        // Another thread's per-thread default stream cannot be named from here; a stream destroyed
        // since its frees cannot be recorded on. Both fall back to waiting for everything.
        if matches!(owner.per_thread_owner(), Some(t) if t != current_thread_number()) {
            return synchronize_context();
        }
        let mut events = self.events.lock();
        let event = match events.entry(owner) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(CudaEvent::new()?),
        };
        match event.record(view_of(owner)) {
            Ok(()) => event.wait_on(view_of(waiter)),
            Err(_) => synchronize_context(),
        }
    }

    fn synchronize_all(&self) -> Result<()> {
        synchronize_context()
    }
}
