//! The pool's shards: each an allocator state under its own lock, the map that deals streams to
//! them, and the map of which shard holds which range of addresses (see [`Shards`]).

use parking_lot::RwLock;
use rmm_algorithms::{CoalescingPool, RawSpinLock, SegmentMap, ShardMap, SpinMutex, StreamKey};
use std::sync::{Arc, Weak};

/// A locked shard: its allocator state.
pub(super) type ShardGuard<'a> = parking_lot::lock_api::MutexGuard<'a, RawSpinLock, CoalescingPool>;

/// One shard's allocator state, on a cache line pair of its own so that shards used by different
/// threads do not share a line.
#[repr(align(128))]
pub(super) struct Shard(SpinMutex<CoalescingPool>);

impl Shard {
    /// Locks the shard, waiting while another thread holds it.
    #[inline(always)]
    pub(super) fn lock(&self) -> ShardGuard<'_> {
        self.0.lock()
    }
}

/// The shards of a pool, the streams' homes among them and the owner of each range.
///
/// Streams share shard 0 until a call finds it busy with another thread; that stream is then
/// dealt a shard of its own (see [`lock_home`](Self::lock_home)). One more shard, past the real
/// ones, never holds memory: the shard map sends streams marked as capturing there, so that their
/// fast paths find nothing and take the cold path to the capture's memory.
///
/// # Invariants
/// - Every range a real shard's allocator tiles is assigned to that shard in the segment map, and
///   the segment map assigns each real shard exactly the bytes its allocator tiles; ranges of a
///   capture's memory are assigned to an owner past every shard.
/// - The capture shard holds no memory.
/// - Locks are taken one shard at a time, or every real shard in index order with no other lock
///   held; the segment map's lock is taken after a shard's, never before.
pub(super) struct Shards {
    shards: Arc<[Shard]>,
    map: ShardMap,
    /// Which shard owns which range: for frees on a stream of another shard.
    segments: RwLock<SegmentMap>,
    /// Ranges adopted join the shard's chunks that they touch (a pool over one reserved range
    /// mapped in place), rather than making chunks of their own.
    joined: bool,
}

impl Shards {
    /// `count` empty shards (1 to 256) and the capture shard; adopted ranges join those they touch
    /// where `joined`.
    pub(super) fn new(count: usize, joined: bool) -> Self {
        Shards {
            shards: (0..=count).map(|_| Shard(SpinMutex::new(CoalescingPool::new()))).collect(),
            map: ShardMap::new(count),
            segments: RwLock::new(SegmentMap::new()),
            joined,
        }
    }

    /// The shards, for a listener that must not keep them alive (retiring streams).
    pub(super) fn weak(&self) -> Weak<[Shard]> {
        Arc::downgrade(&self.shards)
    }

    /// The map that deals streams to shards (and marks capturing streams).
    pub(super) fn map(&self) -> &ShardMap {
        &self.map
    }

    /// The shards that hold memory: all but the empty capture shard at the end.
    #[inline]
    pub(super) fn real(&self) -> &[Shard] {
        &self.shards[..self.shards.len() - 1]
    }

    /// Every shard, the capture shard included.
    pub(super) fn all(&self) -> &[Shard] {
        &self.shards
    }

    /// The home shard of `key`: the capture shard for a stream marked as capturing.
    #[inline(always)]
    pub(super) fn home(&self, key: StreamKey) -> usize {
        self.map.shard(key)
    }

    /// Whether `home`, a shard number from the shard map or the segment map, is the capture
    /// shard or the mark of a capture's chunk.
    #[inline(always)]
    pub(super) fn is_capture_home(&self, home: usize) -> bool {
        home >= self.map.capture_shard()
    }

    /// Locks shard `i`, waiting while another thread holds it.
    #[inline(always)]
    pub(super) fn lock(&self, i: usize) -> ShardGuard<'_> {
        self.shards[i].0.lock()
    }

    /// Locks shard `i` if no other thread holds it.
    #[inline(always)]
    pub(super) fn try_lock(&self, i: usize) -> Option<ShardGuard<'_>> {
        self.shards[i].0.try_lock()
    }

    /// Locks shard 0 if no other thread holds it; without a bounds check that could panic.
    #[inline(always)]
    pub(super) fn try_lock_first(&self) -> Option<ShardGuard<'_>> {
        self.shards.first()?.0.try_lock()
    }

    /// Locks every real shard, in index order (the caller holds no other lock, so no two threads
    /// deadlock).
    pub(super) fn lock_real(&self) -> Vec<ShardGuard<'_>> {
        self.real().iter().map(Shard::lock).collect()
    }

    /// Locks the home shard of `key`; a stream that finds the shared shard 0 busy gets a shard of
    /// its own from its next call on, and a thread that finds its stream's shard busy (another
    /// thread of the stream, or another stream dealt the same shard) one of its own for the stream.
    #[inline(always)]
    pub(super) fn lock_home(&self, home: usize, key: StreamKey) -> ShardGuard<'_> {
        match self.shards[home].0.try_lock() {
            Some(guard) => guard,
            None => self.lock_contended(home, key),
        }
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self, home: usize, key: StreamKey) -> ShardGuard<'_> {
        if home == 0 {
            self.map.spread(key);
        } else {
            self.map.spread_thread(key);
        }
        self.shards[home].0.lock()
    }

    /// Makes `[addr, addr + len)` part of `shard` (whose lock the caller holds as `core`), free
    /// on `owner`'s set; where adopted ranges join, joined to the shard's chunks that it touches.
    pub(super) fn adopt(&self, shard: usize, core: &mut CoalescingPool, addr: usize, len: usize, owner: StreamKey) {
        let set = core.set_of(owner);
        if self.joined {
            core.attach(addr, len, set);
        } else {
            core.add_chunk(addr, len, set);
        }
        self.segments.write().assign(addr, len, shard);
    }

    /// The owner of the range holding `ptr`: a shard, or a mark past every shard.
    pub(super) fn owner(&self, ptr: usize) -> Option<usize> {
        self.segments.read().owner(ptr)
    }

    /// Assigns `[addr, addr + len)` to `owner` without a shard's allocator (a capture's chunk).
    pub(super) fn assign(&self, addr: usize, len: usize, owner: usize) {
        self.segments.write().assign(addr, len, owner);
    }

    /// Forgets `[addr, addr + len)`, taken out of every shard and gone from the pool.
    pub(super) fn remove(&self, addr: usize, len: usize) {
        self.segments.write().remove(addr, len);
    }

    /// Free bytes and the largest free block over every real shard, one lock at a time.
    pub(super) fn free(&self) -> (usize, usize) {
        let (mut free, mut largest) = (0, 0);
        for shard in self.real() {
            let s = shard.lock().state();
            free += s.free_bytes;
            largest = largest.max(s.largest_free_block);
        }
        (free, largest)
    }

    /// Whether some shard has a stream asked to publish its free blocks.
    pub(super) fn any_wanted(&self) -> bool {
        self.shards.iter().any(|shard| shard.lock().has_wanted())
    }

    /// Checks each shard's allocator and the invariants above; the bytes the shards tile.
    pub(super) fn check_invariants(&self) -> Result<usize, String> {
        // One lock at a time (shard locks are taken before the segment map's elsewhere).
        let mut tiled = Vec::with_capacity(self.shards.len());
        for (i, shard) in self.shards.iter().enumerate() {
            let core = shard.lock();
            core.check_invariants().map_err(|e| format!("shard {i}: {e}"))?;
            tiled.push(core.pool_size());
        }
        let segments = self.segments.read();
        for (i, &bytes) in tiled.iter().enumerate() {
            if segments.bytes_of(i) != bytes {
                return Err(format!(
                    "shard {i} tiles {bytes} bytes but owns {} in the segment map",
                    segments.bytes_of(i)
                ));
            }
        }
        if tiled.last() != Some(&0) {
            return Err("the capture shard holds memory".into());
        }
        Ok(tiled.iter().sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmm_algorithms::GRANULE;

    const MIB: usize = 1 << 20;

    #[test]
    fn adopted_ranges_are_found_in_their_shard() {
        let shards = Shards::new(4, false);
        assert_eq!((shards.real().len(), shards.all().len()), (4, 5));
        shards.adopt(1, &mut shards.lock(1), 16 * MIB, MIB, StreamKey::FRESH);
        shards.adopt(2, &mut shards.lock(2), 32 * MIB, 2 * MIB, StreamKey::FRESH);
        assert_eq!(shards.owner(16 * MIB + 4096), Some(1));
        assert_eq!(shards.owner(33 * MIB), Some(2));
        assert_eq!(shards.owner(8 * MIB), None);
        assert_eq!(shards.check_invariants(), Ok(3 * MIB));
        assert_eq!(shards.free(), (3 * MIB, 2 * MIB));
        // A range leaves the shard and the segment map together.
        let taken = shards.lock(2).detach_free_granules(GRANULE, usize::MAX, |_| true);
        assert_eq!(taken, vec![(32 * MIB, 2 * MIB)]);
        shards.remove(32 * MIB, 2 * MIB);
        assert_eq!(shards.check_invariants(), Ok(MIB));
    }

    #[test]
    fn a_range_in_the_segment_map_but_not_in_its_shard_breaks_the_invariants() {
        let shards = Shards::new(2, false);
        shards.adopt(0, &mut shards.lock(0), 16 * MIB, MIB, StreamKey::FRESH);
        shards.assign(32 * MIB, MIB, 1);
        assert!(shards.check_invariants().is_err());
    }

    #[test]
    fn joined_ranges_make_one_free_block() {
        let shards = Shards::new(1, true);
        shards.adopt(0, &mut shards.lock(0), 16 * MIB, MIB, StreamKey::FRESH);
        shards.adopt(0, &mut shards.lock(0), 17 * MIB, MIB, StreamKey::FRESH);
        assert_eq!(shards.free(), (2 * MIB, 2 * MIB));
        assert_eq!(shards.check_invariants(), Ok(2 * MIB));
    }

    #[test]
    fn a_stream_that_finds_shard_0_busy_is_dealt_a_shard_of_its_own() {
        let shards = Shards::new(4, false);
        let key = StreamKey::of_handle(0x1000);
        assert_eq!(shards.home(key), 0);
        let busy = shards.lock(0);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                drop(shards.lock_home(0, key));
            });
            while shards.home(key) == 0 {
                std::thread::yield_now();
            }
            drop(busy);
            waiter.join().unwrap();
        });
        let home = shards.home(key);
        assert!(home != 0 && !shards.is_capture_home(home), "dealt shard {home}");
        assert!(shards.map().dealt_any());
    }

    #[test]
    fn the_capture_shard_is_past_the_real_ones() {
        let shards = Shards::new(3, false);
        let key = StreamKey::of_handle(0x2000);
        assert!(shards.map().capture(key));
        assert!(shards.is_capture_home(shards.home(key)));
        assert!(shards.is_capture_home(usize::MAX >> 1), "a capture chunk's owner");
        shards.map().end_capture(key);
        assert!(!shards.is_capture_home(shards.home(key)));
    }
}
