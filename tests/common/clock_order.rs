//! A stream order that models the device with vector clocks, for tests that check that no block
//! reaches another stream before that stream is ordered after the block's free: `tick` advances a
//! stream's own time (one operation on it), a capture copies its clock, a wait merges a capture
//! into the waiter's clock, a synchronisation makes every stream that has a clock see all work,
//! and a retiring stream's capture moves to its retired key. A block freed on stream A at time t
//! may reach stream B only when `sees(B, A, t)`.

use rmm::pool::{StreamIdentity, StreamKey, StreamKind, StreamOrder};
use rmm::{Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Vector clocks per stream key, captures (retiring streams' included) and a log of what was asked.
#[derive(Default, Clone)]
pub struct ClockOrder(pub Arc<Mutex<Clocks>>);

/// The model's state.
#[derive(Default)]
pub struct Clocks {
    /// Each stream's own time.
    pub now: HashMap<usize, u64>,
    /// What each stream's work is ordered after: stream → time.
    pub clock: HashMap<usize, HashMap<usize, u64>>,
    /// Each stream's (or retired key's) last capture.
    pub captured: HashMap<StreamKey, HashMap<usize, u64>>,
    /// Every wait asked: (owner, waiter).
    pub waits: Vec<(StreamKey, StreamKey)>,
    /// Captures asked.
    pub records: usize,
    /// Synchronisations asked.
    pub syncs: usize,
    /// Every retirement: (owner, retired key).
    pub retires: Vec<(StreamKey, StreamKey)>,
    /// The model's name for the stream a key names now (a handle's later lifetimes get new ones).
    pub alias: HashMap<usize, usize>,
    /// Lifetimes named apart so far.
    pub lifetimes: usize,
}

impl Clocks {
    fn id(&self, key: usize) -> usize {
        self.alias.get(&key).copied().unwrap_or(key)
    }

    /// The model's name for the stream `key` names now.
    fn id_of(&self, key: StreamKey) -> usize {
        self.id(name_of(key))
    }
}

/// The model's name for a key's stream before any handle reuse: its handle, or for a per-thread
/// default stream a number far above the tests' handles.
pub fn name_of(key: StreamKey) -> usize {
    match key.kind() {
        StreamKind::PerThread(thread) => usize::MAX - thread,
        _ => key.handle().expect("the model's streams are named by handles"),
    }
}

impl ClockOrder {
    /// One operation on `stream`: its own time advances.
    pub fn tick(&self, stream: usize) -> u64 {
        let mut c = self.0.lock().unwrap();
        let t = {
            let n = c.now.entry(stream).or_default();
            *n += 1;
            *n
        };
        c.clock.entry(stream).or_default().insert(stream, t);
        t
    }
    /// True when work on `waiter` is ordered after `owner`'s operation at time `t`.
    pub fn sees(&self, waiter: usize, owner: usize, t: u64) -> bool {
        waiter == owner
            || self.0.lock().unwrap().clock.get(&waiter).and_then(|c| c.get(&owner)).is_some_and(|&s| s >= t)
    }
    /// The stream with handle `key` was destroyed and another made with the same handle: the model
    /// names the new one apart. Returns its name.
    pub fn new_lifetime(&self, key: usize) -> usize {
        let mut c = self.0.lock().unwrap();
        c.lifetimes += 1;
        let id = key | c.lifetimes << 40;
        c.alias.insert(key, id);
        id
    }
    /// The model's name for the stream `key` names now.
    pub fn model(&self, key: usize) -> usize {
        self.0.lock().unwrap().id(key)
    }
    pub fn counts(&self) -> (usize, usize, usize) {
        let c = self.0.lock().unwrap();
        (c.records, c.waits.len(), c.syncs)
    }
}

impl StreamOrder for ClockOrder {
    fn record(&self, owner: StreamKey, _identity: StreamIdentity) -> Result<()> {
        let mut c = self.0.lock().unwrap();
        let id = c.id_of(owner);
        let clock = c.clock.get(&id).cloned().unwrap_or_default();
        c.captured.insert(owner, clock);
        c.records += 1;
        Ok(())
    }
    fn wait(&self, owner: StreamKey, _identity: StreamIdentity, waiter: StreamKey) -> Result<()> {
        let mut c = self.0.lock().unwrap();
        let Some(cap) = c.captured.get(&owner).cloned() else {
            return Err(Error::InvalidArgument(format!("no capture of {owner:#x}")));
        };
        let id = c.id_of(waiter);
        let clock = c.clock.entry(id).or_default();
        for (s, t) in cap {
            let e = clock.entry(s).or_default();
            *e = (*e).max(t);
        }
        c.waits.push((owner, waiter));
        Ok(())
    }
    fn synchronize_all(&self) -> Result<()> {
        let mut c = self.0.lock().unwrap();
        let now = c.now.clone();
        for clock in c.clock.values_mut() {
            clock.extend(now.iter().map(|(&s, &t)| (s, t)));
        }
        c.syncs += 1;
        Ok(())
    }
    fn identity(&self, _key: StreamKey, _known: StreamIdentity) -> StreamIdentity {
        StreamIdentity::Trusted
    }
    fn retire(&self, owner: StreamKey, retired: StreamKey) -> Result<()> {
        let mut c = self.0.lock().unwrap();
        let id = c.id_of(owner);
        let clock = c.clock.get(&id).cloned().unwrap_or_default();
        c.captured.remove(&owner);
        c.captured.insert(retired, clock);
        c.retires.push((owner, retired));
        Ok(())
    }
}
