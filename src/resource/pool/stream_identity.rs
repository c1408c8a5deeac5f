//! Which stream a handle names: the pool's defence against handle reuse.
//!
//! A set of free lists is keyed by a stream's handle, and the driver gives a destroyed stream's
//! handle to the next stream it creates. Two guards keep the next stream from taking blocks that
//! the destroyed stream's queued work may still write:
//!
//! 1. Streams this library creates announce their destruction while still alive
//!    ([`crate::stream_registry::retire_stream`]): the pool captures their work (an event) and
//!    moves their free blocks to a retired key, taken by others after waiting for that capture.
//!    Their sets are *trusted*: the fast paths spend one comparison on it.
//! 2. Every other stream's sets remember the driver's unique id of the stream that filled them.
//!    Before a stream takes from its own sets without waiting (its allocations, and a capture on
//!    its handle for others), the pool compares that id with the stream's id now (one
//!    `cuStreamGetId` per allocation on such a stream; frees never ask). A different id means the
//!    old stream is gone: its blocks move to a retired key that waits for a synchronisation of
//!    everything, which the pool makes before it would grow by as much.

use super::capture::relaxed_if_possible;
use super::captures::Captures;
use super::shards::Shard;
use crate::stream_registry::{add_tenant, StreamTenant, Tenancy};
use parking_lot::{Mutex, MutexGuard};
use rmm_algorithms::{next_retirement_number, CoalescingPool, SetId, StreamIdentity, StreamKey, StreamOrder};
use std::sync::{Arc, Weak};

/// How the pool orders streams, and what it checks of the streams a handle names.
///
/// # Invariants
/// - `ordered` is the order's [`is_needed`](StreamOrder::is_needed): an unordered pool (host
///   memory) records, waits for and synchronises nothing, and every set is anybody's.
/// - A set taken from without a wait (its stream's allocations, a capture for others) was filled
///   by the stream its key names now: its identity is trusted (a stream this library made, which
///   announces its destruction), or equal to the stream's identity now; otherwise the key's sets
///   are retired to wait for a synchronisation of everything, and the key gets a new set.
/// - The order is never asked for the identity of a stream that captures into a CUDA graph: while
///   some stream is marked as capturing, and on a set's first use, the pool asks whether the
///   stream captures first.
/// - One synchronisation of everything runs at a time ([`one_at_a_time`](Self::one_at_a_time)).
pub(super) struct Streams {
    order: Arc<dyn StreamOrder>,
    ordered: bool,
    /// One synchronisation of everything at a time (see `synchronisation.rs`).
    sync_lock: Mutex<()>,
}

impl Streams {
    /// Streams ordered by `order`.
    pub(super) fn new(order: Box<dyn StreamOrder>) -> Self {
        let ordered = order.is_needed();
        Streams { order: Arc::from(order), ordered, sync_lock: Mutex::new(()) }
    }

    /// The stream order.
    #[inline(always)]
    pub(super) fn order(&self) -> &dyn StreamOrder {
        &*self.order
    }

    /// Whether the order is needed at all (device memory): see the invariants.
    #[inline(always)]
    pub(super) fn ordered(&self) -> bool {
        self.ordered
    }

    /// Held while the pool synchronises everything, and across what it does with the memory
    /// that made fresh.
    pub(super) fn one_at_a_time(&self) -> MutexGuard<'_, ()> {
        self.sync_lock.lock()
    }

    /// Registers `shards`, a new pool's, to hear of retiring streams.
    pub(super) fn announce_retiring_streams(&self, shards: Weak<[Shard]>) -> Tenancy {
        add_tenant(Arc::new(PoolTenant { shards, order: self.order.clone() }))
    }

    /// The set of `key`'s own free lists in `core`, for a call on `key` that takes from them
    /// without waiting: checked to belong to the stream that `key` names now.
    #[inline(always)]
    pub(super) fn own_set(&self, core: &mut CoalescingPool, key: StreamKey, captures: &Captures) -> SetId {
        let (set, identity) = core.set_and_identity_of(key);
        if identity == StreamIdentity::Trusted {
            return set;
        }
        self.own_set_checked(core, key, set, captures)
    }

    #[cold]
    #[inline(never)]
    fn own_set_checked(&self, core: &mut CoalescingPool, key: StreamKey, set: SetId, captures: &Captures) -> SetId {
        if self.identity_holds(core, set, captures) {
            return set;
        }
        // The old stream's sets are retired: a new set for the stream the handle names now.
        let set = core.set_of(key);
        let identity = self.stream_identity(key, StreamIdentity::Unknown, captures);
        core.set_identity(set, identity);
        set
    }

    /// The stream order's identity of `key`'s stream (see [`StreamOrder::identity`]), asked only
    /// where the driver allows it. The driver refuses `cuStreamGetId` on a capturing stream (and
    /// the refusal invalidates the capture), so the pool first asks whether `key` captures where
    /// it may: while some stream is marked as capturing, and on a stream's first use of a set
    /// (which is how a capture not announced is found on a stream new to the pool; a warm stream's
    /// capture must be announced). A capturing stream is alive and named by its handle, so its
    /// sets keep the identity they have; a set new to it gets one that no other call gets, so
    /// that nothing is ever taken on trust from it. Other streams are asked with the thread's
    /// capture mode relaxed while a capture is marked, which a global-mode capture needs.
    #[cold]
    #[inline(never)]
    fn stream_identity(&self, key: StreamKey, known: StreamIdentity, captures: &Captures) -> StreamIdentity {
        let marked = captures.marked_any();
        if !marked && (known != StreamIdentity::Unknown || !self.ordered) {
            return self.order.identity(key, known);
        }
        if let Ok(Some(_)) = self.order.capture_of(key) {
            return if known == StreamIdentity::Unknown {
                StreamIdentity::Unrepeatable(next_retirement_number() as u64)
            } else {
                known
            };
        }
        if !marked {
            return self.order.identity(key, known);
        }
        relaxed_if_possible(&*self.order, || self.order.identity(key, known))
    }

    /// The set of `key`'s own free lists for a free on `key`. Frees do not check the identity of
    /// an established set (a block freed into a replaced stream's set only waits longer); a new
    /// set learns whose it is.
    #[inline(always)]
    pub(super) fn set_for_free(&self, core: &mut CoalescingPool, key: StreamKey, captures: &Captures) -> SetId {
        let (set, identity) = core.set_and_identity_of(key);
        if identity == StreamIdentity::Unknown {
            self.learn_identity(core, set, captures);
        }
        set
    }

    #[cold]
    #[inline(never)]
    fn learn_identity(&self, core: &mut CoalescingPool, set: SetId, captures: &Captures) {
        let identity = self.stream_identity(core.key_of(set), StreamIdentity::Unknown, captures);
        core.set_identity(set, identity);
    }

    /// True when `set` (private, or the published set of the calling stream) was
    /// filled by the stream its key names now. Otherwise that stream was destroyed and its handle
    /// reused: its sets in `core` are retired, to wait for a synchronisation of everything, and
    /// `set` no longer belongs to the key.
    #[inline(always)]
    pub(super) fn identity_holds(&self, core: &mut CoalescingPool, set: SetId, captures: &Captures) -> bool {
        core.identity(set) == StreamIdentity::Trusted || self.check_identity(core, set, captures)
    }

    #[cold]
    #[inline(never)]
    fn check_identity(&self, core: &mut CoalescingPool, set: SetId, captures: &Captures) -> bool {
        let key = core.key_of(set);
        let known = core.identity(set);
        let now = self.stream_identity(key, known, captures);
        if known == StreamIdentity::Unknown || known == now {
            core.set_identity(set, now);
            return true;
        }
        core.retire_key(key, StreamKey::retired_after_sync(next_retirement_number()));
        false
    }
}

/// What the stream registry holds of a pool: enough to retire a stream in every shard, and nothing
/// that keeps the pool alive.
struct PoolTenant {
    shards: Weak<[Shard]>,
    order: Arc<dyn StreamOrder>,
}

impl StreamTenant for PoolTenant {
    fn stream_retiring(&self, key: StreamKey) {
        let Some(shards) = self.shards.upgrade() else {
            return;
        };
        // One capture of the stream's work serves every shard; made only if some shard holds
        // sets of the stream, and before any of them is moved.
        let mut captured: Option<StreamKey> = None;
        let mut in_use = Vec::new();
        for shard in shards.iter() {
            let mut core = shard.lock();
            match core.identity_of_key(key) {
                None => {}
                // Filled by this stream: covered by a capture made now, while it is alive.
                Some(StreamIdentity::Trusted) => {
                    let retired = *captured.get_or_insert_with(|| {
                        let retired = StreamKey::retired_after_capture(next_retirement_number());
                        match self.order.retire(key, retired) {
                            Ok(()) => retired,
                            Err(_) => StreamKey::retired_after_sync(next_retirement_number()),
                        }
                    });
                    core.retire_key(key, retired);
                }
                // Filled by an earlier stream with this handle, or never checked: no capture on
                // the handle covers that work.
                Some(_) => {
                    core.retire_key(key, StreamKey::retired_after_sync(next_retirement_number()));
                }
            }
            core.retired_keys_in_use(&mut in_use);
        }
        self.order.forget_retired(&|k| in_use.contains(&k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Result;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    /// An order whose streams have an identity the test changes (a handle reused), that may say
    /// a stream captures, and that counts the identity questions.
    #[derive(Default)]
    struct Handles {
        identity: AtomicU64,
        capturing: AtomicU64,
        asked: AtomicUsize,
    }

    /// The order the pool sees, sharing the test's view of the handles.
    struct Order(Arc<Handles>);

    impl StreamOrder for Order {
        fn record(&self, _owner: StreamKey, _identity: StreamIdentity) -> Result<()> {
            Ok(())
        }
        fn wait(&self, _owner: StreamKey, _identity: StreamIdentity, _waiter: StreamKey) -> Result<()> {
            Ok(())
        }
        fn synchronize_all(&self) -> Result<()> {
            Ok(())
        }
        fn identity(&self, _key: StreamKey, _known: StreamIdentity) -> StreamIdentity {
            self.0.asked.fetch_add(1, Ordering::Relaxed);
            StreamIdentity::Driver(self.0.identity.load(Ordering::Relaxed))
        }
        fn capture_of(&self, _key: StreamKey) -> Result<Option<u64>> {
            Ok(Some(self.0.capturing.load(Ordering::Relaxed)).filter(|&id| id != 0))
        }
    }

    fn streams() -> (Streams, Arc<Handles>) {
        let handles = Arc::new(Handles { identity: AtomicU64::new(7), ..Default::default() });
        (Streams::new(Box::new(Order(handles.clone()))), handles)
    }

    const KEY: StreamKey = StreamKey::of_handle(0x1000);

    #[test]
    fn a_stream_keeps_its_set_while_its_identity_holds() {
        let (streams, handles) = streams();
        let (mut core, captures) = (CoalescingPool::new(), Captures::new());
        assert!(streams.ordered());
        let set = streams.set_for_free(&mut core, KEY, &captures);
        assert_eq!(core.identity(set), StreamIdentity::Driver(7), "a new set learns whose it is");
        assert_eq!(streams.own_set(&mut core, KEY, &captures), set);
        assert!(streams.identity_holds(&mut core, set, &captures));
        // Frees never ask again about an established set.
        let asked = handles.asked.load(Ordering::Relaxed);
        assert_eq!(streams.set_for_free(&mut core, KEY, &captures), set);
        assert_eq!(handles.asked.load(Ordering::Relaxed), asked);
    }

    #[test]
    fn a_reused_handle_gets_a_new_set_and_the_old_one_waits_for_a_synchronisation() {
        let (streams, handles) = streams();
        let (mut core, captures) = (CoalescingPool::new(), Captures::new());
        let old = streams.own_set(&mut core, KEY, &captures);
        // Free blocks of the old stream (addresses only: never touched).
        core.add_chunk(1 << 30, 1 << 20, old);
        handles.identity.store(8, Ordering::Relaxed);
        assert!(!streams.identity_holds(&mut core, old, &captures));
        assert_eq!(core.free_bytes_waiting_for_sync(), 1 << 20, "the old stream's blocks wait");
        let new = streams.own_set(&mut core, KEY, &captures);
        assert_ne!(new, old);
        assert_eq!((core.key_of(new), core.identity(new)), (KEY, StreamIdentity::Driver(8)));
    }

    #[test]
    fn a_capturing_stream_is_not_asked_its_identity() {
        let (streams, handles) = streams();
        let (mut core, captures) = (CoalescingPool::new(), Captures::new());
        handles.capturing.store(3, Ordering::Relaxed);
        // A set new to a capturing stream gets an identity no other call gets, never trusted.
        let set = streams.own_set(&mut core, KEY, &captures);
        assert_eq!(handles.asked.load(Ordering::Relaxed), 0);
        let identity = core.identity(set);
        assert!(matches!(identity, StreamIdentity::Unrepeatable(_)));
        // While some stream is marked, even a known set is not asked about while it captures.
        captures.mark(&rmm_algorithms::ShardMap::new(2), KEY, 3).unwrap();
        assert!(streams.identity_holds(&mut core, set, &captures));
        assert_eq!(handles.asked.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn one_synchronisation_at_a_time() {
        let (streams, _) = streams();
        let held = streams.one_at_a_time();
        assert!(streams.sync_lock.try_lock().is_none());
        drop(held);
        assert!(streams.sync_lock.try_lock().is_some());
    }
}
