//! Streams: a non-owning view ([`CudaStreamView`]) and an owning stream ([`CudaStream`]).

use crate::driver::{self, StreamHandle};
use crate::error::Result;
use cudarc::driver::sys;

/// A non-owning, copyable view of a CUDA stream: the legacy default stream, the per-thread default
/// stream, or any `CUstream`/`cudaStream_t` created elsewhere.
///
/// A view is only a handle value; the stream it names must outlive the work that uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CudaStreamView(usize);

// The special handles of the CUDA API (`cudaStreamLegacy`, `cudaStreamPerThread`).
const LEGACY_HANDLE: usize = 0x1;
const PER_THREAD_HANDLE: usize = 0x2;

impl CudaStreamView {
    /// The legacy default stream (handle 0).
    pub const DEFAULT: CudaStreamView = CudaStreamView(0);
    /// The per-thread default stream (`cudaStreamPerThread`).
    pub const PER_THREAD: CudaStreamView = CudaStreamView(PER_THREAD_HANDLE);

    /// A view of a raw handle (`CUstream` or `cudaStream_t`; they are the same type).
    pub fn from_raw(stream: sys::CUstream) -> Self {
        CudaStreamView(stream as usize)
    }

    /// A view of a handle given as an integer (as it crosses FFI boundaries).
    pub const fn from_handle(handle: usize) -> Self {
        CudaStreamView(handle)
    }

    /// The raw handle.
    pub fn as_raw(self) -> sys::CUstream {
        self.0 as sys::CUstream
    }

    /// The handle as an integer.
    pub const fn handle(self) -> usize {
        self.0
    }

    /// The handle as the driver door takes it.
    #[inline]
    pub(crate) const fn stream_handle(self) -> StreamHandle {
        StreamHandle::new(self.0)
    }

    /// True for the legacy default stream, named either by 0 or by `cudaStreamLegacy`.
    pub const fn is_default(self) -> bool {
        self.0 == 0 || self.0 == LEGACY_HANDLE
    }

    /// True for the per-thread default stream.
    pub const fn is_per_thread_default(self) -> bool {
        self.0 == PER_THREAD_HANDLE
    }

    /// Blocks until all work on the stream has finished.
    pub fn synchronize(self) -> Result<()> {
        driver::stream_synchronize(self.stream_handle())
    }
}

/// An owned CUDA stream, created non-blocking (it does not synchronise with the legacy default
/// stream), destroyed on drop. It may be dropped with work queued and with blocks freed on it in
/// pools: the pools capture its work first (see [`crate::stream_registry`]).
#[derive(Debug)]
pub struct CudaStream {
    handle: StreamHandle,
}

impl CudaStream {
    /// Creates a non-blocking stream on the current device.
    pub fn new() -> Result<Self> {
        Self::with_flags(true)
    }

    /// Creates a stream on the current device, non-blocking or, with `non_blocking == false`, one
    /// that synchronises with the legacy default stream (RMM's `cuda_stream_flags::sync_default`).
    pub fn with_flags(non_blocking: bool) -> Result<Self> {
        let handle = driver::stream_create_with_flags(non_blocking)?;
        crate::stream_registry::register_stream(handle.value());
        Ok(CudaStream { handle })
    }

    /// A view of this stream, valid while `self` lives.
    pub fn view(&self) -> CudaStreamView {
        CudaStreamView(self.handle.value())
    }

    /// Blocks until all work on the stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.view().synchronize()
    }
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        // While the process exits the context may be gone; the stream goes with it.
        if crate::process_exit::process_is_exiting() {
            return;
        }
        // Pools capture the stream's queued work while it is alive: its handle may go to the next
        // stream created, which must not take the blocks that work still uses.
        crate::stream_registry::retire_stream(self.handle.value());
        // SAFETY: the stream was made in `with_flags` and is destroyed once, here; pending work
        // still completes (the driver releases the stream afterwards), and no view outlives it.
        unsafe { driver::stream_destroy(self.handle) };
    }
}
