//! An allocation that a stream's cache serves alone: a small block of the exact size from the
//! blocks of that size the stream freed. It locks the home shard without waiting and declines
//! (changing nothing) whenever any other part of the pool would have to act: some stream was spread
//! off shard 0 or marked as capturing, the stream is the per-thread default stream, it did not make
//! the shard's last call, its identity must be checked, another stream waits for its blocks, or
//! the cache holds no block of the size. A face whose entry must stay short (the C++ bridge) tries
//! it first and otherwise makes the whole call, which then counts it; where it serves the call, it
//! hands out the block that the whole call would have, with the same bookkeeping.

use super::PoolMemoryResource;
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use rmm_algorithms::{StreamIdentity, CACHED_BYTES_MAX, GRANULE};

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// A block for `bytes` (1 to [`CACHED_BYTES_MAX`]; `alignment` a power of two up to the
    /// granule) from the stream's cache, as [`allocate`](MemoryResource::allocate) would hand it
    /// out. `None`, with nothing changed, where the cache alone does not serve the call (see the
    /// module's documentation): then make the whole call.
    #[inline(always)]
    pub fn allocate_from_cache(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Option<*mut u8> {
        // One comparison rejects a 0-byte request and every size no cache holds.
        if bytes.wrapping_sub(1) >= CACHED_BYTES_MAX
            || !(alignment == GRANULE || (alignment.wrapping_sub(1) < GRANULE && alignment & (alignment - 1) == 0))
        {
            return None;
        }
        // Both tests cost the whole call a call (the thread's number, the map's look-up), so
        // this path, which makes none, leaves those streams to it.
        if self.shards.map().any_spread() || stream.is_per_thread_default() {
            return None;
        }
        let key = stream.key();
        debug_assert_eq!(self.shards.home(key), 0, "no stream is spread");
        let mut core = self.shards.try_lock_first()?;
        let (set, identity) = core.last_set_of(key)?;
        if identity != StreamIdentity::Trusted || core.is_wanted(set) {
            return None;
        }
        let size = (bytes + (GRANULE - 1)) & !(GRANULE - 1);
        let a = core.allocate_cached(set, bytes, size)?;
        core.count_call();
        Some(a as *mut u8)
    }
}
