//! # rmm — the RAPIDS Memory Manager in Rust
//!
//! Stream-ordered device memory resources, adaptors that observe or limit them, a per-device current
//! resource, and a C++ face (`include/rmm/`) that makes these resources usable from CUDA C++ code
//! written for RMM.
//!
//! ## Vocabulary
//! - **upstream**: the resource a pool or adaptor takes its memory from.
//! - **chunk**: one contiguous range a pool took from its upstream; blocks never span two chunks.
//! - **block**: a range inside a chunk, either handed out or free. Free neighbours on the same stream
//!   coalesce.
//! - **stream-ordered**: a block freed on stream *s* may be reused at once by work on *s*; another
//!   stream may take it only after waiting for the work enqueued on *s* before the free.
//! - **pool**: a resource that carves blocks out of chunks (see [`pool`] for the algorithm).
//!
//! The allocation algorithms in [`pool`] know nothing about CUDA: they manage address ranges, so
//! the same code is tested on host memory and runs on the GPU.
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

pub mod adaptor;
pub mod bridge;
pub mod device;
mod driver;
pub mod error;
pub mod event;
pub mod per_device_resource;
pub mod pool;
pub mod process_exit;
pub mod resource;
pub mod stream;
pub mod stream_pool;
pub mod stream_registry;

pub use device::{available_device_memory, percent_of_free_device_memory, DeviceId};
pub use error::{Error, Misuse, PoolState, Result};
pub use process_exit::process_is_exiting;
pub use resource::{MemoryResource, SharedResource, DEFAULT_ALIGNMENT};
pub use stream::{CudaStream, CudaStreamView};
pub use stream_pool::CudaStreamPool;

/// True when a CUDA driver can be loaded and reports at least one device. GPU tests use this to
/// skip with a printed reason.
pub fn cuda_available() -> bool {
    device::device_count().map(|n| n > 0).unwrap_or(false)
}
