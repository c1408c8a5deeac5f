//! A stream order that records what the pool asked of it, so tests can see when streams were
//! ordered.

use rmm::pool::{StreamIdentity, StreamKey, StreamOrder};
use rmm::Result;
use std::sync::{Arc, Mutex};

/// What the pool asked of its stream order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// A capture of the work of this stream.
    Record(StreamKey),
    /// The second stream waits for the first one's last capture.
    Wait(StreamKey, StreamKey),
    /// A synchronisation of everything.
    SyncAll,
}

/// Records every ordering request, in order.
#[derive(Default, Clone)]
pub struct RecordingOrder(pub Arc<Mutex<Vec<Asked>>>);

impl RecordingOrder {
    /// What was asked so far.
    pub fn log(&self) -> Vec<Asked> {
        self.0.lock().unwrap().clone()
    }
}

impl StreamOrder for RecordingOrder {
    fn record(&self, owner: StreamKey, _identity: StreamIdentity) -> Result<()> {
        self.0.lock().unwrap().push(Asked::Record(owner));
        Ok(())
    }
    fn wait(&self, owner: StreamKey, _identity: StreamIdentity, waiter: StreamKey) -> Result<()> {
        self.0.lock().unwrap().push(Asked::Wait(owner, waiter));
        Ok(())
    }
    fn synchronize_all(&self) -> Result<()> {
        self.0.lock().unwrap().push(Asked::SyncAll);
        Ok(())
    }
}
