//! A stream order that can say "this stream is being captured into capture N", as the driver's
//! `cuStreamGetCaptureInfo` does, and that notes every request the driver would refuse (or that
//! would break the capture) while a capture is in progress.

use rmm::pool::{StreamIdentity, StreamKey, StreamOrder, CAPTURE_MODE_RELAXED};
use rmm::Result;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the pool asked of the order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// A capture of the work of this stream.
    Record(StreamKey),
    /// The second stream waits for the first one's last capture.
    Wait(StreamKey, StreamKey),
    /// A synchronisation of everything.
    SyncAll,
    /// The thread's capture mode was set to relaxed.
    Relax,
    /// The thread's capture mode was restored to this one.
    Restore(u32),
}

/// The state behind a [`CaptureOrder`].
#[derive(Default)]
pub struct State {
    /// Everything asked, in order.
    pub log: Vec<Asked>,
    /// Streams capturing now, with their capture id.
    pub capturing: HashMap<StreamKey, u64>,
    /// Requests illegal during a capture (or that would break one), with why.
    pub illegal: Vec<String>,
    /// Times `capture_of` was asked.
    pub capture_queries: usize,
    /// When set, `relax_capture_mode` fails (as a driver error would).
    pub refuse_relax: bool,
}

/// A host stream order with captures; clones share their state.
#[derive(Default, Clone)]
pub struct CaptureOrder(pub Arc<Mutex<State>>);

thread_local!(static MODE: std::cell::Cell<u32> = const { std::cell::Cell::new(0) });

impl CaptureOrder {
    /// `stream` is being captured into capture `id` from now on (`None`: no longer).
    pub fn set_capturing(&self, stream: usize, id: Option<u64>) {
        let mut s = self.0.lock().unwrap();
        match id {
            Some(id) => s.capturing.insert(StreamKey::of_handle(stream), id),
            None => s.capturing.remove(&StreamKey::of_handle(stream)),
        };
    }

    /// What was asked so far.
    pub fn log(&self) -> Vec<Asked> {
        self.0.lock().unwrap().log.clone()
    }

    /// The illegal requests so far.
    pub fn illegal(&self) -> Vec<String> {
        self.0.lock().unwrap().illegal.clone()
    }

    /// The calling thread's capture mode (0 global, 2 relaxed).
    pub fn thread_mode() -> u32 {
        MODE.with(|m| m.get())
    }

    /// Whether an upstream call made now by this thread would break a capture in progress: one
    /// is in progress and the thread is not relaxed.
    pub fn upstream_call_breaks_capture(&self) -> bool {
        !self.0.lock().unwrap().capturing.is_empty() && Self::thread_mode() != CAPTURE_MODE_RELAXED
    }
}

impl StreamOrder for CaptureOrder {
    fn record(&self, owner: StreamKey, _identity: StreamIdentity) -> Result<()> {
        let mut s = self.0.lock().unwrap();
        s.log.push(Asked::Record(owner));
        if s.capturing.contains_key(&owner) {
            s.illegal.push(format!("record on capturing stream {owner:#x}"));
        }
        Ok(())
    }
    fn wait(&self, owner: StreamKey, _identity: StreamIdentity, waiter: StreamKey) -> Result<()> {
        let mut s = self.0.lock().unwrap();
        s.log.push(Asked::Wait(owner, waiter));
        if s.capturing.contains_key(&owner) || s.capturing.contains_key(&waiter) {
            s.illegal.push(format!("wait of {waiter:#x} for {owner:#x} during a capture"));
        }
        Ok(())
    }
    fn synchronize_all(&self) -> Result<()> {
        let mut s = self.0.lock().unwrap();
        s.log.push(Asked::SyncAll);
        if !s.capturing.is_empty() {
            s.illegal.push("synchronisation of everything during a capture".into());
        }
        Ok(())
    }
    /// As the driver's `cuStreamGetId`: refused on a capturing stream, and an unsafe call for a
    /// thread not relaxed while a capture is in progress (unless relaxing is refused, as where
    /// there is no driver and so no capture to keep valid). Streams are never replaced here, so each
    /// key's answer is the same, and never trusted.
    fn identity(&self, key: StreamKey, _known: StreamIdentity) -> StreamIdentity {
        let mut s = self.0.lock().unwrap();
        if s.capturing.contains_key(&key) {
            s.illegal.push(format!("identity of capturing stream {key:#x}"));
        } else if !s.capturing.is_empty() && !s.refuse_relax && Self::thread_mode() != CAPTURE_MODE_RELAXED {
            s.illegal.push(format!("identity of {key:#x} during a capture, mode not relaxed"));
        }
        StreamIdentity::Driver(key.handle().unwrap_or(usize::MAX) as u64)
    }
    fn capture_of(&self, key: StreamKey) -> Result<Option<u64>> {
        let mut s = self.0.lock().unwrap();
        s.capture_queries += 1;
        Ok(s.capturing.get(&key).copied())
    }
    fn relax_capture_mode(&self) -> Result<u32> {
        let mut s = self.0.lock().unwrap();
        if s.refuse_relax {
            return Err(rmm::Error::InvalidArgument("relax refused".into()));
        }
        s.log.push(Asked::Relax);
        Ok(MODE.with(|m| m.replace(CAPTURE_MODE_RELAXED)))
    }
    fn restore_capture_mode(&self, previous: u32) {
        self.0.lock().unwrap().log.push(Asked::Restore(previous));
        MODE.with(|m| m.set(previous));
    }
}
