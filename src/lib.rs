//! # rmm — the RAPIDS Memory Manager in Rust
//!
//! Stream-ordered device memory resources, adaptors that observe or limit them, and a per-device
//! current resource. The faces live in crates of their own over this one: the C++ headers
//! (`include/rmm/`) and the legacy C API link the static library of `cpp/`, and the Python package
//! is `python/`.
//!
//! ## Vocabulary
//! - **upstream**: the resource a pool or adaptor takes its memory from.
//! - **chunk**: one contiguous range a pool took from its upstream; blocks never span two chunks.
//! - **block**: a range inside a chunk, either handed out or free. Free neighbours on the same stream
//!   coalesce.
//! - **stream-ordered**: a block freed on stream *s* may be reused at once by work on *s*; another
//!   stream may take it only after waiting for the work enqueued on *s* before the free.
//! - **pool**: a resource that carves blocks out of chunks (see [`pool`] for the algorithm).
//! - **set**: the free lists of one stream (its *private* set: blocks only it may reuse at once) or
//!   blocks it has *published* (covered by an event it recorded; another stream may take them after
//!   waiting for that event).
//! - **publish**: record an event on a stream and move its private set to its published set.
//! - **shard**: one lock's share of a pool: its own sets and chunks. Streams spread over shards
//!   when threads contend; ranges of free memory move between shards.
//!
//! The allocation algorithms are a crate of their own, [`rmm_algorithms`], which cannot see CUDA:
//! they manage address ranges, so the same code is tested on host memory and runs on the GPU (its
//! crate documentation draws the pool's TLSF free lists and what they change). Their public items
//! keep their paths here: [`pool`], [`arena`], [`fixed_size`], [`error`]. The resources that wrap
//! them with CUDA are in [`resource`].
//!
//! Without a CUDA driver nothing panics: CUDA-backed calls return [`Error::NoDriver`].
//!
//! ```no_run
//! use rmm::adaptor::StatisticsResourceAdaptor;
//! use rmm::resource::{CudaMemoryResource, PoolMemoryResource};
//! use rmm::{CudaStream, MemoryResource};
//!
//! # fn main() -> rmm::Result<()> {
//! let pool = StatisticsResourceAdaptor::new(
//!     PoolMemoryResource::new(CudaMemoryResource::new(), 1 << 30, None)?,
//! );
//! let stream = CudaStream::new()?;
//! let p = pool.allocate(1000, 256, stream.view())?; // no CUDA call on the fast path
//! pool.deallocate(p, 1000, 256, stream.view())?;
//! println!("peak {} bytes", pool.bytes_counter().peak);
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

// The CUDA major is chosen by exactly one feature; with both on, cudarc would silently follow
// CUDA 13's bindings.
#[cfg(all(feature = "cuda-12", feature = "cuda-13"))]
compile_error!(
    "rmm-rs: the features `cuda-12` and `cuda-13` exclude each other; for CUDA 12 build with \
     `--no-default-features --features cuda-12` (and make every crate that depends on rmm-rs do the same)"
);
#[cfg(not(any(feature = "cuda-12", feature = "cuda-13")))]
compile_error!("rmm-rs: choose the CUDA major: the feature `cuda-13` (the default) or `cuda-12`");

pub mod adaptor;
pub mod buffer;
pub mod capabilities;
pub mod copy;
pub mod device;
mod driver;
pub mod event;
pub mod history;
pub mod logger;
pub mod per_device_resource;
pub mod pointer;
pub mod prefetch;
pub mod process_exit;
pub mod resource;
pub mod stream;
pub mod stream_pool;
pub mod stream_registry;
#[doc(hidden)]
pub mod testing;

#[doc(inline)]
pub use rmm_algorithms::{arena, error};

/// The allocation algorithm behind
/// [`FixedSizeMemoryResource`](resource::FixedSizeMemoryResource): blocks of one size kept on
/// per-stream stacks, from [`rmm_algorithms::fixed_size`] (which has the full story).
pub mod fixed_size {
    pub use rmm_algorithms::fixed_size::{ChunkTable, FixedSizeFreeList, StreamSets, FRESH_SLOT};
}

/// The allocation algorithm behind [`PoolMemoryResource`](resource::PoolMemoryResource) and the
/// seams every pool shares, from [`rmm_algorithms`] (which has the full story): the pool itself
/// ([`coalescing_pool`](pool::coalescing_pool)), the address space of the virtual pool
/// ([`address_space`](pool::address_space)) and the ordering of work between streams
/// ([`stream_order`](pool::stream_order)).
pub mod pool {
    pub use rmm_algorithms::{
        address_space, coalescing_pool, current_thread_number, next_retirement_number, rounded_size, stream_order,
        AddressSpace, BlockView, CoalescingPool, HostMappings, HostOrder, HostPhysicalMemory, LiveBlock, Partial,
        PhysicalMemory, SetId, SimulatedDeviceOrder, StreamIdentity, StreamKey, StreamKind, StreamOrder,
        CACHED_BYTES_MAX, CAPTURE_MODE_RELAXED, GRANULE, MAX_BLOCK_BYTES,
    };
}

pub use buffer::{DeviceBuffer, DeviceUvector};
pub use device::{available_device_memory, percent_of_free_device_memory, DeviceGuard, DeviceId};
pub use error::{Error, Misuse, PoolState, Result};
pub use process_exit::process_is_exiting;
pub use resource::{MemoryResource, SharedResource, DEFAULT_ALIGNMENT};
pub use stream::{CudaStream, CudaStreamView, RawStream};
pub use stream_pool::CudaStreamPool;

/// The CUDA major this build follows (12 or 13), chosen by the feature `cuda-12` or `cuda-13`:
/// the driver API bindings it calls. A CUDA 13 build needs a CUDA 13 driver (580 or newer); a
/// CUDA 12 build runs on a CUDA 12 or 13 driver.
pub const fn build_cuda_major() -> u32 {
    if cfg!(feature = "cuda-12") {
        12
    } else {
        13
    }
}

/// True when a CUDA driver can be loaded and reports at least one device. GPU tests use this to
/// skip with a printed reason.
pub fn cuda_available() -> bool {
    device::device_count().map(|n| n > 0).unwrap_or(false)
}
