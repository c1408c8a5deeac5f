//! Which shard of a sharded pool serves which stream.
//!
//! Every stream starts on shard 0, so a program that allocates from one thread keeps all its free
//! memory in one place, where blocks of all streams coalesce. A stream whose call found shard 0's
//! lock taken by another thread is moved ([`ShardMap::spread`]) to a shard of its own, dealt
//! round-robin, so that up to `shards - 1` contending streams (typically one per thread) never
//! share a lock again; a hash would put two of eight streams on one shard more often than not.
//! Lookups are lock-free: one probe of an open-addressing table whose keys, once written, never
//! change.
//!
//! Threads that share one stream meet on its shard's lock just as threads of different streams
//! meet on shard 0's: a thread whose call found its stream's own shard busy gets a shard of its
//! own for that stream ([`ShardMap::spread_thread`]). Each shard keeps the stream's blocks in its
//! own set for the stream, which any thread of the stream may take from without a wait.

use super::stream_order::{current_thread_number, StreamKey};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Table size; at most half of it is filled, later streams stay on shard 0.
const ENTRIES: usize = 1024;
const EMPTY: usize = 0;
/// Marks, in `shard_of`, a stream whose threads may have shards of their own.
const PER_THREAD: usize = 1 << (usize::BITS - 1);

/// Maps stream keys to shard numbers in `0..shards`.
pub struct ShardMap {
    shards: usize,
    /// `key + 1` of each spread stream (0 marks an empty entry), written once.
    keys: Box<[AtomicUsize]>,
    /// The shard of the entry with the same index, written before its key.
    shard_of: Box<[AtomicUsize]>,
    /// False until a stream is spread: until then every lookup is one load.
    any_spread: AtomicBool,
    /// True once a stream or a thread was dealt a shard other than 0 (a capture is not).
    dealt: AtomicBool,
    /// Entries in use; changed only under the lock.
    used: Mutex<usize>,
    /// The tag and former shard of each stream marked as capturing (see [`ShardMap::capture`]).
    captured: Mutex<Vec<(usize, usize)>>,
}

impl ShardMap {
    /// A map over `shards` shards (at least one).
    pub fn new(shards: usize) -> Self {
        ShardMap {
            shards: shards.max(1),
            keys: (0..ENTRIES).map(|_| AtomicUsize::new(EMPTY)).collect(),
            shard_of: (0..ENTRIES).map(|_| AtomicUsize::new(0)).collect(),
            any_spread: AtomicBool::new(false),
            dealt: AtomicBool::new(false),
            used: Mutex::new(0),
            captured: Mutex::new(Vec::new()),
        }
    }

    /// Where the search for `tag` starts.
    #[inline]
    fn slot(tag: usize) -> usize {
        (tag.wrapping_sub(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) & (ENTRIES - 1)
    }

    /// The tag under which the calling thread's own shard for `key` is entered: a mix of the
    /// two that no real stream key is likely to equal (one that did would only share a shard).
    #[inline]
    fn thread_tag(key: StreamKey) -> usize {
        let thread = current_thread_number().wrapping_mul(0xD6E8_FEB8_6659_FD93);
        (key.shard_word() ^ thread.rotate_left(17)) | 1
    }

    /// The shard that serves `key` for the calling thread: 0 unless it was spread. A stream being
    /// spread by another thread at this moment may still be told its old shard once; which shard
    /// serves a call is a matter of speed only.
    #[inline]
    pub fn shard(&self, key: StreamKey) -> usize {
        if !self.any_spread.load(Ordering::Relaxed) {
            return 0;
        }
        let shard = self.lookup(key.shard_word().wrapping_add(1)).unwrap_or(0);
        if shard & PER_THREAD == 0 {
            return shard;
        }
        self.thread_shard(key, shard & !PER_THREAD)
    }

    /// The calling thread's own shard for `key`, else the stream's `shard`. The flag is masked:
    /// a thread's tag that happened to equal a flagged stream's tag must still name a shard. A
    /// capturing stream has no flag: it goes to the capture shard from every thread.
    #[inline(never)]
    fn thread_shard(&self, key: StreamKey, shard: usize) -> usize {
        self.lookup(Self::thread_tag(key)).map_or(shard, |s| s & !PER_THREAD)
    }

    /// The shard number of streams marked as capturing: one past the last shard. A pool keeps an
    /// empty shard there, which serves no call, so its fast paths send a capturing stream's calls
    /// to their cold paths without a test of their own.
    pub fn capture_shard(&self) -> usize {
        self.shards
    }

    /// Marks `key` as capturing: from now on [`shard`](Self::shard) returns
    /// [`capture_shard`](Self::capture_shard) for it, from every thread, until
    /// [`end_capture`](Self::end_capture). False when the table is half full and `key` has no
    /// entry yet (then it cannot be marked).
    #[cold]
    pub fn capture(&self, key: StreamKey) -> bool {
        let tag = key.shard_word().wrapping_add(1);
        if tag == EMPTY {
            return false;
        }
        let mut used = self.used.lock();
        let mut captured = self.captured.lock();
        if captured.iter().any(|&(t, _)| t == tag) {
            return true;
        }
        let i = match self.probe(tag) {
            Ok(i) => i,
            Err(i) => {
                if *used >= ENTRIES / 2 {
                    return false;
                }
                // An entry that keeps the stream where it was (shard 0).
                self.shard_of[i].store(0, Ordering::Relaxed);
                self.keys[i].store(tag, Ordering::Release);
                *used += 1;
                i
            }
        };
        captured.push((tag, self.shard_of[i].load(Ordering::Relaxed)));
        self.shard_of[i].store(self.shards, Ordering::Release);
        self.any_spread.store(true, Ordering::Release);
        true
    }

    /// Clears the mark of [`capture`](Self::capture): `key` goes back to the shard it had.
    #[cold]
    pub fn end_capture(&self, key: StreamKey) {
        let tag = key.shard_word().wrapping_add(1);
        let _used = self.used.lock();
        let mut captured = self.captured.lock();
        let Some(at) = captured.iter().position(|&(t, _)| t == tag) else {
            return;
        };
        let (_, former) = captured.swap_remove(at);
        if let Ok(i) = self.probe(tag) {
            self.shard_of[i].store(former, Ordering::Release);
        }
    }

    /// The shard entered under `tag`, with its flag.
    #[inline]
    fn lookup(&self, tag: usize) -> Option<usize> {
        self.probe(tag).ok().map(|i| self.shard_of[i].load(Ordering::Relaxed))
    }

    /// The index of the entry of `tag`, or of the empty entry where it would go. The table is at
    /// most half full, so the probe ends.
    #[inline]
    fn probe(&self, tag: usize) -> Result<usize, usize> {
        let mut i = Self::slot(tag);
        loop {
            match self.keys[i].load(Ordering::Acquire) {
                EMPTY => return Err(i),
                k if k == tag => return Ok(i),
                _ => i = (i + 1) & (ENTRIES - 1),
            }
        }
    }

    /// Moves `key` from shard 0 to a shard of its own (dealt round-robin over `1..shards`); called
    /// when a call on `key` found shard 0 busy. A stream is moved at most once; once the table is
    /// half full, further streams stay on shard 0.
    #[cold]
    pub fn spread(&self, key: StreamKey) {
        let tag = key.shard_word().wrapping_add(1);
        if self.shards == 1 || tag == EMPTY {
            return;
        }
        let mut used = self.used.lock();
        self.enter(&mut used, tag);
    }

    /// Gives the calling thread a shard of its own for `key` (dealt round-robin as streams are);
    /// called when a call on `key` found the stream's own shard busy, with another thread of the
    /// stream or another stream dealt the same shard. At most once per thread and stream.
    #[cold]
    pub fn spread_thread(&self, key: StreamKey) {
        let tag = key.shard_word().wrapping_add(1);
        if self.shards == 1 || tag == EMPTY {
            return;
        }
        let mut used = self.used.lock();
        let Ok(stream_entry) = self.probe(tag) else {
            // Not spread yet (a stale read of shard 0): spread the stream first.
            self.enter(&mut used, tag);
            return;
        };
        if self.shard_of[stream_entry].load(Ordering::Relaxed) == self.shards {
            // Capturing: every thread of the stream stays on the capture shard.
            return;
        }
        if self.enter(&mut used, Self::thread_tag(key)) {
            // Set after the thread's entry, so a reader that sees the flag finds it.
            self.shard_of[stream_entry].fetch_or(PER_THREAD, Ordering::Release);
        }
    }

    /// Enters `tag` with the next shard of the round; false when it was entered before or the
    /// table is half full. The caller holds the lock (`used`).
    fn enter(&self, used: &mut usize, tag: usize) -> bool {
        if *used >= ENTRIES / 2 {
            return false;
        }
        let Err(i) = self.probe(tag) else {
            return false;
        };
        self.shard_of[i].store(1 + *used % (self.shards - 1), Ordering::Relaxed);
        // Release: a reader that sees the key also sees its shard.
        self.keys[i].store(tag, Ordering::Release);
        *used += 1;
        self.dealt.store(true, Ordering::Relaxed);
        self.any_spread.store(true, Ordering::Release);
        true
    }

    /// Whether any key may be in the map (a stream or thread dealt a shard, a capture marked):
    /// until then [`shard`](Self::shard) is 0 for every key, without a look.
    #[inline(always)]
    pub fn any_spread(&self) -> bool {
        self.any_spread.load(Ordering::Relaxed)
    }

    /// Whether any stream or thread has been dealt a shard of its own: until then shard 0 handed
    /// out every block but those of captures.
    pub fn dealt_any(&self) -> bool {
        self.dealt.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_start_together_and_spread_round_robin_once() {
        let m = ShardMap::new(4);
        let keys: Vec<StreamKey> = (1..=7).map(|i| StreamKey::of_handle(i * 0x1000)).collect();
        assert!(keys.iter().all(|&k| m.shard(k) == 0));
        for &k in &keys {
            m.spread(k);
            m.spread(k);
        }
        let spread: Vec<usize> = keys.iter().map(|&k| m.shard(k)).collect();
        assert_eq!(spread, vec![1, 2, 3, 1, 2, 3, 1]);
        assert_eq!(m.shard(StreamKey::of_handle(usize::MAX)), m.shard(StreamKey::of_handle(usize::MAX)));
        assert_eq!(m.shard(StreamKey::of_handle(0x99_000)), 0, "a stream never spread stays on shard 0");
        let one = ShardMap::new(1);
        one.spread(keys[0]);
        assert_eq!(one.shard(keys[0]), 0);
    }

    #[test]
    fn threads_of_one_stream_spread_to_shards_of_their_own() {
        let m = ShardMap::new(8);
        let key = StreamKey::of_handle(0x5000);
        m.spread(key);
        let stream_shard = m.shard(key);
        assert_eq!(stream_shard, 1);
        let m = std::sync::Arc::new(m);
        let spread: Vec<(usize, usize)> = (0..3)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    let before = m.shard(key);
                    m.spread_thread(key);
                    m.spread_thread(key);
                    (before, m.shard(key))
                })
                .join()
                .unwrap()
            })
            .collect();
        // Each thread first shares the stream's shard, then has the next one of the round.
        assert_eq!(spread, vec![(1, 2), (1, 3), (1, 4)]);
        // A thread not spread still goes to the stream's shard; so does another stream's lookup.
        assert_eq!(
            std::thread::spawn({
                let m = m.clone();
                move || m.shard(key)
            })
            .join()
            .unwrap(),
            1
        );
        assert_eq!(m.shard(StreamKey::of_handle(0x6000)), 0);
        // A thread whose stream was never spread spreads the stream first.
        let other = StreamKey::of_handle(0x9000);
        m.spread_thread(other);
        assert_eq!(m.shard(other), 5);
    }

    #[test]
    fn a_capturing_stream_is_marked_past_every_shard_until_its_capture_ends() {
        let m = ShardMap::new(4);
        let (a, b, c) = (StreamKey::of_handle(0x1000), StreamKey::of_handle(0x2000), StreamKey::of_handle(0x3000));
        m.spread(b);
        assert!(m.capture(a) && m.capture(b) && m.capture(b));
        assert_eq!((m.shard(a), m.shard(b), m.shard(c)), (4, 4, 0));
        // Spreading while capturing keeps the mark; so does a thread spread for the stream.
        m.spread(a);
        m.spread_thread(b);
        assert_eq!((m.shard(a), m.shard(b)), (4, 4));
        m.end_capture(a);
        m.end_capture(b);
        m.end_capture(c);
        assert_eq!((m.shard(a), m.shard(b), m.shard(c)), (0, 1, 0));
    }

    #[test]
    fn a_full_table_leaves_later_streams_on_shard_0() {
        let m = ShardMap::new(8);
        for i in 0..2 * ENTRIES {
            m.spread(StreamKey::of_handle(i << 3));
        }
        let spread = (0..2 * ENTRIES).filter(|&i| m.shard(StreamKey::of_handle(i << 3)) != 0).count();
        assert_eq!(spread, ENTRIES / 2);
        assert!((0..2 * ENTRIES).all(|i| m.shard(StreamKey::of_handle(i << 3)) < 8));
    }
}
