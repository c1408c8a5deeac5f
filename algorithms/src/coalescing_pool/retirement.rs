//! Retired streams: a stream's free blocks outlive its handle.
//!
//! The driver gives a destroyed stream's handle to the next stream it creates, so the sets of free
//! lists keyed by a handle must not pass to whichever stream holds the handle next. When a stream
//! is retired (its destruction announced while it was alive) or found replaced (a different
//! identity behind the same handle), its private, cached and published free blocks move to one set
//! under a retired key that no stream has. Other streams take them like a published set: after
//! waiting for the capture of the retired stream's work, or, when no capture could be made, only
//! after a synchronisation of everything. The emptied sets are reused by the streams that come
//! next, so set ids do not pile up as streams come and go.

use super::{CoalescingPool, SetId, StreamSet};
use crate::stream_identity::PackedIdentity;
use crate::stream_order::{next_retirement_number, StreamIdentity, StreamKey, StreamKind};

/// Sets of retired streams whose work a capture covers, at most, per pool: beyond it the oldest
/// waits for a synchronisation instead, so sets do not pile up while fresh memory lasts (a stream
/// short of memory takes fresh memory before a retired stream's, to wait for nothing).
const MAX_CAPTURED_SETS: usize = 8;

impl CoalescingPool {
    /// The identity of `key`'s sets here (see `StreamOrder::identity`), if it has any.
    pub fn identity_of_key(&self, key: StreamKey) -> Option<StreamIdentity> {
        self.private_set(key).map(|set| self.sets[set].identity.unpack())
    }

    /// Moves every free block of `key`'s sets (private, cached and published) to one set of key
    /// `retired`, which no stream has (see [`StreamKey::retired_after_capture`]); the emptied sets
    /// are left for reuse. True when the retired set holds free memory (false also when `key` had
    /// no sets here). The caller must have captured the stream's work under `retired`, or
    /// `retired` must wait for a synchronisation.
    pub fn retire_key(&mut self, key: StreamKey, retired: StreamKey) -> bool {
        debug_assert!(key.is_stream() && key != StreamKey::LEGACY_DEFAULT && retired.is_retired());
        let Some(private) = self.private_set(key) else {
            return false;
        };
        // The cached set may be among those that change hands.
        self.last = super::LastSet::default();
        self.flush_caches();
        if let Some(published) = self.sets[private].publishes_to.take() {
            self.merge_into(published, private);
            self.sets[published] = StreamSet::new(StreamKey::UNUSED, None);
        }
        self.stream_count -= 1;
        if self.sets[private].free_bytes == 0 {
            self.sets[private] = StreamSet::new(StreamKey::UNUSED, None);
            return false;
        }
        let lists = &mut self.sets[private];
        lists.key = retired;
        lists.wanted = false;
        lists.identity = PackedIdentity::pack(StreamIdentity::Trusted);
        if retired.waits_for_sync() {
            self.join_the_set_waiting_for_sync(private);
        } else {
            self.limit_captured_sets();
        }
        true
    }

    /// All sets that wait for a synchronisation are alike: one per pool holds them.
    fn join_the_set_waiting_for_sync(&mut self, set: SetId) {
        let other = self.set_ids().find(|&i| i != set && self.sets[i].key.waits_for_sync());
        if let Some(target) = other {
            self.merge_into(set, target);
            self.sets[set] = StreamSet::new(StreamKey::UNUSED, None);
        }
    }

    /// Keeps at most [`MAX_CAPTURED_SETS`] sets whose capture may be waited for: the oldest
    /// (lowest retirement number) waits for a synchronisation instead.
    fn limit_captured_sets(&mut self) {
        let captured = |s: &StreamSet| s.key.is_retired() && !s.key.waits_for_sync() && s.free_bytes > 0;
        while self.sets.iter().filter(|s| captured(s)).count() > MAX_CAPTURED_SETS {
            let number = |i: SetId| match self.sets[i].key.kind() {
                StreamKind::RetiredAfterCapture(number) => number,
                _ => usize::MAX,
            };
            let Some(oldest) = self.set_ids().filter(|&i| captured(&self.sets[i])).min_by_key(|&i| number(i)) else {
                return;
            };
            self.sets[oldest].key = StreamKey::retired_after_sync(next_retirement_number());
            self.join_the_set_waiting_for_sync(oldest);
        }
    }

    /// The retired keys whose sets still hold free memory here.
    pub fn retired_keys_in_use(&self, out: &mut Vec<StreamKey>) {
        out.extend(self.sets.iter().filter(|s| s.key.is_retired() && s.free_bytes > 0).map(|s| s.key));
    }

    /// Moves every free block (of every set but fresh memory) to one set of key `sealed`, which no
    /// stream may take from: what a synchronisation that starts now will cover.
    pub fn seal(&mut self, sealed: StreamKey) {
        debug_assert!(sealed.is_sealed());
        self.last = super::LastSet::default();
        self.flush_caches();
        for other in self.set_ids() {
            let key = self.sets[other].key;
            // Another synchronisation's sealed blocks stay its own.
            let movable = key != StreamKey::FRESH && key != StreamKey::UNUSED && !key.is_sealed();
            if !movable || self.sets[other].free_bytes == 0 {
                continue;
            }
            // One sealed set per set, so that a failed synchronisation can give the blocks back.
            let target = self.new_set(sealed, None);
            self.sets[target].sealed_from = Some((other, key));
            self.merge_into(other, target);
            if !key.is_stream() {
                // A retired set now empty: left for reuse (its blocks go back to a set that waits
                // for a synchronisation, should this one fail).
                self.sets[other] = StreamSet::new(StreamKey::UNUSED, None);
            }
        }
    }

    /// After the synchronisation that `sealed` waited for: its blocks become fresh memory, or, if
    /// the synchronisation failed, go back where they were (to the set that waits for a
    /// synchronisation, where their set was retired or left for reuse meanwhile).
    pub fn unseal(&mut self, sealed: StreamKey, synced: bool) {
        self.last = super::LastSet::default();
        while let Some(set) = self.set_ids().find(|&i| self.sets[i].key == sealed) {
            let from = self.sets[set].sealed_from.take();
            if synced {
                let fresh = self.set_of(StreamKey::FRESH);
                self.merge_into(set, fresh);
            } else {
                match from {
                    Some((other, key)) if self.sets[other].key == key => self.merge_into(set, other),
                    _ => {
                        self.sets[set].key = StreamKey::retired_after_sync(next_retirement_number());
                        self.join_the_set_waiting_for_sync(set);
                        if self.sets[set].key.waits_for_sync() {
                            // It is the set that waits now.
                            continue;
                        }
                    }
                }
            }
            self.sets[set] = StreamSet::new(StreamKey::UNUSED, None);
        }
    }

    /// Sets of free lists in use: those of streams (private and published, empty or not), and
    /// those of retired streams and fresh memory that hold free memory.
    pub fn sets_in_use(&self) -> usize {
        self.sets.iter().filter(|s| s.key.is_stream() || s.free_bytes > 0).count()
    }

    /// Free bytes that only a synchronisation of everything can hand to a stream: the blocks of
    /// streams that were replaced without a capture of their work.
    pub fn free_bytes_waiting_for_sync(&self) -> usize {
        self.sets.iter().filter(|s| s.key.waits_for_sync()).map(|s| s.free_bytes).sum()
    }

    /// Free bytes in the lists of `set` (its cache included).
    pub fn free_bytes_of(&self, set: SetId) -> usize {
        self.sets[set].free_bytes
    }

    /// Free bytes in the private set of `key` (0 without one).
    pub fn free_bytes_of_key(&self, key: StreamKey) -> usize {
        self.private_set(key).map_or(0, |set| self.sets[set].free_bytes)
    }

    /// A set's place among the others, for `check_invariants`.
    pub(super) fn check_set_links(&self) -> Result<(), String> {
        for (i, s) in self.set_ids().zip(&self.sets) {
            let describe = || format!("set {i} ({:#x})", s.key);
            if s.key == StreamKey::UNUSED || s.key.is_retired() || s.key.is_sealed() {
                if s.published_by.is_some() || s.publishes_to.is_some() || s.wanted {
                    return Err(format!("{} is unused or retired but linked or wanted", describe()));
                }
                if s.key == StreamKey::UNUSED && s.free_bytes != 0 {
                    return Err(format!("{} is unused but holds {} free bytes", describe(), s.free_bytes));
                }
                if !s.key.is_sealed() && s.sealed_from.is_some() {
                    return Err(format!("{} is not sealed but names where its blocks came from", describe()));
                }
                if s.cache_len.iter().any(|&n| n != 0) {
                    return Err(format!("{} is unused or retired but caches blocks", describe()));
                }
            }
            if let Some(p) = s.publishes_to {
                let back = self.sets[p].published_by;
                if back != Some(i) || self.sets[p].key != s.key {
                    return Err(format!(
                        "{} names set {p} as its published set, which does not name it back",
                        describe()
                    ));
                }
            }
            if let Some(p) = s.published_by {
                if self.sets[p].publishes_to != Some(i) {
                    return Err(format!(
                        "{} names set {p} as its private set, which does not name it back",
                        describe()
                    ));
                }
            }
        }
        Ok(())
    }
}
