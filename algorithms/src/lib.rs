//! # rmm-algorithms — the allocation algorithms of rmm-rs, with no CUDA in sight
//!
//! The algorithms behind the memory resources of the crate `rmm-rs` (library `rmm`): they manage
//! address ranges and keep their records on the host, so the same code is tested on host memory
//! and runs on the GPU. This crate cannot call CUDA: it depends on nothing but `std` and
//! `parking_lot`. The resources that wrap these algorithms with an upstream, streams and events
//! live in `rmm::resource`; each algorithm's public items are also re-exported there under the
//! paths `rmm::pool`, `rmm::arena` and `rmm::fixed_size`.
//!
//! - [`coalescing_pool`]: the pool behind `PoolMemoryResource` (free lists, chunks, stream sets),
//!   with [`shard_map`] and [`segment_map`], which the resource uses to spread streams over shards
//!   and to find a pointer's shard;
//! - [`address_space`]: the reserved range behind `VirtualPoolMemoryResource`, mapped and unmapped
//!   in pages;
//! - [`arena`]: the global and per-stream arenas behind `ArenaMemoryResource`;
//! - [`fixed_size`]: the per-stream stacks of blocks of one size behind `FixedSizeMemoryResource`;
//! - [`stream_order`]: the seam through which every algorithm orders work between streams (the
//!   resource implements it with CUDA events), and [`StreamKey`], how a stream is named;
//! - [`spin_lock`]: the lock around a pool's state; [`error`]: the one error type of rmm-rs.
//!
//! ## The coalescing pool
//! It carves address ranges ("chunks") handed to it into blocks. Each stream has its own free
//! lists, indexed by two-level size classes with bitmaps (as in TLSF), so finding a fitting block
//! is O(1); a pointer → block map and physical neighbour links make a free and its coalescing
//! O(1). Block records live on the host, never in the managed memory, because device memory cannot
//! be read from the host.
//!
//! Work between streams is ordered through the [`StreamOrder`] seam: a block freed on stream A goes
//! to A's lists. A publishes them (records its event, during a call on A, so A is alive) on every
//! free while other streams share the lists, else when another stream B has asked for them: then
//! B grows a little meanwhile and A's next call publishes. B waits on that event and takes them. A
//! stream that was destroyed is never touched: its blocks come back through one context-wide
//! synchronisation before the pool reports out-of-memory.
//!
//! ## Changes from the original TLSF
//! The pool's free lists follow TLSF (Masmano et al., 2004; drawn at the top of `free_list.rs`).
//! Changed for device memory and streams:
//! - **host-side block records**: device memory cannot be read from the host, so block headers live
//!   in a host table indexed by id, not in the managed memory;
//! - **stream sets**: one set of free lists per stream (private and published), blocks cross
//!   between streams only through an event or a synchronisation;
//! - **exact-size cache**: a stream that has a pool to itself keeps small freed blocks whole by
//!   exact size and serves the same size from there first, skipping split and merge;
//! - **sentinel record**: id 0 is a block record that is never free or live, so list links are
//!   written without testing for "none".

#![warn(missing_docs)]

mod address_map;
pub mod address_space;
pub mod arena;
mod block;
pub mod coalescing_pool;
pub mod error;
pub mod fixed_size;
mod free_list;
pub mod segment_map;
pub mod shard_map;
mod size_class;
pub mod spin_lock;
mod stream_identity;
mod stream_key;
pub mod stream_order;
#[doc(hidden)]
pub mod testing;

pub use address_space::{AddressSpace, HostMappings, HostPhysicalMemory, Partial, PhysicalMemory};
pub use block::MAX_BLOCK_BYTES;
pub use coalescing_pool::{rounded_size, BlockView, CoalescingPool, LiveBlock, SetId, CACHED_BYTES_MAX, GRANULE};
pub use error::{Error, Misuse, PoolState, Result};
pub use segment_map::SegmentMap;
pub use shard_map::ShardMap;
pub use spin_lock::{RawSpinLock, SpinMutex};
pub use stream_order::{
    current_thread_number, next_retirement_number, HostOrder, SimulatedDeviceOrder, StreamIdentity, StreamKey,
    StreamKind, StreamOrder, CAPTURE_MODE_RELAXED,
};
