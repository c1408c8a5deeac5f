//! A coalescing, stream-ordered pool over any upstream resource, sharded by stream.
//!
//! [`PoolMemoryResource`] composes a few parts, each a type that owns its fields and states and
//! tests its invariants on its own:
//! - `Shards` (`shards.rs`): each shard's allocator under its lock, the map that deals streams to
//!   shards, and the map of which shard owns which range;
//! - `Growth` (`growth.rs`): the upstream, the chunks taken from it, the pool's size and maximum,
//!   and the rule that sizes the next chunk;
//! - `Captures` (`captures.rs`): the streams marked as capturing into a CUDA graph and each
//!   capture's private memory;
//! - `Streams` (`stream_identity.rs`): the stream order, the checks of which stream a handle
//!   names, and the lock that lets one synchronisation of everything run at a time
//!   (`synchronisation.rs` seals the shards around it).
//!
//! The paths through them: the fast paths (`fast_path.rs`; `immediate.rs` for calls that never
//! wait; `cached_path.rs` for an allocation the stream's cache serves alone), the slow path of an allocation in its numbered steps, top to bottom (`slow_path.rs`,
//! with `gather.rs` for a pool mapped in place), the rest of a free (`free_path.rs`), calls on
//! a capturing stream (`capture.rs`), memory given back while the pool lives (`release.rs`,
//! `in_place.rs`), read-only walks (`segments.rs`, `invariants.rs`) and construction (`build.rs`).

use crate::error::{Error, Result};
use crate::resource::claims::ClaimTable;
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use crate::PoolState;
use captures::Captures;
use growth::Growth;
pub(crate) use in_place::ReservedRange;
use shards::Shards;
use std::sync::Arc;
use stream_identity::Streams;

mod build;
mod cached_path;
mod capture;
mod captures;
mod fast_path;
mod free_path;
mod gather;
mod growth;
mod immediate;
mod in_place;
mod invariants;
mod release;
mod segments;
mod shards;
mod slow_path;
mod stream_identity;
mod synchronisation;

/// Default number of shards: shard 0 plus 31 for streams spread off it, so up to 32 threads that
/// each use their own stream never meet on a lock. Two streams meeting on one shard cost more
/// than the lock: while they take turns, every free there records an event.
pub const DEFAULT_SHARDS: usize = 32;

/// A pool that takes chunks from `U` and hands out blocks from them in stream order.
///
/// Allocation and free are O(1) in the number of free blocks (see [`rmm_algorithms::coalescing_pool`]); a stream that
/// has its shard to itself makes no CUDA call on either. The pool grows on demand: under a
/// `maximum_size` as RMM's pool does (by the larger of the request and half the room left, giving
/// wholly free chunks back first where the request does not fit in that room), without one by
/// doubling up to 4 GiB, then by an eighth of its size; either way backing off toward the
/// request while the upstream runs out. It takes free blocks from other streams once their work is
/// captured by an event, synchronises and merges all streams' free blocks before reporting
/// out-of-memory, and gives every chunk back to the upstream when dropped (wholly free ones
/// earlier, at [`release`](Self::release)).
///
/// Streams share one shard until a call finds it busy with another thread; that stream then gets a
/// shard of its own (each shard has its own lock and its own address ranges), so threads working
/// on their own streams stop contending, while a single-threaded program keeps every free block in
/// one place. Threads sharing a stream spread the same way: a thread that finds its stream's shard
/// busy gets a shard of its own for the stream, whose free blocks any thread of the stream takes
/// without a wait once its own shard runs short. A shard short of memory takes a range of another shard's free memory before it grows
/// the pool: memory is reused before the upstream is asked for more, as in RMM's pool.
///
/// While a stream is captured into a CUDA graph, its allocations come from memory private to the
/// capture, kept until the program releases it: see [`begin_capture`](Self::begin_capture),
/// [`end_capture`](Self::end_capture) and [`release_capture`](Self::release_capture).
///
/// Streams may be destroyed while the pool holds blocks freed on them: the pool only ever records
/// on a stream during a call that names it, and a stream that gets a destroyed stream's handle
/// never takes that stream's blocks without waiting for its work (see
/// [`crate::stream_registry`]).
pub struct PoolMemoryResource<U: MemoryResource> {
    /// The shards, the streams' homes among them and the owner of each range.
    shards: Shards,
    /// The chunks taken from the upstream, the pool's size and maximum, and the growth rule.
    growth: Growth<U>,
    /// The stream order, the checks of which stream a handle names, and the synchronisation lock.
    streams: Streams,
    /// Keeps the pool among those told of retiring streams (pools that order streams only).
    _tenancy: Option<crate::stream_registry::Tenancy>,
    /// For a pool over one reserved range mapped in place (see `in_place.rs`): where it grows,
    /// and what its ranges join.
    in_place: Option<Arc<dyn ReservedRange>>,
    /// The streams marked as capturing and the private memory of CUDA graph captures (see
    /// `capture.rs`).
    captures: Captures,
    /// Blocks a suballocator over this pool claimed as its chunks.
    claims: ClaimTable,
}

/// What one attempt to grow the pool came to.
pub(super) enum Grew {
    /// A new chunk is in the shard.
    Grown,
    /// The room left below the maximum is smaller than what was needed.
    NoRoom,
    /// The upstream refused the smallest size tried, with this error.
    Refused(Error),
}

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        self.growth.upstream()
    }

    /// Bytes currently taken from the upstream.
    pub fn pool_size(&self) -> usize {
        self.growth.size()
    }

    /// Number of shards.
    pub fn shards(&self) -> usize {
        self.shards.real().len()
    }

    /// Pool size, free bytes and largest free block. A chunk's bytes past its last 256-byte
    /// multiple (under a maximum, as in RMM) are never handed out and count as free.
    pub fn state(&self) -> PoolState {
        let tails = self.growth.tails();
        let (free, largest) = self.shards.free();
        PoolState { pool_size: self.pool_size(), free_bytes: tails + free, largest_free_block: largest }
    }

    /// The maximum pool size, if one was set.
    pub fn maximum_size(&self) -> Option<usize> {
        self.growth.maximum()
    }

    /// Sets of free lists in use in all shards (see `CoalescingPool::sets_in_use`): bounded by the
    /// streams in use, however many came and went; for tests and monitoring.
    pub fn sets_in_use(&self) -> usize {
        self.shards.all().iter().map(|shard| shard.lock().sets_in_use()).sum()
    }

    /// Moves `stream` to a shard of its own now, rather than at its first call that finds another
    /// thread in the shared shard. For a stream that one thread will use heavily while others use
    /// the pool too; without effect on a pool of one shard and on a stream moved before.
    pub fn spread_stream(&self, stream: CudaStreamView) {
        self.shards.map().spread(stream.key());
    }
}

// SAFETY: blocks are disjoint ranges of chunks the upstream handed out and the pool keeps until
// it is dropped; a block is handed out again only after its free, in stream order (`StreamOrder`);
// the accessibility answers are the upstream's.
unsafe impl<U: MemoryResource> MemoryResource for PoolMemoryResource<U> {
    #[inline]
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        match self.allocate_at_home(bytes, alignment, stream) {
            Some(a) => Ok(a),
            None => self.allocate_beyond_home(bytes, alignment, stream),
        }
    }

    #[inline]
    fn deallocate(&self, ptr: *mut u8, bytes: usize, _alignment: usize, stream: CudaStreamView) -> Result<()> {
        self.claims.refuse_claimed(ptr)?;
        if self.deallocate_at_home(ptr, bytes, stream) {
            return Ok(());
        }
        self.deallocate_beyond_home(ptr, bytes, stream)
    }

    #[inline]
    fn try_allocate_immediately(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Option<*mut u8> {
        self.allocate_immediately(bytes, alignment, stream)
    }

    #[inline]
    fn try_deallocate_immediately(
        &self,
        ptr: *mut u8,
        bytes: usize,
        _alignment: usize,
        stream: CudaStreamView,
    ) -> bool {
        !self.claims.is_claimed(ptr) && self.deallocate_immediately(ptr, bytes, stream)
    }

    fn is_device_accessible(&self) -> bool {
        self.upstream().is_device_accessible()
    }

    fn is_host_accessible(&self) -> bool {
        self.upstream().is_host_accessible()
    }

    fn memory_segments(&self) -> Option<Vec<crate::resource::MemorySegment>> {
        Some(self.segments())
    }

    crate::resource::forward_claims!(claims);
}

impl<U: MemoryResource> Drop for PoolMemoryResource<U> {
    fn drop(&mut self) {
        // Work still queued may use blocks freed on its stream; the upstream must not get them
        // back before it finishes.
        let captured = self.captures.take_chunks();
        self.growth.give_back_all(self.streams.order(), captured);
    }
}
