//! [`StreamOrder`] for device memory: one CUDA event per stream, recorded when the pool publishes
//! that stream's free blocks.

use crate::device::DeviceId;
use crate::driver::{
    context_kept, current_context_kept, exchange_capture_mode, primary_context_kept, stream_capture_id, stream_context,
    stream_id, synchronize_context, ContextHandle, CAPTURE_MODE_RELAXED,
};
use crate::error::{Error, Result};
use crate::event::CudaEvent;
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use parking_lot::Mutex;
use rmm_algorithms::{next_retirement_number, HostOrder, StreamIdentity, StreamKey, StreamOrder};
use std::collections::HashMap;

/// How a resource that carves blocks out of `upstream`'s memory orders streams by default: with
/// CUDA events for memory kernels may use, not at all for memory only the host touches.
pub(crate) fn default_order(upstream: &dyn MemoryResource) -> Box<dyn StreamOrder> {
    if upstream.is_device_accessible() {
        Box::new(CudaEventOrder::new())
    } else {
        Box::new(HostOrder)
    }
}

/// Orders streams with lazily created events, recorded when the pool publishes a stream's free
/// blocks: on every free in a pool shard several streams share (as RMM does), else only at the
/// owner's next call after another stream asked for its blocks, which covers every free enqueued
/// before it. A retiring stream's last event is filed under its retired key.
///
/// Streams created by this library are trusted by handle (their destruction is announced, see
/// [`crate::stream_registry`]); any other stream is known by the driver's unique stream id too.
///
/// "Synchronise everything" waits on every context the pool's memory may be used from: the
/// primary contexts of the devices the order was bound to ([`for_devices`](Self::for_devices)),
/// the context of every stream the pool has seen (noted on its first call), and, where none of
/// these is known yet, the context current when a synchronisation was first needed. So a pool of
/// one device used, or released, while another device's context is current still waits for its
/// own device's work.
#[derive(Default)]
pub struct CudaEventOrder {
    events: Mutex<HashMap<StreamKey, Capture>>,
    /// Kept contexts (see `current_context_kept`), each once.
    contexts: Mutex<Vec<ContextHandle>>,
}

/// A stream's event and the identity of the stream it last captured.
struct Capture {
    event: CudaEvent,
    identity: StreamIdentity,
}

impl CudaEventOrder {
    /// An order with no events yet, that learns its contexts from the streams it sees.
    pub fn new() -> Self {
        Self::default()
    }

    /// An order bound to the primary contexts of `devices` (a pool's device and the peers that
    /// use its memory), created where they were not yet.
    pub fn for_devices(devices: &[DeviceId]) -> Result<Self> {
        let order = Self::new();
        for &device in devices {
            order.note(primary_context_kept(device)?);
        }
        Ok(order)
    }

    /// Adds `context` to those synchronised.
    fn note(&self, context: ContextHandle) {
        let mut contexts = self.contexts.lock();
        if !contexts.contains(&context) {
            contexts.push(context);
        }
    }

    /// Notes the context of `key`'s stream, called from a call on it (so it is alive). The default
    /// streams are those of the current context. A context the driver will not name is left out:
    /// the current one then stands in at the next synchronisation.
    fn note_stream(&self, key: StreamKey) {
        let context = match view_of(key) {
            Ok(view) if !view.is_default() && !view.is_per_thread_default() => {
                stream_context(view.stream_handle()).and_then(context_kept)
            }
            _ => current_context_kept(),
        };
        if let Ok(context) = context {
            self.note(context);
        }
    }

    /// Every context to synchronise: those noted, or the current one where none is.
    fn contexts(&self) -> Result<Vec<ContextHandle>> {
        let contexts = self.contexts.lock().clone();
        if !contexts.is_empty() {
            return Ok(contexts);
        }
        let current = current_context_kept()?;
        self.note(current);
        Ok(vec![current])
    }
}

/// The stream a key names, seen from the thread that owns it (per-thread keys are only ever
/// used from their own thread); an error for a key that names no stream.
fn view_of(key: StreamKey) -> Result<CudaStreamView<'static>> {
    // SAFETY: the order's methods name a stream only from a call on it (`StreamOrder`'s
    // contract), so the stream is alive while the view is used, within that call, on the
    // thread that made the call.
    unsafe { CudaStreamView::of_key(key) }
        .ok_or_else(|| Error::InvalidArgument(format!("the stream key {key:#x} names no stream")))
}

impl StreamOrder for CudaEventOrder {
    fn record(&self, owner: StreamKey, identity: StreamIdentity) -> Result<()> {
        let mut events = self.events.lock();
        let capture = match events.entry(owner) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                self.note_stream(owner);
                v.insert(Capture { event: CudaEvent::for_stream(view_of(owner)?)?, identity })
            }
        };
        // Until the record succeeds, the event holds no capture of this identity.
        capture.identity = StreamIdentity::Unknown;
        capture.event.record(view_of(owner)?)?;
        capture.identity = identity;
        Ok(())
    }

    fn wait(&self, owner: StreamKey, identity: StreamIdentity, waiter: StreamKey) -> Result<()> {
        match self.events.lock().get(&owner) {
            Some(capture) if capture.identity == identity => capture.event.wait_on(view_of(waiter)?),
            Some(_) => Err(Error::InvalidArgument(format!(
                "the last event on stream {owner:#x} was recorded for another stream with that handle"
            ))),
            None => Err(Error::InvalidArgument(format!("no event was recorded for stream {owner:#x}"))),
        }
    }

    fn synchronize_all(&self) -> Result<()> {
        // Every context, even after one failed: the error reported is the first.
        let mut result = Ok(());
        for context in self.contexts()? {
            let synced = synchronize_context(context);
            result = result.and(synced);
        }
        result
    }

    fn identity(&self, key: StreamKey, known: StreamIdentity) -> StreamIdentity {
        if known == StreamIdentity::Unknown {
            // A stream's first use of a set of free lists: its work may touch the pool's memory.
            self.note_stream(key);
        }
        // Only a handle the driver may give another stream needs asking; every such key names one.
        let Some(view) = view_of(key).ok().filter(|_| key.is_reusable_handle()) else {
            return StreamIdentity::Trusted;
        };
        let Ok(id) = stream_id(view.stream_handle()).map(StreamIdentity::Driver) else {
            // No answer (a handle the driver does not know): an identity no other call gets, so
            // the stream's blocks are never taken on trust.
            return StreamIdentity::Unrepeatable(next_retirement_number() as u64);
        };
        if id == known {
            id
        } else if crate::stream_registry::is_registered(key) {
            StreamIdentity::Trusted
        } else {
            id
        }
    }

    fn retire(&self, owner: StreamKey, retired: StreamKey) -> Result<()> {
        self.note_stream(owner);
        let mut events = self.events.lock();
        let event = match events.remove(&owner) {
            Some(capture) => capture.event,
            None => CudaEvent::for_stream(view_of(owner)?)?,
        };
        event.record(view_of(owner)?)?;
        events.insert(retired, Capture { event, identity: StreamIdentity::Trusted });
        Ok(())
    }

    fn capture_of(&self, key: StreamKey) -> Result<Option<u64>> {
        // A key that names no stream (a retired one) captures nothing.
        match view_of(key) {
            Ok(view) => stream_capture_id(view.stream_handle()),
            Err(_) => Ok(None),
        }
    }

    fn relax_capture_mode(&self) -> Result<u32> {
        exchange_capture_mode(CAPTURE_MODE_RELAXED)
    }

    fn restore_capture_mode(&self, previous: u32) {
        let _ = exchange_capture_mode(previous);
    }

    fn forget_retired(&self, still_needed: &dyn Fn(StreamKey) -> bool) {
        self.events.lock().retain(|&key, _| !key.is_retired() || still_needed(key));
    }
}
