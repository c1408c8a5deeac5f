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

use super::shards::Shard;
use super::PoolMemoryResource;
use crate::resource::MemoryResource;
use crate::stream_registry::{add_tenant, StreamTenant, Tenancy};
use rmm_algorithms::{
    next_retirement_number, CoalescingPool, SetId, StreamKey, StreamOrder, IDENTITY_TRUSTED, IDENTITY_UNKNOWN,
};
use std::sync::{Arc, Weak};

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// The set of `key`'s own free lists in `core`, for a call on `key` that takes from them
    /// without waiting: checked to belong to the stream that `key` names now.
    #[inline(always)]
    pub(super) fn own_set(&self, core: &mut CoalescingPool, key: StreamKey) -> SetId {
        let (set, identity) = core.set_and_identity_of(key);
        if identity == IDENTITY_TRUSTED {
            return set;
        }
        self.own_set_checked(core, key, set)
    }

    #[cold]
    #[inline(never)]
    fn own_set_checked(&self, core: &mut CoalescingPool, key: StreamKey, set: SetId) -> SetId {
        if self.identity_holds(core, set) {
            return set;
        }
        // The old stream's sets are retired: a new set for the stream the handle names now.
        let set = core.set_of(key);
        let identity = self.stream_identity(key, IDENTITY_UNKNOWN);
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
    fn stream_identity(&self, key: StreamKey, known: u64) -> u64 {
        let marked = self.captures.marked_any();
        if !marked && (known != IDENTITY_UNKNOWN || !self.ordered) {
            return self.order.identity(key, known);
        }
        if let Ok(Some(_)) = self.order.capture_of(key) {
            return if known == IDENTITY_UNKNOWN { next_retirement_number() as u64 | 1 << 62 } else { known };
        }
        if !marked {
            return self.order.identity(key, known);
        }
        super::capture::relaxed_if_possible(&*self.order, || self.order.identity(key, known))
    }

    /// The set of `key`'s own free lists for a free on `key`. Frees do not check the identity of
    /// an established set (a block freed into a replaced stream's set only waits longer); a new
    /// set learns whose it is.
    #[inline(always)]
    pub(super) fn set_for_free(&self, core: &mut CoalescingPool, key: StreamKey) -> SetId {
        let (set, identity) = core.set_and_identity_of(key);
        if identity == IDENTITY_UNKNOWN {
            self.learn_identity(core, set);
        }
        set
    }

    #[cold]
    #[inline(never)]
    fn learn_identity(&self, core: &mut CoalescingPool, set: SetId) {
        let identity = self.stream_identity(core.key_of(set), IDENTITY_UNKNOWN);
        core.set_identity(set, identity);
    }

    /// True when `set` (private, or the published set of the calling stream) was
    /// filled by the stream its key names now. Otherwise that stream was destroyed and its handle
    /// reused: its sets in `core` are retired, to wait for a synchronisation of everything, and
    /// `set` no longer belongs to the key.
    #[inline(always)]
    pub(super) fn identity_holds(&self, core: &mut CoalescingPool, set: SetId) -> bool {
        core.identity(set) == IDENTITY_TRUSTED || self.check_identity(core, set)
    }

    #[cold]
    #[inline(never)]
    fn check_identity(&self, core: &mut CoalescingPool, set: SetId) -> bool {
        let key = core.key_of(set);
        let known = core.identity(set);
        let now = self.stream_identity(key, known);
        if known == IDENTITY_UNKNOWN || known == now {
            core.set_identity(set, now);
            return true;
        }
        core.retire_key(key, StreamKey::retired_after_sync(next_retirement_number()));
        false
    }

    /// Sets of free lists in use in all shards (see `CoalescingPool::sets_in_use`): bounded by the
    /// streams in use, however many came and went; for tests and monitoring.
    pub fn sets_in_use(&self) -> usize {
        self.shards.all().iter().map(|shard| shard.lock().sets_in_use()).sum()
    }

    /// Free bytes of replaced streams in every shard, which only a synchronisation hands over.
    pub(super) fn free_bytes_waiting_for_sync(&self) -> usize {
        self.shards.all().iter().map(|shard| shard.lock().free_bytes_waiting_for_sync()).sum()
    }
}

/// Registers a new pool's shards to hear of retiring streams.
pub(super) fn announce_retiring_streams(shards: Weak<[Shard]>, order: &Arc<dyn StreamOrder>) -> Tenancy {
    add_tenant(Arc::new(PoolTenant { shards, order: order.clone() }))
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
                Some(IDENTITY_TRUSTED) => {
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
