//! Making a pool: its sizes checked as RMM checks them, its parts put together, and its first
//! chunk taken from the upstream.

use super::captures::Captures;
use super::growth::{backs_off_from, Growth};
use super::shards::Shards;
use super::stream_identity::Streams;
use super::{PoolMemoryResource, ReservedRange, DEFAULT_SHARDS};
use crate::error::{Error, Result};
use crate::resource::claims::ClaimTable;
use crate::resource::cuda_event_order::default_order;
use crate::resource::MemoryResource;
use rmm_algorithms::{StreamKey, StreamOrder, GRANULE, MAX_BLOCK_BYTES};
use std::sync::Arc;

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// A pool holding `initial_size` bytes from `upstream` at once, growing to at most
    /// `maximum_size` (unbounded when `None`). Both must be multiples of 256. Device memory is
    /// ordered with CUDA events; host-only memory needs no ordering.
    pub fn new(upstream: U, initial_size: usize, maximum_size: Option<usize>) -> Result<Self> {
        let order = default_order(&upstream);
        // SAFETY: `default_order` orders device-accessible memory with CUDA events.
        unsafe { Self::with_stream_order(upstream, initial_size, maximum_size, order) }
    }

    /// Like [`new`](Self::new) with an explicit way of ordering streams.
    ///
    /// # Safety
    /// `order` orders work on the streams as `upstream`'s memory needs: CUDA events (a
    /// [`CudaEventOrder`](crate::resource::CudaEventOrder)) for memory kernels or the driver's
    /// copies use; an order that waits for nothing ([`HostOrder`](rmm_algorithms::HostOrder),
    /// [`SimulatedDeviceOrder`](rmm_algorithms::SimulatedDeviceOrder)) only for memory no device
    /// work touches. A wrong order hands a block to a stream while work on another may still use
    /// it.
    pub unsafe fn with_stream_order(
        upstream: U,
        initial_size: usize,
        maximum_size: Option<usize>,
        order: Box<dyn StreamOrder>,
    ) -> Result<Self> {
        // SAFETY: the caller's duty, passed on unchanged.
        unsafe { Self::with_shards(upstream, initial_size, maximum_size, order, DEFAULT_SHARDS) }
    }

    /// Like [`with_stream_order`](Self::with_stream_order) with `shards` shards (1 to 256); one
    /// shard gives a single-lock pool whose free blocks of all streams can always coalesce.
    ///
    /// # Safety
    /// As for [`with_stream_order`](Self::with_stream_order): `order` suits `upstream`'s memory.
    pub unsafe fn with_shards(
        upstream: U,
        initial_size: usize,
        maximum_size: Option<usize>,
        order: Box<dyn StreamOrder>,
        shards: usize,
    ) -> Result<Self> {
        Self::build(upstream, initial_size, maximum_size, order, shards, None)
    }

    /// [`with_shards`](Self::with_shards), over a reserved range when `in_place` is given.
    pub(super) fn build(
        upstream: U,
        initial_size: usize,
        maximum_size: Option<usize>,
        order: Box<dyn StreamOrder>,
        shards: usize,
        in_place: Option<Arc<dyn ReservedRange>>,
    ) -> Result<Self> {
        if !initial_size.is_multiple_of(GRANULE) {
            return Err(Error::InvalidArgument(format!(
                "initial pool size {initial_size} is not a multiple of {GRANULE}"
            )));
        }
        if let Some(max) = maximum_size {
            if max % GRANULE != 0 {
                return Err(Error::InvalidArgument(format!("maximum pool size {max} is not a multiple of {GRANULE}")));
            }
            if max < initial_size {
                return Err(Error::InvalidArgument(format!(
                    "maximum pool size {max} is below the initial size {initial_size}"
                )));
            }
        }
        if !(1..=256).contains(&shards) {
            return Err(Error::InvalidArgument(format!("{shards} shards: a pool has 1 to 256 shards")));
        }
        if initial_size > MAX_BLOCK_BYTES {
            // RMM would ask the upstream, which cannot give that much either: out of memory.
            return Err(Error::out_of_memory(
                initial_size,
                format!("initial pool size {initial_size} is above the largest chunk a pool keeps ({MAX_BLOCK_BYTES})"),
            ));
        }
        let streams = Streams::new(order);
        // One more, empty shard: where streams marked as capturing are sent (see `capture.rs`).
        let shards = Shards::new(shards, in_place.is_some());
        let tenancy = streams.ordered().then(|| streams.announce_retiring_streams(shards.weak()));
        let pool = PoolMemoryResource {
            shards,
            growth: Growth::new(upstream, maximum_size),
            claims: ClaimTable::new(),
            streams,
            _tenancy: tenancy,
            in_place,
            captures: Captures::new(),
        };
        if initial_size > 0 {
            // As RMM's pool makes its first chunk (a growth by exactly the initial size): a refusal
            // of the upstream is the pool's out-of-memory error quoting it. A range mapped in
            // place passes its driver's errors on, as its growth does.
            let ptr = pool.growth.take_initial(initial_size).map_err(|e| {
                if pool.in_place.is_none() && backs_off_from(&e) {
                    pool.refusal(initial_size, initial_size, Some(e))
                } else {
                    e
                }
            })?;
            // An upstream may allocate in stream order; once nothing is pending, the chunk is fresh
            // memory every stream may take without waiting. If that cannot be established, it
            // belongs to the default stream it was allocated on, and other streams take it through
            // the usual publish/wait hand-over.
            let fresh = !pool.streams.ordered() || pool.streams.order().synchronize_all().is_ok();
            let owner = if fresh { StreamKey::FRESH } else { StreamKey::LEGACY_DEFAULT };
            let shard = if fresh { 0 } else { pool.shards.home(owner) };
            pool.shards.adopt(shard, &mut pool.shards.lock(shard), ptr, initial_size, owner);
        }
        Ok(pool)
    }
}
