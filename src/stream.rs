//! Streams: a non-owning view ([`CudaStreamView`]) and an owning stream ([`CudaStream`]).

use crate::driver::{self, StreamHandle};
use crate::error::Result;
use cudarc::driver::sys;
use rmm_algorithms::{current_thread_number, StreamKey, StreamKind};
use std::marker::PhantomData;

/// A stream handle as C and C++ code pass it: `cudaStream_t` and `CUstream` are the same type.
/// [`CudaStreamView::from_raw`] takes one and [`CudaStreamView::as_raw`] returns one.
pub type RawStream = sys::CUstream;

/// A non-owning, copyable view of a CUDA stream: the legacy default stream, the per-thread default
/// stream, a [`CudaStream`] it borrows, or any `CUstream`/`cudaStream_t` created elsewhere.
///
/// The view borrows what it names for `'a`, so safe code cannot hand the driver a destroyed
/// stream: [`CudaStream::view`] borrows the stream, the default streams live for the whole
/// program, and a raw handle becomes a view only through the `unsafe` constructors, whose callers
/// promise that the stream outlives every use of the view.
///
/// ```compile_fail,E0716
/// # fn main() -> rmm::Result<()> {
/// // Rejected: the stream is destroyed at the end of the statement, while the view names it.
/// let view = rmm::CudaStream::new()?.view();
/// view.synchronize()?;
/// # Ok(())
/// # }
/// ```
///
/// ```compile_fail,E0597
/// use rmm::{CudaStream, DeviceBuffer};
/// # fn main() -> rmm::Result<()> {
/// let buf = {
///     let stream = CudaStream::new()?;
///     // Rejected: the buffer is freed on its stream, which would be gone by then.
///     DeviceBuffer::<u8>::new(16, stream.view())?
/// };
/// # drop(buf);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CudaStreamView<'a>(usize, PhantomData<&'a CudaStream>);

// The special handles of the CUDA API (`cudaStreamLegacy`, `cudaStreamPerThread`).
const LEGACY_HANDLE: usize = 0x1;
const PER_THREAD_HANDLE: usize = 0x2;

impl CudaStreamView<'static> {
    /// The legacy default stream (handle 0).
    pub const DEFAULT: CudaStreamView<'static> = CudaStreamView(0, PhantomData);
    /// The per-thread default stream (`cudaStreamPerThread`).
    pub const PER_THREAD: CudaStreamView<'static> = CudaStreamView(PER_THREAD_HANDLE, PhantomData);

    /// A view of a raw handle (`CUstream` or `cudaStream_t`; they are the same type).
    ///
    /// # Safety
    /// `stream` names a live stream (or a default stream) for as long as the view, or anything
    /// made with it (a buffer ordered on it), reaches the driver: a destroyed stream's handle is
    /// undefined behaviour in CUDA, and the driver may give it to the next stream created. A
    /// handle no driver call ever sees (a stream name for a resource over host memory) needs
    /// nothing.
    pub unsafe fn from_raw(stream: RawStream) -> Self {
        CudaStreamView(stream as usize, PhantomData)
    }

    /// A view of a handle given as an integer (as it crosses FFI boundaries).
    ///
    /// # Safety
    /// As for [`from_raw`](Self::from_raw).
    pub const unsafe fn from_handle(handle: usize) -> Self {
        CudaStreamView(handle, PhantomData)
    }

    /// The stream `key` names, seen from the calling thread: the legacy default stream, the
    /// per-thread default stream (a per-thread key names the calling thread's), or the stream of
    /// the handle the key was made from; `None` for the keys no stream has (fresh memory, retired
    /// streams, sealed and unused sets).
    ///
    /// # Safety
    /// As for [`from_raw`](Self::from_raw): the stream `key` names is alive for every use of the
    /// view (a pool names a stream only from a call on it, or while the stream registry announces
    /// its retirement), and a per-thread key is used only on the thread it belongs to.
    #[inline]
    pub(crate) unsafe fn of_key(key: StreamKey) -> Option<Self> {
        match key.kind() {
            StreamKind::LegacyDefault => Some(CudaStreamView::DEFAULT),
            StreamKind::PerThread(_) => Some(CudaStreamView::PER_THREAD),
            StreamKind::Stream(handle) => Some(CudaStreamView(handle, PhantomData)),
            _ => None,
        }
    }
}

impl Default for CudaStreamView<'_> {
    /// The legacy default stream.
    fn default() -> Self {
        CudaStreamView::DEFAULT
    }
}

impl<'a> CudaStreamView<'a> {
    /// The raw handle.
    pub fn as_raw(self) -> RawStream {
        self.0 as RawStream
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

    /// How the pools key this stream ([`StreamKey`]): the legacy default stream (0 or
    /// `cudaStreamLegacy`) is [`StreamKey::LEGACY_DEFAULT`], the per-thread default stream is the
    /// calling thread's own key, any other stream its handle.
    #[inline]
    pub(crate) fn key(self) -> StreamKey {
        if self.is_default() {
            StreamKey::LEGACY_DEFAULT
        } else if self.is_per_thread_default() {
            StreamKey::per_thread(current_thread_number())
        } else {
            StreamKey::of_handle(self.0)
        }
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

    /// The same stream, named for the whole program: for code that stores the view where no
    /// lifetime can follow it (a pool's key of the stream, a face's object).
    ///
    /// # Safety
    /// As for [`from_raw`](CudaStreamView::from_raw): the stream outlives every use of the result.
    pub const unsafe fn detach(self) -> CudaStreamView<'static> {
        CudaStreamView(self.0, PhantomData)
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
        // SAFETY: the stream was just made, and `drop` retires it before destroying it.
        unsafe { crate::stream_registry::register_stream(handle.value()) };
        Ok(CudaStream { handle })
    }

    /// A view of this stream, which borrows it.
    pub fn view(&self) -> CudaStreamView<'_> {
        CudaStreamView(self.handle.value(), PhantomData)
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
        // SAFETY: the stream is alive until the destroy below.
        unsafe { crate::stream_registry::retire_stream(self.handle.value()) };
        // SAFETY: the stream was made in `with_flags` and is destroyed once, here; pending work
        // still completes (the driver releases the stream afterwards), and no view outlives it.
        unsafe { driver::stream_destroy(self.handle) };
    }
}
