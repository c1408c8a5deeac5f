//! The allocation algorithm behind [`PoolMemoryResource`](crate::resource::PoolMemoryResource).
//!
//! It knows nothing about CUDA: it carves address ranges ("chunks") handed to it into blocks. Each
//! stream has its own free lists, indexed by two-level size classes with bitmaps (as in TLSF), so
//! finding a fitting block is O(1); a pointer → block map and physical neighbour links make a free
//! and its coalescing O(1). Block records live on the host, never in the managed memory, because
//! device memory cannot be read from the host.
//!
//! Work between streams is ordered through the [`StreamOrder`] seam, and only on slow paths: a
//! block freed on stream A goes to A's lists and costs no CUDA call; when stream B finds nothing in
//! its own lists it asks `StreamOrder` to make B wait for A and then takes over all of A's free
//! blocks (as RMM does, but recording A's event then instead of on every free).

mod address_map;
mod block;
pub use block::MAX_BLOCK_BYTES;
pub mod coalescing_pool;
mod size_class;
mod spin_lock;
pub mod stream_order;

pub use coalescing_pool::{rounded_size, CoalescingPool, GRANULE};
pub use spin_lock::{RawSpinLock, SpinMutex};
pub use stream_order::{current_thread_number, HostOrder, StreamKey, StreamOrder};
