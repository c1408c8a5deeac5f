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
use std::sync::atomic::{AtomicUsize, Ordering};

/// Table size; at most half of it is filled, later streams fall back to a hash.
const ENTRIES: usize = 1024;
const EMPTY: usize = 0;

/// Maps stream keys to shard numbers in `0..shards`.
pub struct ShardMap {
    shards: usize,
    /// `key + 1` (0 marks an empty entry), written once.
    keys: Box<[AtomicUsize]>,
    /// The shard of the entry with the same index: 0 until the stream is spread.
    shard_of: Box<[AtomicUsize]>,
    /// Entries in use and how many streams were spread; changed only under the lock.
    dealing: Mutex<(usize, usize)>,
}

impl ShardMap {
    /// A map dealing streams to `shards` shards (at least one).
    pub fn new(shards: usize) -> Self {
        ShardMap {
            shards: shards.max(1),
            keys: (0..ENTRIES).map(|_| AtomicUsize::new(EMPTY)).collect(),
            shard_of: (0..ENTRIES).map(|_| AtomicUsize::new(0)).collect(),
            dealing: Mutex::new((0, 0)),
        }
    }

    /// Number of shards.
    pub fn shards(&self) -> usize {
        self.shards
    }

    #[inline]
    fn home(key: StreamKey) -> usize {
        (key.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) & (ENTRIES - 1)
    }

    /// The shard of `key` (0 on first use).
    #[inline]
    pub fn shard(&self, key: StreamKey) -> usize {
        if self.shards == 1 {
            return 0;
        }
        let tag = key.0.wrapping_add(1);
        let mut i = Self::home(key);
        for _ in 0..ENTRIES {
            match self.keys[i].load(Ordering::Acquire) {
                k if k == tag && tag != EMPTY => return self.shard_of[i].load(Ordering::Relaxed),
                EMPTY => return self.deal(key),
                _ => i = (i + 1) & (ENTRIES - 1),
            }
        }
        self.fallback(key)
    }

    #[cold]
    fn deal(&self, key: StreamKey) -> usize {
        let tag = key.0.wrapping_add(1);
        let mut dealing = self.dealing.lock();
        let (used, spread) = *dealing;
        if tag == EMPTY || used >= ENTRIES / 2 {
            return self.fallback(key);
        }
        let mut i = Self::home(key);
        loop {
            let k = self.keys[i].load(Ordering::Relaxed);
            if k == tag {
                // Dealt by another thread between our probe and the lock.
                return self.shard_of[i].load(Ordering::Relaxed);
            }
            if k == EMPTY {
                break;
            }
            i = (i + 1) & (ENTRIES - 1);
        }
        self.shard_of[i].store(0, Ordering::Relaxed);
        // Release: a reader that sees the key also sees its shard.
        self.keys[i].store(tag, Ordering::Release);
        *dealing = (used + 1, spread);
        0
    }

    /// Moves `key` from shard 0 to a shard of its own (dealt round-robin over `1..shards`); called
    /// when a call on `key` found shard 0 busy. A stream is moved at most once; streams past the
    /// table's capacity keep their hashed shard.
    #[cold]
    pub fn spread(&self, key: StreamKey) {
        if self.shards == 1 {
            return;
        }
        let tag = key.0.wrapping_add(1);
        let mut dealing = self.dealing.lock();
        let mut i = Self::home(key);
        for _ in 0..ENTRIES {
            match self.keys[i].load(Ordering::Relaxed) {
                k if k == tag && tag != EMPTY => {
                    if self.shard_of[i].load(Ordering::Relaxed) == 0 {
                        let (used, spread) = *dealing;
                        self.shard_of[i].store(1 + spread % (self.shards - 1), Ordering::Relaxed);
                        *dealing = (used, spread + 1);
                    }
                    return;
                }
                EMPTY => return,
                _ => i = (i + 1) & (ENTRIES - 1),
            }
        }
    }

    #[cold]
    fn fallback(&self, key: StreamKey) -> usize {
        Self::home(key) % self.shards
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
        assert_eq!(
            m.shard(StreamKey(usize::MAX)),
            m.shard(StreamKey(usize::MAX))
        );
        m.spread(StreamKey(0x99_000));
        assert_eq!(
            m.shard(StreamKey(0x99_000)),
            0,
            "an unknown stream is not spread"
        );
        let one = ShardMap::new(1);
        one.spread(keys[0]);
        assert_eq!(one.shard(keys[0]), 0);
    }

    #[test]
    fn a_full_table_falls_back_to_a_hash() {
        let m = ShardMap::new(8);
        for i in 0..2 * ENTRIES {
            let s = m.shard(StreamKey(i << 3));
            assert!(s < 8);
            assert_eq!(m.shard(StreamKey(i << 3)), s);
        }
    }
}
