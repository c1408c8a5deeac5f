//! Which shard of a sharded pool serves which stream.
//!
//! Every stream starts on shard 0, so a program that allocates from one thread keeps all its free
//! memory in one place, where blocks of all streams coalesce. A stream whose call found shard 0's
//! lock taken by another thread is moved ([`ShardMap::spread`]) to a shard of its own, dealt
//! round-robin, so that up to `shards - 1` contending streams (typically one per thread) never
//! share a lock again; a hash would put two of eight streams on one shard more often than not.
//! Lookups are lock-free: one probe of an open-addressing table whose keys, once written, never
//! change.

use super::stream_order::StreamKey;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Table size; at most half of it is filled, later streams stay on shard 0.
const ENTRIES: usize = 1024;
const EMPTY: usize = 0;

/// Maps stream keys to shard numbers in `0..shards`.
pub struct ShardMap {
    shards: usize,
    /// `key + 1` of each spread stream (0 marks an empty entry), written once.
    keys: Box<[AtomicUsize]>,
    /// The shard of the entry with the same index, written before its key.
    shard_of: Box<[AtomicUsize]>,
    /// False until a stream is spread: until then every lookup is one load.
    any_spread: AtomicBool,
    /// Entries in use; changed only under the lock.
    used: Mutex<usize>,
}

impl ShardMap {
    /// A map over `shards` shards (at least one).
    pub fn new(shards: usize) -> Self {
        ShardMap {
            shards: shards.max(1),
            keys: (0..ENTRIES).map(|_| AtomicUsize::new(EMPTY)).collect(),
            shard_of: (0..ENTRIES).map(|_| AtomicUsize::new(0)).collect(),
            any_spread: AtomicBool::new(false),
            used: Mutex::new(0),
        }
    }

    #[inline]
    fn home(key: StreamKey) -> usize {
        (key.packed().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) & (ENTRIES - 1)
    }

    /// The shard of `key`: 0 unless it was spread. A stream being spread by another thread at
    /// this moment may still be told 0 once; which shard serves a call is a matter of speed only.
    #[inline]
    pub fn shard(&self, key: StreamKey) -> usize {
        if !self.any_spread.load(Ordering::Relaxed) {
            return 0;
        }
        self.lookup(key)
    }

    fn lookup(&self, key: StreamKey) -> usize {
        let tag = key.packed().wrapping_add(1);
        let mut i = Self::home(key);
        for _ in 0..ENTRIES {
            match self.keys[i].load(Ordering::Acquire) {
                EMPTY => return 0,
                k if k == tag => return self.shard_of[i].load(Ordering::Relaxed),
                _ => i = (i + 1) & (ENTRIES - 1),
            }
        }
        0
    }

    /// Moves `key` from shard 0 to a shard of its own (dealt round-robin over `1..shards`); called
    /// when a call on `key` found shard 0 busy. A stream is moved at most once; once the table is
    /// half full, further streams stay on shard 0.
    #[cold]
    pub fn spread(&self, key: StreamKey) {
        let tag = key.packed().wrapping_add(1);
        if self.shards == 1 || tag == EMPTY {
            return;
        }
        let mut used = self.used.lock();
        if *used >= ENTRIES / 2 {
            return;
        }
        let mut i = Self::home(key);
        loop {
            match self.keys[i].load(Ordering::Relaxed) {
                EMPTY => break,
                k if k == tag => return,
                _ => i = (i + 1) & (ENTRIES - 1),
            }
        }
        self.shard_of[i].store(1 + *used % (self.shards - 1), Ordering::Relaxed);
        // Release: a reader that sees the key also sees its shard.
        self.keys[i].store(tag, Ordering::Release);
        *used += 1;
        self.any_spread.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_start_together_and_spread_round_robin_once() {
        let m = ShardMap::new(4);
        let keys: Vec<StreamKey> = (1..=7).map(|i| StreamKey(i * 0x1000)).collect();
        assert!(keys.iter().all(|&k| m.shard(k) == 0));
        for &k in &keys {
            m.spread(k);
            m.spread(k);
        }
        let spread: Vec<usize> = keys.iter().map(|&k| m.shard(k)).collect();
        assert_eq!(spread, vec![1, 2, 3, 1, 2, 3, 1]);
        assert_eq!(m.shard(StreamKey(usize::MAX)), m.shard(StreamKey(usize::MAX)));
        assert_eq!(m.shard(StreamKey(0x99_000)), 0, "a stream never spread stays on shard 0");
        let one = ShardMap::new(1);
        one.spread(keys[0]);
        assert_eq!(one.shard(keys[0]), 0);
    }

    #[test]
    fn a_full_table_leaves_later_streams_on_shard_0() {
        let m = ShardMap::new(8);
        for i in 0..2 * ENTRIES {
            m.spread(StreamKey(i << 3));
        }
        let spread = (0..2 * ENTRIES).filter(|&i| m.shard(StreamKey(i << 3)) != 0).count();
        assert_eq!(spread, ENTRIES / 2);
        assert!((0..2 * ENTRIES).all(|i| m.shard(StreamKey(i << 3)) < 8));
    }
}
