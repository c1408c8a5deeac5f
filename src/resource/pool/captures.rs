//! The bookkeeping of CUDA graph captures: which streams are marked as capturing, and the memory
//! private to each capture (see [`Captures`]). How the pool serves a capturing stream, and why, is
//! told in `capture.rs`.

use crate::error::{Error, Misuse, Result};
use parking_lot::Mutex;
use rmm_algorithms::{BlockView, CoalescingPool, SetId, ShardMap, StreamKey, GRANULE};
use std::sync::atomic::{AtomicUsize, Ordering};

/// One capture's memory for the pool's segments: its id, the chunks it took from the upstream,
/// the blocks of its memory.
pub(super) type CaptureWalk = (u64, Vec<(usize, usize)>, Vec<BlockView>);

/// What a released capture leaves to the pool: the chunks it took from the upstream (start,
/// bytes asked), and the blocks of the shared memory freed during it (start, bytes).
pub(super) struct Released {
    /// The capture's chunks, all free.
    pub chunks: Vec<(usize, usize)>,
    /// Blocks of the shards freed during the capture, kept out of use until now.
    pub freed: Vec<(usize, usize)>,
}

/// The streams marked as capturing and the private memory of every capture the pool has served
/// and not yet released.
///
/// # Invariants
/// - Each stream is marked at most once, for one capture, both here and in the shard map (whose
///   capture mark sends its calls to the capture shard); every capture a stream is marked for
///   has its memory here.
/// - [`marked_any`](Self::marked_any) is read without the lock: its count equals the number of
///   marked streams whenever the lock is free.
/// - Each capture's memory tiles exactly the 256-byte multiples of the chunks it took, and holds
///   nothing of another capture or of the shards; a capture with a marked stream or a live block
///   is never released.
pub(super) struct Captures {
    state: Mutex<State>,
    /// How many streams are marked as capturing: read without the lock by the stream identity
    /// checks, which must not ask the driver about a capturing stream.
    marked: AtomicUsize,
}

/// What the lock of [`Captures`] guards.
#[derive(Default)]
struct State {
    pools: Vec<CapturePool>,
    /// Streams marked as capturing in the shard map, with the capture they were marked for.
    streams: Vec<(StreamKey, u64)>,
}

impl State {
    /// The index of capture `id`'s memory, made empty if it has none yet.
    fn pool_index(&mut self, id: u64) -> usize {
        match self.pools.iter().position(|p| p.id == id) {
            Some(i) => i,
            None => {
                self.pools.push(CapturePool::new(id));
                self.pools.len() - 1
            }
        }
    }
}

/// The memory of one capture.
struct CapturePool {
    id: u64,
    core: CoalescingPool,
    set: SetId,
    /// Chunks taken from the upstream for this capture (start, bytes).
    chunks: Vec<(usize, usize)>,
    /// Blocks of the shards freed during the capture (start, bytes): kept until the release.
    adopted: Vec<(usize, usize)>,
}

impl CapturePool {
    fn new(id: u64) -> Self {
        let mut core = CoalescingPool::new();
        let set = core.set_of(StreamKey::FRESH);
        CapturePool { id, core, set, chunks: Vec::new(), adopted: Vec::new() }
    }

    /// Bytes taken from the upstream for this capture.
    fn bytes(&self) -> usize {
        self.chunks.iter().map(|&(_, size)| size).sum()
    }

    fn holds(&self, ptr: usize) -> bool {
        self.chunks.iter().any(|&(a, s)| ptr >= a && ptr < a + s)
    }
}

impl Captures {
    /// No stream marked, no capture's memory.
    pub(super) fn new() -> Self {
        Captures { state: Mutex::new(State::default()), marked: AtomicUsize::new(0) }
    }

    /// Whether some stream may be marked as capturing, read without the lock.
    #[inline]
    pub(super) fn marked_any(&self) -> bool {
        self.marked.load(Ordering::Acquire) != 0
    }

    /// Whether some stream is marked as capturing (under the lock).
    pub(super) fn in_progress(&self) -> bool {
        !self.state.lock().streams.is_empty()
    }

    /// Marks `key` as capturing into `id`, here and in `shard_map`; an error where the shard map
    /// cannot mark one more stream.
    pub(super) fn mark(&self, shard_map: &ShardMap, key: StreamKey, id: u64) -> Result<()> {
        let mut state = self.state.lock();
        if !shard_map.capture(key) {
            return Err(Error::InvalidArgument("the pool cannot mark one more capturing stream".into()));
        }
        state.streams.retain(|&(k, _)| k != key);
        state.streams.push((key, id));
        self.marked.store(state.streams.len(), Ordering::Release);
        state.pool_index(id);
        Ok(())
    }

    /// Clears the capture mark of `key`, here and in `shard_map`.
    pub(super) fn unmark(&self, shard_map: &ShardMap, key: StreamKey) {
        let mut state = self.state.lock();
        state.streams.retain(|&(k, _)| k != key);
        self.marked.store(state.streams.len(), Ordering::Release);
        shard_map.end_capture(key);
    }

    /// A block of capture `id`'s memory; where none fits, `grow(needed)` takes a chunk (start,
    /// bytes asked) for it first, under the lock. `Ok(None)` only if the chunk does not hold it.
    pub(super) fn allocate(
        &self,
        id: u64,
        bytes: usize,
        size: usize,
        align: usize,
        grow: impl FnOnce(usize) -> Result<(usize, usize)>,
    ) -> Result<Option<usize>> {
        let mut state = self.state.lock();
        let i = state.pool_index(id);
        let pool = &mut state.pools[i];
        if let Some(a) = pool.core.allocate(pool.set, bytes, size, align) {
            return Ok(Some(a));
        }
        let needed = size + (align - GRANULE);
        let (addr, len) = grow(needed)?;
        pool.chunks.push((addr, len));
        pool.core.add_chunk(addr, len & !(GRANULE - 1), pool.set);
        let a = pool.core.allocate(pool.set, bytes, size, align);
        debug_assert!(a.is_some(), "a chunk of {len} bytes holds {needed}");
        Ok(a)
    }

    /// Frees a block of some capture's private memory back into it, whichever stream frees it.
    pub(super) fn deallocate(&self, ptr: usize, bytes: usize) -> Result<()> {
        let mut state = self.state.lock();
        let Some(pool) = state.pools.iter_mut().find(|p| p.holds(ptr)) else {
            return Err(Error::Misuse(Misuse::UnknownPointer { ptr }));
        };
        let set = pool.set;
        pool.core.deallocate(ptr, bytes, set).map_err(Error::Misuse)
    }

    /// Keeps a block of the shared memory freed during capture `id` out of use until the release:
    /// the graph may use it at each replay. A second free of it is a misuse.
    pub(super) fn keep_freed(&self, id: u64, ptr: usize, bytes: usize) -> Result<()> {
        let mut state = self.state.lock();
        let i = state.pool_index(id);
        let pool = &mut state.pools[i];
        if pool.adopted.iter().any(|&(p, _)| p == ptr) {
            return Err(Error::Misuse(Misuse::DoubleFree { ptr }));
        }
        pool.adopted.push((ptr, bytes));
        Ok(())
    }

    /// Takes capture `id`'s memory out, for the pool to hand to every stream. An error, with
    /// nothing changed, while a stream is marked as capturing into `id`, while blocks the capture
    /// allocated are live, or for an unknown `id`.
    pub(super) fn release(&self, id: u64) -> Result<Released> {
        let mut state = self.state.lock();
        if state.streams.iter().any(|&(_, c)| c == id) {
            return Err(Error::InvalidArgument(format!("capture {id} is still marked on a stream: end it first")));
        }
        let Some(i) = state.pools.iter().position(|p| p.id == id) else {
            return Err(Error::InvalidArgument(format!("no private memory of capture {id}")));
        };
        let live = state.pools[i].core.allocated_count();
        if live > 0 {
            return Err(Error::InvalidArgument(format!(
                "capture {id} still has {live} live blocks: free them before the release"
            )));
        }
        let pool = state.pools.swap_remove(i);
        Ok(Released { chunks: pool.chunks, freed: pool.adopted })
    }

    /// Ids of the captures whose private memory is kept.
    pub(super) fn ids(&self) -> Vec<u64> {
        self.state.lock().pools.iter().map(|p| p.id).collect()
    }

    /// Bytes taken from the upstream for capture `id` (0 for an unknown one).
    pub(super) fn pool_size(&self, id: u64) -> usize {
        self.state.lock().pools.iter().find(|p| p.id == id).map_or(0, CapturePool::bytes)
    }

    /// Every chunk taken for captures (start, bytes asked), for the pool's drop.
    pub(super) fn take_chunks(&mut self) -> Vec<(usize, usize)> {
        self.state.get_mut().pools.iter_mut().flat_map(|p| std::mem::take(&mut p.chunks)).collect()
    }

    /// Each capture's id, the chunks it took from the upstream, and the blocks of its memory
    /// (those of shard blocks freed during the capture included), for the pool's segments.
    pub(super) fn walk(&self) -> Vec<CaptureWalk> {
        self.state
            .lock()
            .pools
            .iter()
            .map(|p| {
                let blocks = p.core.walk_chunks().into_iter().flat_map(|(_, _, blocks)| blocks).collect();
                (p.id, p.chunks.clone(), blocks)
            })
            .collect()
    }

    /// Checks the invariants above, and returns the bytes taken from the upstream for captures.
    pub(super) fn check_invariants(&self) -> std::result::Result<usize, String> {
        let state = self.state.lock();
        if self.marked.load(Ordering::Acquire) != state.streams.len() {
            return Err(format!(
                "{} streams marked, counted {}",
                state.streams.len(),
                self.marked.load(Ordering::Acquire)
            ));
        }
        for (i, &(key, id)) in state.streams.iter().enumerate() {
            if state.streams[..i].iter().any(|&(k, _)| k == key) {
                return Err(format!("stream {key:?} marked twice"));
            }
            if !state.pools.iter().any(|p| p.id == id) {
                return Err(format!("stream {key:?} marked for capture {id}, which has no memory"));
            }
        }
        for p in &state.pools {
            p.core.check_invariants().map_err(|e| format!("capture {}: {e}", p.id))?;
            let usable: usize = p.chunks.iter().map(|&(_, s)| s & !(GRANULE - 1)).sum();
            if p.core.pool_size() != usable {
                return Err(format!("capture {} tiles {} bytes of {usable}", p.id, p.core.pool_size()));
            }
        }
        Ok(state.pools.iter().map(CapturePool::bytes).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHUNK: usize = 1 << 16;

    /// A chunk of addresses for a capture: never dereferenced, so any disjoint range does.
    fn chunks_from(next: &std::cell::Cell<usize>) -> impl Fn(usize) -> Result<(usize, usize)> + '_ {
        move |needed| {
            let len = needed.max(CHUNK);
            let addr = next.get();
            next.set(addr + len.next_multiple_of(CHUNK));
            Ok((addr, len))
        }
    }

    #[test]
    fn marks_are_counted_and_cleared() {
        let (map, c) = (ShardMap::new(4), Captures::new());
        let (a, b) = (StreamKey::of_handle(0x10), StreamKey::of_handle(0x20));
        c.mark(&map, a, 1).unwrap();
        c.mark(&map, b, 1).unwrap();
        c.mark(&map, a, 2).unwrap();
        assert!(c.marked_any() && c.in_progress());
        assert_eq!(map.shard(a), map.capture_shard());
        assert_eq!(c.check_invariants(), Ok(0));
        c.unmark(&map, a);
        c.unmark(&map, b);
        assert!(!c.marked_any() && !c.in_progress());
        assert_ne!(map.shard(a), map.capture_shard());
        assert_eq!(c.ids(), vec![1, 2]);
        assert_eq!(c.check_invariants(), Ok(0));
    }

    #[test]
    fn a_capture_grows_reuses_and_is_released_when_idle() {
        let (map, c, next) = (ShardMap::new(2), Captures::new(), std::cell::Cell::new(1 << 30));
        let key = StreamKey::of_handle(0x10);
        c.mark(&map, key, 7).unwrap();
        let a = c.allocate(7, 1000, 1024, GRANULE, chunks_from(&next)).unwrap().unwrap();
        let b = c.allocate(7, 1000, 1024, GRANULE, |_| panic!("fits")).unwrap().unwrap();
        assert_ne!(a, b);
        assert_eq!(c.pool_size(7), CHUNK);
        assert_eq!(c.check_invariants(), Ok(CHUNK));
        assert!(c.release(7).is_err(), "still marked");
        c.unmark(&map, key);
        c.deallocate(a, 1000).unwrap();
        assert!(c.release(7).is_err(), "a live block");
        c.deallocate(b, 1000).unwrap();
        assert!(matches!(c.deallocate(0x42, 8), Err(Error::Misuse(_))));
        c.keep_freed(7, 0x5000, 256).unwrap();
        assert!(matches!(c.keep_freed(7, 0x5000, 256), Err(Error::Misuse(Misuse::DoubleFree { .. }))));
        let released = c.release(7).unwrap();
        assert_eq!(released.chunks, vec![(1 << 30, CHUNK)]);
        assert_eq!(released.freed, vec![(0x5000, 256)]);
        assert!(c.release(7).is_err(), "unknown now");
        assert_eq!(c.check_invariants(), Ok(0));
    }

    #[test]
    fn each_capture_keeps_its_own_memory() {
        let (c, next) = (Captures::new(), std::cell::Cell::new(1 << 30));
        let a = c.allocate(1, 256, 256, GRANULE, chunks_from(&next)).unwrap().unwrap();
        let b = c.allocate(2, 256, 256, GRANULE, chunks_from(&next)).unwrap().unwrap();
        assert!(b >= a + CHUNK, "a chunk of its own");
        assert_eq!(c.check_invariants(), Ok(2 * CHUNK));
        let mut c = c;
        assert_eq!(c.take_chunks().len(), 2);
    }
}
