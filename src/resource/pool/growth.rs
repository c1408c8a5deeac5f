//! Growth of the pool: the size of the chunk asked of the upstream, and the room left under a
//! maximum pool size (where a request does not fit in it, wholly free chunks are given back
//! first, as RMM's pool does before it grows: see `release.rs`).

use super::{Growth, PoolMemoryResource};
use crate::error::{Error, Result};
use crate::resource::upstream_check::allocate_chunk;
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use rmm_algorithms::{CoalescingPool, StreamKey, GRANULE, MAX_BLOCK_BYTES};
use std::sync::atomic::Ordering;

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

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// Takes a chunk of at least `needed` bytes from the upstream for shard `home`; when none
    /// could be had, says whether the room below the maximum was too small or the upstream refused
    /// (with its error). Its size:
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
    pub(super) fn grow(
        &self,
        home: usize,
        core: &mut CoalescingPool,
        key: StreamKey,
        stream: CudaStreamView,
        needed: usize,
        pending: bool,
    ) -> Result<Growth> {
        if let Some(range) = &self.in_place {
            return self.grow_in_place(&**range, home, core, key, needed);
        }
        let room = self.room();
        if needed > room {
            return Ok(Growth::NoRoom);
        }
        let capped = self.maximum_size.is_some();
        let mut want = if capped { needed.max(room / 2) } else { self.unbounded_growth(core, needed, pending) }
            .min(room.min(MAX_BLOCK_BYTES));
        loop {
            if !self.reserve(want) {
                // Another shard grew meanwhile; try again within what is left.
                let room = self.room();
                if needed > room {
                    return Ok(Growth::NoRoom);
                }
                want = want.min(room).max(needed);
                continue;
            }
            // Relaxed: an upstream allocation must not invalidate a capture on another stream.
            match super::capture::relaxed_if_possible(&*self.order, || {
                allocate_chunk(&self.upstream, want, GRANULE, stream)
            }) {
                Ok(ptr) => {
                    self.upstream_chunks.lock().push((ptr as usize, want));
                    self.adopt(home, core, ptr as usize, want & !(GRANULE - 1), key);
                    return Ok(Growth::Grown);
                }
                Err(e) => {
                    self.pool_size.fetch_sub(want, Ordering::Relaxed);
                    if !backs_off_from(&e) {
                        return Err(e);
                    }
                    if want == needed {
                        // Kept for the pool's own refusal, which quotes it as RMM's does.
                        return Ok(Growth::Refused(e));
                    }
                    // Not rounded to 256 bytes, as in RMM: the chunk's tail is never handed out.
                    want = (want / 2).max(needed);
                }
            }
        }
    }

    /// The chunk size to ask for without a maximum (see [`grow`](Self::grow)).
    fn unbounded_growth(&self, core: &CoalescingPool, needed: usize, pending: bool) -> usize {
        let pool_size = self.pool_size();
        let want = if pool_size < GEOMETRIC_FROM {
            // A shard that is new to growing starts from part of the whole pool, not from zero:
            // tiny chunks would cost one upstream call each.
            needed.max(core.pool_size()).max(pool_size.min(SHARD_START))
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
        self.maximum_size.map_or(MAX_BLOCK_BYTES, |max| granule_ceil(max.saturating_sub(self.pool_size())))
    }

    /// Adds `bytes` to the pool size unless they pass the room left (see [`room`](Self::room)).
    pub(super) fn reserve(&self, bytes: usize) -> bool {
        let max = self.maximum_size;
        self.pool_size
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| match max {
                Some(max) => (bytes <= granule_ceil(max.saturating_sub(s))).then(|| s + bytes),
                None => s.checked_add(bytes),
            })
            .is_ok()
    }
}
