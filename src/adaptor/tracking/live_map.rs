//! The tracking adaptor's record of live blocks: a map from address to allocation, split into
//! shards by address region, with the count of outstanding bytes kept per shard and summed when
//! read.
//!
//! With one lock for the whole map, 8 threads through statistics → tracking → pool took over
//! 1 µs per operation on an H200 host; a count of bytes in one atomic still moved one cache line
//! between cores on every call. With 64 shards chosen by a hash of each block's address, every
//! thread touched every shard, so nearly every call found its shard's lock and table on another
//! core's cache lines: 40 ns per operation at 8 threads on an H100 against the pool's 10.
//!
//! So a shard is chosen by the 1 MiB region the block starts in, the region number modulo
//! [`SHARDS`]: consecutive regions go to consecutive shards, and no two regions within
//! `SHARDS` MiB of each other share one. A pool hands each stream ranges of at least 1 MiB
//! (its shard's segments), so threads on their own streams allocate and free in regions of their
//! own, and each finds its shards' locks and tables in its own cache. Another resource's blocks
//! (`cudaMalloc`'s, a host heap's per-thread arenas) are spread the same way.
//!
//! Per-thread tables were the other way: an allocation would be recorded in its thread's table
//! without a lock anyone else takes. But the adaptor must refuse an address it already holds
//! (an upstream that hands one out twice), and a free from another thread must find its block:
//! both would look through every thread's table, under their locks, on every allocation. With
//! shards by address, both are one lookup in the one shard that can hold the address, whichever
//! thread asks.

use rmm_algorithms::SpinMutex;
use std::backtrace::Backtrace;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// What is kept of one live allocation.
#[derive(Debug)]
pub(super) struct Record {
    pub bytes: usize,
    pub alignment: usize,
    pub stack: Option<Arc<Backtrace>>,
}

/// A record as its shard's table holds it: the stack, when there is one, is kept beside the
/// table, so that the table's slots stay three words and plain data.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Entry {
    pub bytes: usize,
    pub alignment: usize,
}

/// A shard's map from block address to entry.
pub(super) type AddressMap = super::address_table::AddressTable<Entry>;

/// Shards of the map: a power of two. 1024 shards of 128 bytes each keep 1 GiB of consecutive
/// regions apart; their tables take memory only once they hold a block.
const SHARDS: usize = 1024;

/// log2 of the region size: blocks that start in the same 1 MiB go to the same shard.
const REGION_SHIFT: u32 = 20;

/// One shard: its blocks and the sum of their sizes, changed together under its lock.
#[derive(Debug, Default)]
pub(super) struct ShardState {
    pub live: AddressMap,
    bytes: usize,
    /// The stacks of the live blocks that have one (only where the adaptor captures stacks).
    stacks: HashMap<usize, Arc<Backtrace>>,
}

impl ShardState {
    /// Records `rec` at `addr`; false (nothing changed) where `addr` is live already.
    #[inline]
    fn insert(&mut self, addr: usize, rec: Record) -> bool {
        let fresh = self.live.insert(addr, Entry { bytes: rec.bytes, alignment: rec.alignment });
        if fresh {
            self.bytes += rec.bytes;
            if let Some(stack) = rec.stack {
                self.stacks.insert(addr, stack);
            }
        }
        fresh
    }

    /// Takes the record of the block at `addr` out of the shard, with its bytes.
    #[inline]
    pub fn remove(&mut self, addr: usize) -> Option<Record> {
        let e = self.live.remove(addr)?;
        self.bytes -= e.bytes;
        let stack = if self.stacks.is_empty() { None } else { self.stacks.remove(&addr) };
        Some(Record { bytes: e.bytes, alignment: e.alignment, stack })
    }
}

/// A shard on cache lines of its own.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Shard(SpinMutex<ShardState>);

/// The shard of the block at `addr`: its region number modulo [`SHARDS`].
#[inline]
fn shard_index(addr: usize) -> usize {
    (addr >> REGION_SHIFT) & (SHARDS - 1)
}

/// The live blocks and the bytes outstanding.
///
/// The bytes outstanding are the live blocks' sizes less a `deficit`: what frees of pointers that
/// were never tracked took off (RMM lowers its count by their size too), never more than there
/// was, so that the count stops at zero. The deficit is almost always 0; while it is not, every
/// change to the count locks all shards, to keep it exact.
///
/// A query visits only the shards that ever held a block (`used`, one bit a shard, set before a
/// shard's first insert and never cleared): a program's blocks usually lie in a few dozen regions,
/// and locking all 1024 shards for every `allocated_bytes` would cost microseconds.
#[derive(Debug)]
pub(super) struct LiveMap {
    shards: Box<[Shard; SHARDS]>,
    used: UsedShards,
    deficit: AtomicUsize,
}

/// Bit i: shard i has held a block. On cache lines of their own, written once per shard, so that
/// the inserts' test of their bit reads a line no one writes.
#[repr(align(128))]
#[derive(Debug, Default)]
struct UsedShards([AtomicU64; SHARDS / 64]);

impl LiveMap {
    /// An empty map.
    pub fn new() -> Self {
        let shards: Box<[Shard]> = (0..SHARDS).map(|_| Shard::default()).collect();
        let Ok(shards) = shards.try_into() else { unreachable!("SHARDS shards were made") };
        // Shard 0 counts as used from the start, so that every `lock_all` takes its lock: the
        // deficit's writers exclude each other even before (or while) a first shard is marked.
        let used = UsedShards::default();
        used.0[0].store(1, Ordering::Relaxed);
        LiveMap { shards, used, deficit: AtomicUsize::new(0) }
    }

    /// The shard of the block at `addr`, locked.
    #[inline]
    pub fn lock(&self, addr: usize) -> parking_lot::lock_api::MutexGuard<'_, rmm_algorithms::RawSpinLock, ShardState> {
        self.shards[shard_index(addr)].0.lock()
    }

    /// The shard of the block at `addr`, if its lock is free.
    #[inline]
    pub fn try_lock(
        &self,
        addr: usize,
    ) -> Option<parking_lot::lock_api::MutexGuard<'_, rmm_algorithms::RawSpinLock, ShardState>> {
        self.shards[shard_index(addr)].0.try_lock()
    }

    /// Records `rec` at `addr`; false (nothing changed) where `addr` is live already.
    #[inline]
    pub fn insert(&self, addr: usize, rec: Record) -> bool {
        let i = shard_index(addr);
        let (word, bit) = (&self.used.0[i / 64], 1u64 << (i % 64));
        // Marked before the block goes in: a query that happens after this insert (at a quiescent
        // point, say) sees the mark and so visits the shard.
        if word.load(Ordering::Acquire) & bit == 0 {
            word.fetch_or(bit, Ordering::AcqRel);
        }
        self.shards[i].0.lock().insert(addr, rec)
    }

    /// Takes the record of the block at `addr` out; with what it took off a deficit (to give back
    /// with [`restore`](Self::restore)).
    #[inline]
    pub fn remove(&self, addr: usize) -> Option<(Record, usize)> {
        let e = self.lock(addr).remove(addr)?;
        Some((e, self.settle_deficit()))
    }

    /// After a block left a shard: a deficit larger than the live bytes now left shrinks to them.
    /// Returns by how much.
    #[inline]
    pub fn settle_deficit(&self) -> usize {
        if self.deficit.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        self.settle_deficit_slow()
    }

    #[cold]
    #[inline(never)]
    fn settle_deficit_slow(&self) -> usize {
        let guards = self.lock_all();
        let live: usize = guards.iter().map(|g| g.bytes).sum();
        let deficit = self.deficit.load(Ordering::Relaxed);
        let cut = deficit.saturating_sub(live);
        self.deficit.store(deficit - cut, Ordering::Relaxed);
        cut
    }

    /// A free of a pointer that is not live: lowers the bytes outstanding by `bytes`, stopping at
    /// zero. Returns by how much, and the number of live blocks.
    pub fn take_untracked(&self, bytes: usize) -> (usize, usize) {
        let guards = self.lock_all();
        let live: usize = guards.iter().map(|g| g.bytes).sum();
        let count = guards.iter().map(|g| g.live.len()).sum();
        let deficit = self.deficit.load(Ordering::Relaxed);
        let taken = bytes.min(live.saturating_sub(deficit));
        self.deficit.store(deficit + taken, Ordering::Relaxed);
        (taken, count)
    }

    /// Undoes a free the upstream refused: the record (if it was live) goes back, and the bytes
    /// outstanding are as before (`deficit_change`: what [`remove`](Self::remove) cut off the
    /// deficit, or minus what [`take_untracked`](Self::take_untracked) took).
    pub fn restore(&self, addr: usize, rec: Option<Record>, deficit_change: isize) {
        if let Some(rec) = rec {
            self.insert(addr, rec);
        }
        if deficit_change != 0 {
            let _guards = self.lock_all();
            let d = self.deficit.load(Ordering::Relaxed) as isize + deficit_change;
            self.deficit.store(d.max(0) as usize, Ordering::Relaxed);
        }
    }

    /// Bytes outstanding.
    pub fn bytes(&self) -> usize {
        let guards = self.lock_all();
        let live: usize = guards.iter().map(|g| g.bytes).sum();
        live.saturating_sub(self.deficit.load(Ordering::Relaxed))
    }

    /// Number of live blocks.
    pub fn count(&self) -> usize {
        self.used_shards().map(|s| s.0.lock().live.len()).sum()
    }

    /// Calls `f` on every live block, shard by shard.
    pub fn for_each(&self, mut f: impl FnMut(usize, &Entry, Option<&Arc<Backtrace>>)) {
        for shard in self.used_shards() {
            let shard = shard.0.lock();
            for (addr, e) in shard.live.iter() {
                f(addr, e, shard.stacks.get(&addr));
            }
        }
    }

    /// The shards that have held a block, in index order.
    fn used_shards(&self) -> impl Iterator<Item = &Shard> {
        self.used.0.iter().enumerate().flat_map(move |(w, word)| {
            let mut bits = word.load(Ordering::Acquire);
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    &self.shards[w * 64 + b]
                })
            })
        })
    }

    /// Every shard that has held a block locked (shard 0 always among them), in index order (the
    /// only order two threads ever lock several in); the others hold nothing.
    fn lock_all(&self) -> Vec<parking_lot::lock_api::MutexGuard<'_, rmm_algorithms::RawSpinLock, ShardState>> {
        self.used_shards().map(|s| s.0.lock()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(bytes: usize) -> Record {
        Record { bytes, alignment: 256, stack: None }
    }

    #[test]
    fn untracked_frees_stop_the_count_at_zero_and_later_blocks_count_in_full() {
        let m = LiveMap::new();
        assert_eq!(m.take_untracked(5), (0, 0));
        assert!(m.insert(0x1000, rec(5)));
        assert_eq!(m.bytes(), 5, "a deficit never exceeds what was live");
        assert_eq!(m.take_untracked(3), (3, 1));
        assert_eq!(m.bytes(), 2);
        // The block leaves: the count would go below zero, so it stops there.
        let (_, cut) = m.remove(0x1000).unwrap();
        assert_eq!((m.bytes(), cut), (0, 3));
        assert!(m.insert(0x2000, rec(7)));
        assert_eq!(m.bytes(), 7);
    }

    /// Queries visit only the shards that held a block, and miss none: blocks in regions 1 GiB
    /// apart (one shard), in neighbouring regions, and at the top of the address space.
    #[test]
    fn queries_see_every_shard_that_held_a_block() {
        let m = LiveMap::new();
        let addrs = [0x1000, 0x4000_1000, 0x10_0000, 0x3ff0_0000, usize::MAX - (1 << 20) + 1];
        for (i, &a) in addrs.iter().enumerate() {
            assert!(m.insert(a, rec(i + 1)));
        }
        assert_eq!((m.count(), m.bytes()), (5, 15));
        assert_eq!(m.used_shards().count(), 3, "shards 0, 1 and 1023");
        let mut seen = Vec::new();
        m.for_each(|a, e, _| seen.push((a, e.bytes)));
        seen.sort_unstable();
        let mut want: Vec<_> = addrs.iter().enumerate().map(|(i, &a)| (a, i + 1)).collect();
        want.sort_unstable();
        assert_eq!(seen, want);
        for a in addrs {
            m.remove(a).unwrap();
        }
        assert_eq!((m.count(), m.bytes()), (0, 0));
    }

    #[test]
    fn restore_undoes_a_refused_free() {
        let m = LiveMap::new();
        assert!(m.insert(0x1000, rec(10)));
        assert!(m.insert(0x1100, rec(4)));
        let (taken, count) = m.take_untracked(6);
        assert_eq!((taken, count, m.bytes()), (6, 2, 8));
        m.restore(0, None, -(taken as isize));
        assert_eq!(m.bytes(), 14);
        let (e, cut) = m.remove(0x1000).unwrap();
        assert_eq!((m.bytes(), cut), (4, 0));
        m.restore(0x1000, Some(e), cut as isize);
        assert_eq!((m.bytes(), m.count()), (14, 2));
        assert!(!m.insert(0x1000, rec(1)), "a live address is refused");
    }
}
