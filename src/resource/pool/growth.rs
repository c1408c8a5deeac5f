//! The pool's growth: the chunks it took from its upstream, its size, its maximum and the rule that
//! sizes the next chunk (see [`Growth`]). Where a request does not fit in the room left under a
//! maximum, wholly free chunks are given back first, as RMM's pool does before it grows: see
//! `release.rs`, which finds them in the shards and gives them back through this type.

use crate::error::{Error, Result};
use crate::resource::upstream_check::{allocate_chunk, give_back_chunk, give_back_chunks};
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use parking_lot::Mutex;
use rmm_algorithms::{StreamOrder, GRANULE, MAX_BLOCK_BYTES};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Below [`GEOMETRIC_FROM`], a shard grows by at least the smaller of the pool size and this. With
/// one shard in use this changes nothing: the pool doubles.
const SHARD_START: usize = 4 << 20;

/// Up to this size the pool doubles as it grows, as RMM's does; from here on it grows by an eighth
/// of its size (or what the request needs, if more), with or without a maximum.
/// - Doubling keeps the newest chunk half the pool, so a block a quarter of the pool or more still
///   finds room in a chunk of its own making. The allocation logs of the two-GPU Dask benchmark
///   (per worker 3.5–3.8 GiB live at the peak, 16 MiB blocks, then 1 GiB gathers) replayed from
///   a 256 MiB pool end at 4 GiB under this rule, as RMM's pool does; growing by an eighth from
///   1 GiB they ended at 3.9–4.25 GiB, from 2 GiB at 3.85–4.2: a gather that fits no chunk of a
///   pool grown in eighths takes a chunk of its own.
/// - Doubling a large pool leaves it far larger than its use: replaying the allocations of a
///   PyTorch training run (300 steps of a 6-layer transformer, 7.6 GiB live at the peak) from an
///   empty pool, doubling ends at 11.3 GiB (1.47 times the peak), growing by an eighth past
///   1 GiB at 8.2 GiB (1.08), below PyTorch's own caching allocator (10.1 GiB reserved).
///
/// Under a maximum the pool follows RMM instead (half the remaining room), so that a capped pool
/// fails and succeeds where RMM's does.
const GEOMETRIC_FROM: usize = 4 << 30;

/// What a shard grows by at least while other streams are yet to publish fitting free blocks.
/// Chosen by replaying three four-stream logs (`rmm_replay --upstream host-ordered`): 2 MiB gave
/// the lowest peak on two of them; 0, 512 KiB, 1 MiB and 4 MiB were up to 1.6 times higher.
const PENDING_GROWTH: usize = 2 << 20;

/// `n` rounded up to the granule.
fn granule_ceil(n: usize) -> usize {
    n.saturating_add(GRANULE - 1) & !(GRANULE - 1)
}

/// Whether the pool treats `e`, an error of its upstream's `allocate`, as a refusal: it asks for
/// less, and once `needed` itself is refused it fails with its own out-of-memory error quoting
/// `e`, as RMM's pool does with every exception of its upstream (`try_to_expand` catches
/// `std::exception`): an out-of-memory error, a CUDA error of an allocating call
/// ([`Error::CudaAlloc`]), a missing driver, a callback's exception alike. Only
/// [`Error::BadUpstream`] is passed on unchanged: the check of what an upstream handed back,
/// which RMM does not make, names a broken upstream that no smaller request would mend.
pub(super) fn backs_off_from(e: &Error) -> bool {
    !matches!(e, Error::BadUpstream(_))
}

/// What one attempt to take a chunk from the upstream came to.
pub(super) enum Taken {
    /// A new chunk `(start, bytes asked)`, listed among the pool's chunks and counted in its size.
    Chunk(usize, usize),
    /// The room left below the maximum is smaller than what was needed.
    NoRoom,
    /// The upstream refused the smallest size tried, with this error.
    Refused(Error),
}

/// The memory a pool took from its upstream, and how it takes more.
///
/// The pool's size is reserved before the upstream is asked, so that shards growing at once never
/// pass the maximum together; a refused request gives its reservation back.
///
/// # Invariants
/// - `size` is the sum of the listed chunks' sizes, plus the bytes of chunks kept elsewhere (the
///   private memory of CUDA graph captures), plus reservations whose upstream call is under way.
/// - Under a maximum, `size` never passes the maximum rounded up to the granule: each reservation
///   fits in the room left ([`room`](Self::room)).
/// - Listed chunks are disjoint; each was handed out by the upstream (or mapped in place) and is
///   given back to it once, by [`give_back`](Self::give_back) or when the pool is dropped.
pub(super) struct Growth<U> {
    upstream: U,
    /// What was taken from the upstream (start → size), given back on drop.
    chunks: Mutex<Vec<(usize, usize)>>,
    /// Bytes taken from the upstream (see the invariants).
    size: AtomicUsize,
    maximum: Option<usize>,
}

impl<U: MemoryResource> Growth<U> {
    /// No memory taken from `upstream` yet, at most `maximum` bytes (unbounded when `None`).
    pub(super) fn new(upstream: U, maximum: Option<usize>) -> Self {
        Growth { upstream, chunks: Mutex::new(Vec::new()), size: AtomicUsize::new(0), maximum }
    }

    /// The upstream resource.
    pub(super) fn upstream(&self) -> &U {
        &self.upstream
    }

    /// Bytes taken from the upstream.
    #[inline]
    pub(super) fn size(&self) -> usize {
        self.size.load(Ordering::Relaxed)
    }

    /// The maximum pool size, if one was set.
    pub(super) fn maximum(&self) -> Option<usize> {
        self.maximum
    }

    /// Takes the pool's first chunk, exactly `bytes`, on the default stream; the upstream's error
    /// unchanged where it refuses.
    pub(super) fn take_initial(&self, bytes: usize) -> Result<usize> {
        let ptr = allocate_chunk(&self.upstream, bytes, GRANULE, CudaStreamView::DEFAULT)?;
        self.size.fetch_add(bytes, Ordering::Relaxed);
        self.chunks.lock().push((ptr as usize, bytes));
        Ok(ptr as usize)
    }

    /// Takes a chunk of at least `needed` bytes from the upstream on `stream`, within `relax`
    /// (which relaxes the thread's capture mode where it can); when none could be had, says
    /// whether the room below the maximum was too small or the upstream refused (with its error).
    /// `shard_size` is the growing shard's size, `pending` whether other streams have been asked
    /// to publish fitting blocks. Its size:
    /// - under a maximum, RMM's rule: the larger of `needed` and half the room left below the
    ///   maximum (that room rounded up to 256 bytes, its half not rounded again);
    /// - without one, the larger of `needed` and the shard's current size while the pool is below
    ///   [`GEOMETRIC_FROM`] (a single-shard pool doubles; see [`SHARD_START`]), then the larger of
    ///   `needed` and an eighth of the pool. While other streams have been asked to publish fitting
    ///   blocks (`pending`), the shard takes only what this request needs: those blocks will serve
    ///   the next ones, and doubling now would leave the pool far larger than its use (RMM, which
    ///   records an event on every free, never has to wait for them).
    ///
    /// While the upstream refuses (see [`backs_off_from`]) the size halves toward `needed` (as in
    /// RMM), and fails once `needed` itself is refused. A chunk whose size is not a multiple of 256 (as RMM's can
    /// be) is asked for and given back whole; the pool hands out its 256-byte multiple.
    pub(super) fn take_chunk(
        &self,
        needed: usize,
        shard_size: usize,
        pending: bool,
        stream: CudaStreamView,
        relax: impl Fn(&dyn Fn() -> Result<*mut u8>) -> Result<*mut u8>,
    ) -> Result<Taken> {
        let room = self.room();
        if needed > room {
            return Ok(Taken::NoRoom);
        }
        let capped = self.maximum.is_some();
        let mut want = if capped { needed.max(room / 2) } else { self.unbounded_growth(shard_size, needed, pending) }
            .min(room.min(MAX_BLOCK_BYTES));
        loop {
            if !self.reserve(want) {
                // Another shard grew meanwhile; try again within what is left.
                let room = self.room();
                if needed > room {
                    return Ok(Taken::NoRoom);
                }
                want = want.min(room).max(needed);
                continue;
            }
            match relax(&|| allocate_chunk(&self.upstream, want, GRANULE, stream)) {
                Ok(ptr) => {
                    self.chunks.lock().push((ptr as usize, want));
                    return Ok(Taken::Chunk(ptr as usize, want));
                }
                Err(e) => {
                    self.unreserve(want);
                    if !backs_off_from(&e) {
                        return Err(e);
                    }
                    if want == needed {
                        // Kept for the pool's own refusal, which quotes it as RMM's does.
                        return Ok(Taken::Refused(e));
                    }
                    // Not rounded to 256 bytes, as in RMM: the chunk's tail is never handed out.
                    want = (want / 2).max(needed);
                }
            }
        }
    }

    /// A chunk of exactly `want` bytes, reserved first, that the caller keeps apart from the
    /// listed chunks (a capture's private memory), taken on `stream` within `relax`; `None`
    /// where `want` does not fit in the room left.
    pub(super) fn take_unlisted(
        &self,
        want: usize,
        stream: CudaStreamView,
        relax: impl FnOnce(&dyn Fn() -> Result<*mut u8>) -> Result<*mut u8>,
    ) -> Result<Option<usize>> {
        if !self.reserve(want) {
            return Ok(None);
        }
        match relax(&|| allocate_chunk(&self.upstream, want, GRANULE, stream)) {
            Ok(ptr) => Ok(Some(ptr as usize)),
            Err(e) => {
                self.unreserve(want);
                Err(e)
            }
        }
    }

    /// The chunk size to ask for without a maximum (see [`take_chunk`](Self::take_chunk)).
    fn unbounded_growth(&self, shard_size: usize, needed: usize, pending: bool) -> usize {
        let pool_size = self.size();
        let want = if pool_size < GEOMETRIC_FROM {
            // A shard that is new to growing starts from part of the whole pool, not from zero:
            // tiny chunks would cost one upstream call each.
            needed.max(shard_size).max(pool_size.min(SHARD_START))
        } else {
            needed.max((pool_size / 8) & !(GRANULE - 1))
        };
        if pending {
            want.min(needed.max(PENDING_GROWTH))
        } else {
            want
        }
    }

    /// Bytes the pool may still take from the upstream: under a maximum, as RMM counts them, the
    /// room below it rounded up to 256 bytes.
    pub(super) fn room(&self) -> usize {
        self.maximum.map_or(MAX_BLOCK_BYTES, |max| granule_ceil(max.saturating_sub(self.size())))
    }

    /// Adds `bytes` to the pool size unless they pass the room left (see [`room`](Self::room)).
    pub(super) fn reserve(&self, bytes: usize) -> bool {
        let max = self.maximum;
        self.size
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| match max {
                Some(max) => (bytes <= granule_ceil(max.saturating_sub(s))).then(|| s + bytes),
                None => s.checked_add(bytes),
            })
            .is_ok()
    }

    /// Takes back a reservation of `bytes` whose upstream call failed.
    fn unreserve(&self, bytes: usize) {
        self.size.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Counts `bytes` mapped in place, kept apart from the listed chunks (a capture's).
    pub(super) fn count_unlisted(&self, bytes: usize) {
        self.size.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Lists and counts `[addr, addr + len)`, mapped in place by the pool's reserved range.
    pub(super) fn add_mapped(&self, addr: usize, len: usize) {
        self.size.fetch_add(len, Ordering::Relaxed);
        self.chunks.lock().push((addr, len));
    }

    /// Lists chunks counted already but kept apart until now (a released capture's).
    pub(super) fn list(&self, chunks: &[(usize, usize)]) {
        self.chunks.lock().extend_from_slice(chunks);
    }

    /// Every listed chunk, lowest address first.
    pub(super) fn chunks(&self) -> Vec<(usize, usize)> {
        let mut chunks = self.chunks.lock().clone();
        chunks.sort_unstable();
        chunks
    }

    /// Where each listed chunk starts.
    pub(super) fn starts(&self) -> Vec<usize> {
        self.chunks.lock().iter().map(|&(a, _)| a).collect()
    }

    /// Bytes of the listed chunks past their last 256-byte multiple: never handed out.
    pub(super) fn tails(&self) -> usize {
        self.chunks.lock().iter().map(|&(_, size)| size & (GRANULE - 1)).sum()
    }

    /// Bytes of the listed chunks, and the part of them the pool hands out (their 256-byte
    /// multiples), for the pool's invariants.
    pub(super) fn listed_bytes(&self) -> (usize, usize) {
        let chunks = self.chunks.lock();
        (chunks.iter().map(|&(_, s)| s).sum(), chunks.iter().map(|&(_, s)| s & !(GRANULE - 1)).sum())
    }

    /// Gives the listed chunk `(addr, size)` back to the upstream on the default stream; it leaves
    /// the list and the pool's size. An error, with the chunk kept, where the upstream refuses.
    pub(super) fn give_back(&self, addr: usize, size: usize) -> Result<()> {
        give_back_chunk(&self.upstream, addr as *mut u8, size, GRANULE, CudaStreamView::DEFAULT)?;
        self.chunks.lock().retain(|&(a, _)| a != addr);
        self.size.fetch_sub(size, Ordering::Relaxed);
        Ok(())
    }

    /// Forgets `[addr, addr + len)`, unmapped in place: it leaves the pool's size, and the listed
    /// chunks around it are cut.
    pub(super) fn forget_range(&self, addr: usize, len: usize) {
        let end = addr + len;
        self.size.fetch_sub(len, Ordering::Relaxed);
        let mut chunks = self.chunks.lock();
        let mut kept = Vec::with_capacity(chunks.len() + 1);
        for &(a, s) in chunks.iter() {
            let e = a + s;
            if e <= addr || end <= a {
                kept.push((a, s));
                continue;
            }
            if a < addr {
                kept.push((a, addr - a));
            }
            if end < e {
                kept.push((end, e - end));
            }
        }
        *chunks = kept;
    }

    /// What the pool's drop does: waits through `order` for work that may still use the memory,
    /// then gives every listed chunk and those of `more` back to the upstream.
    pub(super) fn give_back_all(&mut self, order: &dyn StreamOrder, more: Vec<(usize, usize)>) {
        let mut chunks = std::mem::take(self.chunks.get_mut());
        chunks.extend(more);
        give_back_chunks(&self.upstream, order, GRANULE, || chunks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::HostMemoryResource;

    /// Host memory that refuses what would pass `limit` bytes outstanding.
    struct Limited {
        inner: HostMemoryResource,
        limit: usize,
        used: AtomicUsize,
    }

    // SAFETY: blocks come from a `HostMemoryResource` unchanged and go back to it; host memory, as
    // the answer below says.
    unsafe impl MemoryResource for Limited {
        fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
            if self.used.load(Ordering::Relaxed).saturating_add(bytes) > self.limit {
                return Err(Error::out_of_memory(bytes, "over the test's limit"));
            }
            let p = self.inner.allocate(bytes, alignment, stream)?;
            self.used.fetch_add(bytes, Ordering::Relaxed);
            Ok(p)
        }
        fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
            self.used.fetch_sub(bytes, Ordering::Relaxed);
            self.inner.deallocate(ptr, bytes, alignment, stream)
        }
        fn is_device_accessible(&self) -> bool {
            false
        }
    }

    const S: CudaStreamView = CudaStreamView::DEFAULT;

    fn direct(f: &dyn Fn() -> Result<*mut u8>) -> Result<*mut u8> {
        f()
    }

    fn limited(limit: usize, maximum: Option<usize>) -> Growth<Limited> {
        Growth::new(Limited { inner: HostMemoryResource::new(), limit, used: AtomicUsize::new(0) }, maximum)
    }

    /// Checks the invariants that hold between calls: the size is what the list holds (no
    /// reservation under way, nothing kept apart) and within the maximum.
    fn check<V: MemoryResource>(g: &Growth<V>) {
        let (listed, usable) = g.listed_bytes();
        assert_eq!(g.size(), listed);
        assert!(usable <= listed && listed - usable < GRANULE * g.chunks().len().max(1));
        if let Some(max) = g.maximum() {
            assert!(g.size() <= granule_ceil(max));
        }
        let chunks = g.chunks();
        assert!(chunks.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0), "disjoint: {chunks:?}");
    }

    fn chunk(t: Taken) -> (usize, usize) {
        match t {
            Taken::Chunk(a, s) => (a, s),
            Taken::NoRoom => panic!("no room"),
            Taken::Refused(e) => panic!("refused: {e}"),
        }
    }

    fn give_back_everything<V: MemoryResource>(g: &Growth<V>) {
        for (a, s) in g.chunks() {
            g.give_back(a, s).unwrap();
        }
        assert_eq!(g.size(), 0);
    }

    #[test]
    fn under_a_maximum_it_takes_half_the_room_left() {
        let g = limited(usize::MAX, Some(8192));
        assert_eq!(g.room(), 8192);
        let (_, s) = chunk(g.take_chunk(1000, 0, false, S, direct).unwrap());
        assert_eq!(s, 4096);
        check(&g);
        let (_, s) = chunk(g.take_chunk(256, 0, false, S, direct).unwrap());
        assert_eq!(s, 2048);
        check(&g);
        assert!(matches!(g.take_chunk(4096, 0, false, S, direct).unwrap(), Taken::NoRoom));
        check(&g);
        give_back_everything(&g);
    }

    #[test]
    fn the_room_is_rounded_up_to_the_granule() {
        let g = limited(usize::MAX, Some(1000));
        assert_eq!(g.room(), 1024);
        assert!(g.reserve(1024));
        assert!(!g.reserve(1));
        g.unreserve(1024);
        assert_eq!(g.size(), 0);
    }

    #[test]
    fn without_a_maximum_it_doubles_then_grows_by_an_eighth() {
        let g = limited(usize::MAX, None);
        assert_eq!(g.unbounded_growth(0, 512, false), 512);
        assert!(g.reserve(1 << 20));
        assert_eq!(g.unbounded_growth(1 << 20, 512, false), 1 << 20, "doubles a one-shard pool");
        assert_eq!(g.unbounded_growth(0, 512, false), 1 << 20, "a new shard starts from the pool");
        g.unreserve(1 << 20);
        assert!(g.reserve(16 << 20));
        assert_eq!(g.unbounded_growth(16 << 20, 512, false), 16 << 20);
        assert_eq!(g.unbounded_growth(16 << 20, 512, true), PENDING_GROWTH, "pending: about what is needed");
        g.unreserve(16 << 20);
        assert!(g.reserve(GEOMETRIC_FROM));
        assert_eq!(g.unbounded_growth(GEOMETRIC_FROM, 512, false), GEOMETRIC_FROM / 8);
        assert_eq!(g.unbounded_growth(0, GEOMETRIC_FROM, false), GEOMETRIC_FROM);
        g.unreserve(GEOMETRIC_FROM);
    }

    #[test]
    fn the_size_halves_toward_the_request_while_the_upstream_refuses() {
        // Room 1 MiB: 512 KiB and 256 KiB are refused, 128 KiB granted.
        let g = limited(200 << 10, Some(1 << 20));
        let (_, s) = chunk(g.take_chunk(1000, 0, false, S, direct).unwrap());
        assert_eq!(s, 128 << 10);
        check(&g);
        // What is left of the limit is below the request: refused, nothing reserved.
        match g.take_chunk(100 << 10, 0, false, S, direct).unwrap() {
            Taken::Refused(e) => assert!(e.is_out_of_memory(), "{e}"),
            _ => panic!("not refused"),
        }
        check(&g);
        give_back_everything(&g);
    }

    #[test]
    fn an_unlisted_chunk_counts_but_is_not_listed() {
        let g = limited(usize::MAX, Some(4096));
        let a = g.take_unlisted(2048, S, |f| f()).unwrap().unwrap();
        assert_eq!((g.size(), g.chunks().len()), (2048, 0));
        assert_eq!(g.take_unlisted(4096, S, |f| f()).unwrap(), None, "past the room");
        g.list(&[(a, 2048)]);
        check(&g);
        give_back_everything(&g);
    }

    #[test]
    fn forgetting_a_range_cuts_the_chunks_around_it() {
        let g = limited(usize::MAX, None);
        g.add_mapped(0x10000, 0x4000);
        g.forget_range(0x11000, 0x1000);
        assert_eq!(g.chunks(), vec![(0x10000, 0x1000), (0x12000, 0x2000)]);
        assert_eq!(g.size(), 0x3000);
        check(&g);
        g.forget_range(0x10000, 0x1000);
        g.forget_range(0x12000, 0x2000);
        assert!(g.chunks().is_empty());
        assert_eq!(g.size(), 0);
    }

    #[test]
    fn a_broken_upstream_is_not_backed_off_from() {
        assert!(!backs_off_from(&Error::BadUpstream("null".into())));
        assert!(backs_off_from(&Error::out_of_memory(1, "no")));
    }
}
