//! Allocation on a stream being captured into a CUDA graph: memory private to each capture.
//!
//! A captured graph replays the addresses it was captured with, at any time after the capture, on
//! any stream, as often as the program launches it. So, as PyTorch does with a private pool per
//! graph, blocks allocated during capture `N` come from chunks kept for `N` alone:
//!
//! - a block freed during capture `N` (or freed by eager work after it) goes back to `N`'s chunks
//!   and serves only `N`'s later allocations; no other stream, no eager work and no other capture
//!   ever gets it until the program calls [`PoolMemoryResource::release_capture`];
//! - a block the pool handed out before the capture and freed during it is kept out of use until
//!   the release too: replays free it again and again (the graph may still use it), so it never
//!   goes back to a free list while the graph may run;
//! - nothing the pool does for a capturing stream records, waits for or queries an event, or
//!   synchronises a stream or the device; new chunks are taken from the upstream with the calling
//!   thread's capture mode relaxed (and restored after, on every path), so that the upstream call
//!   does not invalidate any capture.
//!
//! How a capturing stream is found without a cost on the fast paths: [`begin_capture`] marks the
//! stream in the shard map, whose lookup every allocation and free makes anyway, with the number
//! of the pool's capture shard, an extra shard that never holds memory. Its fast paths then find
//! nothing there and go to their cold paths, which send the call here: the instructions of the
//! eager fast paths are those of a pool without capture support. Once any stream was marked, every
//! lookup probes the shard map's table (as once any stream was spread to a shard of its own). The
//! cold paths of eager calls also ask the stream order whether the stream captures (before they
//! would wait, synchronise, record on another shard's free or grow), and mark a stream found
//! capturing, so that a capture the program did not announce is served here from its next call
//! that misses the fast path. A warm fast path of a stream whose capture was not announced is not
//! checked: the program announces captures, as it does to PyTorch's allocator.
//!
//! [`begin_capture`]: PoolMemoryResource::begin_capture

use super::PoolMemoryResource;
use crate::error::{Error, Result};
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use rmm_algorithms::{next_retirement_number, StreamKey, StreamOrder, GRANULE, MAX_BLOCK_BYTES};

/// The owner of a capture's chunk in the segment map: past every shard, the capture shard included.
const CAPTURE_CHUNK_OWNER: usize = usize::MAX >> 1;

/// The smallest chunk a capture's private memory grows by.
const CAPTURE_CHUNK: usize = 2 << 20;

/// The calling thread's capture mode, relaxed for as long as this lives.
pub(super) struct RelaxedCapture<'a> {
    order: &'a dyn StreamOrder,
    previous: u32,
}

impl<'a> RelaxedCapture<'a> {
    /// Relaxes the calling thread's capture mode until the value is dropped.
    pub(super) fn new(order: &'a dyn StreamOrder) -> Result<Self> {
        Ok(RelaxedCapture { order, previous: order.relax_capture_mode()? })
    }
}

impl Drop for RelaxedCapture<'_> {
    fn drop(&mut self) {
        self.order.restore_capture_mode(self.previous);
    }
}

/// Calls `f` with the calling thread's capture mode relaxed, restored after on every path; an
/// error, without the call, where the mode cannot be relaxed (for a call on a capturing stream).
pub(super) fn relaxed<T>(order: &dyn StreamOrder, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let _relaxed = RelaxedCapture::new(order)?;
    f()
}

/// Calls `f` with the calling thread's capture mode relaxed where it can be (for an eager call:
/// where the driver cannot relax the mode, as without a GPU, there is no capture to keep valid).
pub(super) fn relaxed_if_possible<T>(order: &dyn StreamOrder, f: impl FnOnce() -> T) -> T {
    let _relaxed = RelaxedCapture::new(order).ok();
    f()
}

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// Announces that `stream` is being captured into a CUDA graph (call it after the capture
    /// began, from any thread, once per stream of the capture that allocates or frees): from
    /// now on the stream's allocations come from memory private to that capture (see the module
    /// documentation of the pool's capture support). Returns the capture's id, the key of
    /// [`release_capture`](Self::release_capture). An error when the stream is not capturing, or
    /// when the pool cannot mark one more stream.
    pub fn begin_capture(&self, stream: CudaStreamView) -> Result<u64> {
        let key = stream.key();
        let Some(id) = self.streams.order().capture_of(key)? else {
            return Err(Error::InvalidArgument(format!("stream {:#x} is not being captured", stream.handle())));
        };
        self.mark_capturing(key, id)?;
        Ok(id)
    }

    /// Announces that the capture on `stream` ended (call it after the capture ended): the
    /// stream's calls go back to the shared memory. The capture's private memory is kept until
    /// [`release_capture`](Self::release_capture). Without effect on a stream not marked.
    pub fn end_capture(&self, stream: CudaStreamView) {
        self.unmark(stream.key());
    }

    /// Clears the capture mark of `key`, in the pool's list and in the shard map.
    fn unmark(&self, key: StreamKey) {
        self.captures.unmark(self.shards.map(), key);
    }

    /// Gives the private memory of capture `id` back to the pool, once every graph captured with
    /// it and every executable graph made from those is destroyed. Its free blocks, and the blocks
    /// allocated before the capture and freed during it, then serve any stream after the next
    /// synchronisation of everything (which the pool makes before it would grow). An error, with
    /// nothing changed, while a stream is still marked as capturing into `id` or while blocks the
    /// capture allocated are still live; an unknown `id` is an error too. A block freed during the
    /// capture that the pool had not handed out is reported as a misuse after the rest is done.
    ///
    /// # Safety
    /// Every graph captured into `id`, and every executable graph made from one, is destroyed:
    /// their kernels and copies address the capture's memory, which the pool hands out to any
    /// stream once released, and it cannot see graphs.
    pub unsafe fn release_capture(&self, id: u64) -> Result<()> {
        let pool = self.captures.release(id)?;
        // No capture covers this memory's work: it waits for a synchronisation of everything.
        let retired = StreamKey::retired_after_sync(next_retirement_number());
        {
            let mut core = self.shards.lock(0);
            self.growth.list(&pool.chunks);
            for &(addr, len) in &pool.chunks {
                self.shards.adopt(0, &mut core, addr, len & !(GRANULE - 1), retired);
            }
        }
        let mut misuse = None;
        for &(ptr, bytes) in &pool.freed {
            let Some(shard) = self.shards.owner(ptr).filter(|&s| !self.shards.is_capture_home(s)) else {
                misuse.get_or_insert(Error::Misuse(crate::error::Misuse::UnknownPointer { ptr }));
                continue;
            };
            let mut core = self.shards.lock(shard);
            let set = core.set_of(retired);
            if let Err(e) = core.deallocate(ptr, bytes, set) {
                misuse.get_or_insert(Error::Misuse(e));
            }
        }
        misuse.map_or(Ok(()), Err)
    }

    /// Ids of the captures whose private memory the pool keeps.
    pub fn captures(&self) -> Vec<u64> {
        self.captures.ids()
    }

    /// Bytes of private memory the pool keeps for capture `id` (0 for an unknown one).
    pub fn capture_pool_size(&self, id: u64) -> usize {
        self.captures.pool_size(id)
    }

    /// Whether some stream is marked as capturing: the pool then synchronises nothing.
    #[cold]
    pub(super) fn capture_in_progress(&self) -> bool {
        self.captures.in_progress()
    }

    /// Marks `key` as capturing into `id`.
    fn mark_capturing(&self, key: StreamKey, id: u64) -> Result<()> {
        self.captures.mark(self.shards.map(), key, id)
    }

    /// For a cold path of an eager call on `key`: the capture the stream turns out to be in, marked
    /// from now on; `None` for a stream not capturing (or where the order cannot tell).
    #[cold]
    pub(super) fn found_capturing(&self, key: StreamKey) -> Option<u64> {
        if !self.streams.ordered() {
            return None;
        }
        let id = self.streams.order().capture_of(key).ok()??;
        self.mark_capturing(key, id).ok()?;
        Some(id)
    }

    /// An allocation on the marked stream `key`; `Ok(None)` when the stream no longer captures (its
    /// mark is then cleared, and the caller goes the usual way).
    #[cold]
    #[inline(never)]
    pub(super) fn allocate_captured(
        &self,
        key: StreamKey,
        bytes: usize,
        size: usize,
        align: usize,
    ) -> Result<Option<*mut u8>> {
        let Some(id) = self.capture_or_unmark(key)? else {
            return Ok(None);
        };
        let grow = |needed| {
            let (addr, len) = self.grow_capture(needed)?;
            self.shards.assign(addr, len & !(GRANULE - 1), CAPTURE_CHUNK_OWNER);
            Ok((addr, len))
        };
        Ok(self.captures.allocate(id, bytes, size, align, grow)?.map(|a| a as *mut u8))
    }

    /// A free on the marked stream `key`; `Ok(false)` when the stream no longer captures (its mark
    /// is then cleared, and the caller goes the usual way).
    #[cold]
    #[inline(never)]
    pub(super) fn deallocate_captured(&self, ptr: usize, bytes: usize, key: StreamKey) -> Result<bool> {
        let Some(id) = self.capture_or_unmark(key)? else {
            return Ok(false);
        };
        let owner = self.shards.owner(ptr);
        match owner {
            None => Err(Error::Misuse(crate::error::Misuse::UnknownPointer { ptr })),
            Some(shard) if self.shards.is_capture_home(shard) => {
                self.deallocate_capture_block(ptr, bytes).map(|()| true)
            }
            // A block of the shared memory: the graph may use it at each replay.
            Some(_) => self.captures.keep_freed(id, ptr, bytes).map(|()| true),
        }
    }

    /// Frees a block of some capture's private memory back into it, whichever stream frees it.
    #[cold]
    pub(super) fn deallocate_capture_block(&self, ptr: usize, bytes: usize) -> Result<()> {
        self.captures.deallocate(ptr, bytes)
    }

    /// The capture the marked stream `key` is in; unmarks it where it no longer captures.
    fn capture_or_unmark(&self, key: StreamKey) -> Result<Option<u64>> {
        let id = self.streams.order().capture_of(key)?;
        if id.is_none() {
            self.unmark(key);
        }
        Ok(id)
    }

    /// A chunk of at least `needed` bytes for a capture's private memory (start, bytes), taken with
    /// the thread's capture mode relaxed; counted in the pool size, within its maximum.
    fn grow_capture(&self, needed: usize) -> Result<(usize, usize)> {
        if let Some(range) = &self.in_place {
            let g = range.granularity();
            let want = needed.max(CAPTURE_CHUNK).div_ceil(g) * g;
            let (addr, len) = relaxed(self.streams.order(), || range.grow(want, &mut |_, _| (0, 0)))?;
            self.growth.count_unlisted(len);
            return Ok((addr, len));
        }
        let room = self.growth.room();
        if needed > room {
            return Err(self.refusal(needed, needed, None));
        }
        let want = needed.max(CAPTURE_CHUNK).min(room).min(MAX_BLOCK_BYTES);
        // The per-thread default stream: an upstream that orders its memory on a stream must not
        // be asked on the capturing one (that would capture the allocation) nor on the legacy one
        // (which waits for every blocking stream, the capturing one included).
        let relax = |f: &dyn Fn() -> Result<*mut u8>| relaxed(self.streams.order(), f);
        match self.growth.take_unlisted(want, CudaStreamView::PER_THREAD, relax)? {
            Some(addr) => Ok((addr, want)),
            None => Err(self.refusal(needed, needed, None)),
        }
    }
}
