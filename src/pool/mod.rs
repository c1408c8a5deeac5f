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
//! # The free lists of one stream set
//!
//! A two-level segregated fit (TLSF: M. Masmano, I. Ripoll, A. Crespo, J. Real, "TLSF: a New
//! Dynamic Memory Allocator for Real-Time Systems", ECRTS 2004), with its block headers moved to
//! the host:
//!
//! ```text
//!  fl bitmap (one bit per power of two that has a free block)      1 0 1 1 0 ...
//!                                                                   |   | |
//!  sl bitmap per power (one bit per class with a free block)        |   | +-> 0 0 1 0 ... 1
//!                                                                   v   v
//!  heads[fl][sl]  ->  [block] <-> [block] <-> [block]      free list of one class
//!                     (prev_free / next_free links)
//!
//!  one chunk from the upstream, its blocks in address order (prev_phys / next_phys links):
//!  +----------+---------------------+--------+------------------+----------+
//!  | handed   | free, this set      | handed | free, this set   | free,    |
//!  | out      | (in a list above)   | out    | (in a list)      | other set|
//!  +----------+---------------------+--------+------------------+----------+
//!
//!  block records: a host-side table indexed by BlockId {addr, units, prev/next_phys,
//!  prev/next_free, stream: the owning set, ALLOCATED or CACHED}; record 0 is the sentinel NIL,
//!  so links are written without tests.
//! ```
//!
//! `map_floor` files a free block under the class its size rounds down to; `map_ceil` gives the
//! smallest class whose every block fits a request, so one search of the two bitmaps finds a
//! fitting block without walking a list. Freeing looks at the two physical neighbours and merges
//! with each that is free in the same set.

mod address_map;
mod block;
pub use block::MAX_BLOCK_BYTES;
pub mod coalescing_pool;
pub(crate) mod segment_map;
pub(crate) mod shard_map;
mod size_class;
mod spin_lock;
pub mod stream_order;

pub use coalescing_pool::{rounded_size, CoalescingPool, GRANULE};
pub(crate) use segment_map::SegmentMap;
pub(crate) use shard_map::ShardMap;
pub(crate) use spin_lock::{RawSpinLock, SpinMutex};
pub use stream_order::{
    current_thread_number, next_retirement_number, HostOrder, StreamKey, StreamOrder, IDENTITY_TRUSTED,
    IDENTITY_UNKNOWN,
};
