//! The allocation algorithm behind [`PoolMemoryResource`](crate::resource::PoolMemoryResource).
//!
//! It knows nothing about CUDA: it carves address ranges ("chunks") handed to it into blocks. Each
//! stream has its own free lists, indexed by two-level size classes with bitmaps (as in TLSF), so
//! finding a fitting block is O(1); a pointer → block map and physical neighbour links make a free
//! and its coalescing O(1). Block records live on the host, never in the managed memory, because
//! device memory cannot be read from the host.
//!
//! Work between streams is ordered through the [`StreamOrder`] seam: a block freed on stream A goes
//! to A's lists. A publishes them (records its event, during a call on A, so A is alive) on every
//! free while other streams share the lists, else when another stream B has asked for them: then
//! B grows a little meanwhile and A's next call publishes. B waits on that event and takes them. A stream that was destroyed is never touched: its blocks
//! come back through one context-wide synchronisation before the pool reports out-of-memory.
//!
//! The free lists of one stream set are a TLSF index, drawn at the top of `free_list.rs`.

mod address_map;
pub mod address_space;
mod block;
mod free_list;
pub use block::MAX_BLOCK_BYTES;
pub mod coalescing_pool;
pub(crate) mod segment_map;
pub(crate) mod shard_map;
mod size_class;
mod spin_lock;
pub mod stream_order;

pub use address_space::{AddressSpace, HostMappings, HostPhysicalMemory, Partial, PhysicalMemory};
pub use coalescing_pool::{rounded_size, BlockView, CoalescingPool, LiveBlock, SetId, GRANULE};
pub(crate) use segment_map::SegmentMap;
pub(crate) use shard_map::ShardMap;
pub(crate) use spin_lock::{RawSpinLock, SpinMutex};
pub use stream_order::{
    current_thread_number, next_retirement_number, HostOrder, SimulatedDeviceOrder, StreamKey, StreamKind, StreamOrder,
    CAPTURE_MODE_RELAXED, IDENTITY_TRUSTED, IDENTITY_UNKNOWN,
};
