//! The allocation algorithm behind [`PoolMemoryResource`](crate::resource::PoolMemoryResource).
//!
//! It knows nothing about CUDA: it carves address ranges ("chunks") handed to it into blocks. Each
//! stream has its own free lists, indexed by two-level size classes with bitmaps (as in TLSF), so
//! finding a fitting block is O(1); a pointer → block map and physical neighbour links make a free
//! and its coalescing O(1). Block records live on the host, never in the managed memory, because
//! device memory cannot be read from the host.
//!
//! Work between streams is ordered through the [`StreamOrder`] seam, and only on slow paths: a
//! block freed on stream A goes to A's lists and costs no CUDA call. When stream B finds nothing in
//! its own lists but A has a fitting block, B asks A to publish and meanwhile grows; A's next call
//! (A is alive then: the caller names it) records A's event; B's next request waits on that event
//! and takes over all of A's free blocks. A stream that was destroyed is never touched: its blocks
//! come back through one context-wide synchronisation before the pool reports out-of-memory.

mod address_map;
mod block;
pub use block::MAX_BLOCK_BYTES;
pub mod coalescing_pool;
pub mod segment_map;
pub mod shard_map;
mod size_class;
mod spin_lock;
pub mod stream_order;

pub use coalescing_pool::{rounded_size, CoalescingPool, GRANULE};
pub use segment_map::SegmentMap;
pub use shard_map::ShardMap;
pub use spin_lock::{RawSpinLock, SpinMutex};
pub use stream_order::{current_thread_number, HostOrder, StreamKey, StreamOrder};
