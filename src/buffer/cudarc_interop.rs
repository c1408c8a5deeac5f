//! Interop with [cudarc](https://docs.rs/cudarc/0.19): streams both ways, and buffers lent to
//! cudarc as device slices that cudarc reads and writes but never frees.
//!
//! ```no_run
//! use cudarc::driver::CudaContext;
//! use rmm::buffer::DeviceBuffer;
//! use rmm::CudaStreamView;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?; // the device's primary context, the one rmm uses
//! let stream = ctx.new_stream()?;
//! let view = CudaStreamView::from(&*stream);
//! let mut buf = DeviceBuffer::<f32>::from_host(&[1.0, 2.0, 3.0], view)?;
//! stream.memset_zeros(&mut buf.cudarc_view_mut(&ctx)?)?; // cudarc writes our memory
//! assert_eq!(buf.to_vec()?, [0.0; 3]);
//! # Ok(())
//! # }
//! ```
//!
//! A view lent to cudarc is ordered after the buffer's stream. Work that cudarc enqueues on that
//! stream needs no synchronisation; work on another cudarc stream first waits for the buffer's
//! stream, and the host then waits for that work when cudarc releases the pointer, so that the
//! buffer's later work and its free never overtake it.
//!
//! The stream a view reports to cudarc (`DeviceSlice::stream`, which cudarc may clone and keep)
//! is the context's default stream (the per-thread one for a buffer on the per-thread stream),
//! which lives as long as the context: a clone kept after the buffer and its stream are gone
//! never names a destroyed stream. The buffer's own stream is only used while the view borrows
//! the buffer.

use super::{DeviceBuffer, DeviceUvector};
use crate::driver;
use crate::error::{Error, Result};
use crate::stream::CudaStreamView;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaContext, CudaStream as CudarcStream, DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop};
use std::marker::PhantomData;
use std::sync::Arc;

impl<'a> From<&'a CudarcStream> for CudaStreamView<'a> {
    /// A view of a cudarc stream, which it borrows.
    fn from(stream: &'a CudarcStream) -> Self {
        // SAFETY: the view borrows the cudarc stream, which lives (and keeps its handle) as long.
        unsafe { CudaStreamView::from_raw(stream.cu_stream()) }
    }
}

impl CudaStreamView<'_> {
    /// This stream as a cudarc stream of `ctx`, which cudarc will not destroy. The default and
    /// per-thread default streams come from `ctx` itself.
    ///
    /// # Safety
    /// The stream must belong to `ctx` and stay alive as long as the returned stream, or anything
    /// that retains it, is used (cudarc's `CudaContext::wrap_borrowed_stream`).
    pub unsafe fn as_cudarc_stream(self, ctx: &Arc<CudaContext>) -> Arc<CudarcStream> {
        if self.handle() == 0 {
            ctx.default_stream()
        } else if self.is_per_thread_default() {
            ctx.per_thread_stream()
        } else {
            // SAFETY: the caller keeps the stream alive and in `ctx`.
            unsafe { ctx.wrap_borrowed_stream(self.as_raw()) }
        }
    }
}

/// A buffer lent to cudarc for reading (`&[T]` on the device): it implements cudarc's
/// [`DevicePtr`], so cudarc copies from it and passes it to library calls. cudarc never frees it.
#[derive(Debug)]
pub struct CudarcView<'a, T> {
    ptr: CUdeviceptr,
    len: usize,
    /// The buffer's stream: valid while the view borrows the buffer.
    own: CudaStreamView<'a>,
    /// What cudarc sees as the view's stream: one that lives as long as the context.
    stream: Arc<CudarcStream>,
    _borrow: PhantomData<&'a [T]>,
}

/// A buffer lent to cudarc for writing (`&mut [T]` on the device): it implements cudarc's
/// [`DevicePtr`] and [`DevicePtrMut`]. cudarc never frees it.
#[derive(Debug)]
pub struct CudarcViewMut<'a, T> {
    ptr: CUdeviceptr,
    len: usize,
    /// The buffer's stream: valid while the view borrows the buffer.
    own: CudaStreamView<'a>,
    /// What cudarc sees as the view's stream: one that lives as long as the context.
    stream: Arc<CudarcStream>,
    _borrow: PhantomData<&'a mut [T]>,
}

/// The stream a view of a buffer on `own` reports to cudarc: a default stream of `ctx`, which
/// needs no owner. A buffer on a stream of another context than `ctx` is refused: cudarc would
/// run the view's work in `ctx`.
fn reported_stream(own: CudaStreamView, ctx: &Arc<CudaContext>) -> Result<Arc<CudarcStream>> {
    if own.is_per_thread_default() {
        return Ok(ctx.per_thread_stream());
    }
    if !own.is_default() {
        // The buffer's stream outlives the buffer (it is freed there), which is borrowed here.
        let belongs_to = driver::stream_context(own.stream_handle())?;
        if belongs_to.value() != ctx.cu_ctx() as usize {
            return Err(Error::InvalidArgument(format!(
                "the buffer's stream {:#x} belongs to CUDA context {belongs_to:#x}, not to the cudarc \
                 context {:#x} given",
                own.handle(),
                ctx.cu_ctx() as usize
            )));
        }
    }
    Ok(ctx.default_stream())
}

/// True when `using` is the stream `own` names (both default streams count as one).
fn same_stream(own: CudaStreamView, using: &CudarcStream) -> bool {
    let using = CudaStreamView::from(using);
    own == using || (own.is_default() && using.is_default())
}

/// What cudarc does around its use of our pointer on `using`: nothing on the buffer's own stream;
/// on another stream, `using` first waits for the buffer's stream, and the host waits for `using`
/// once the use is enqueued (the returned guard), so no later work on the buffer's stream, its
/// free included, can overtake the use.
fn order_use<'b>(own: CudaStreamView, reported: &CudarcStream, using: &'b CudarcStream) -> SyncOnDrop<'b> {
    if same_stream(own, using) {
        return SyncOnDrop::Sync(None);
    }
    // SAFETY: the view borrows the buffer, whose stream outlives it (a buffer is freed on its
    // stream), and the wrapper is dropped at the end of this call: cudarc keeps nothing of it.
    let own = unsafe { reported.context().wrap_borrowed_stream(own.as_raw()) };
    using.context().record_err(using.join(&own));
    SyncOnDrop::sync_stream(using)
}

macro_rules! device_slice {
    ($view:ident) => {
        impl<T> DeviceSlice<T> for $view<'_, T> {
            fn len(&self) -> usize {
                self.len
            }
            fn stream(&self) -> &Arc<CudarcStream> {
                &self.stream
            }
        }

        impl<T> DevicePtr<T> for $view<'_, T> {
            fn device_ptr<'b>(&'b self, stream: &'b CudarcStream) -> (CUdeviceptr, SyncOnDrop<'b>) {
                (self.ptr, order_use(self.own, &self.stream, stream))
            }
        }
    };
}
device_slice!(CudarcView);
device_slice!(CudarcViewMut);

impl<T> DevicePtrMut<T> for CudarcViewMut<'_, T> {
    fn device_ptr_mut<'b>(&'b mut self, stream: &'b CudarcStream) -> (CUdeviceptr, SyncOnDrop<'b>) {
        (self.ptr, order_use(self.own, &self.stream, stream))
    }
}

macro_rules! lend_to_cudarc {
    ($buffer:ident) => {
        impl<T> $buffer<'_, T> {
            /// The address of the first element as a cudarc device pointer (0 when nothing is
            /// allocated): a kernel argument, `builder.arg(&buf.device_ptr())`.
            pub fn device_ptr(&self) -> CUdeviceptr {
                self.raw().ptr() as CUdeviceptr
            }

            /// The elements lent to cudarc for reading. `ctx` must be the context the memory and
            /// the buffer's stream belong to (for the primary context, `CudaContext::new(ordinal)`);
            /// a buffer whose stream belongs to another context is [`Error::InvalidArgument`].
            pub fn cudarc_view(&self, ctx: &Arc<CudaContext>) -> Result<CudarcView<'_, T>> {
                let (own, stream) = (self.raw().stream(), reported_stream(self.raw().stream(), ctx)?);
                Ok(CudarcView { ptr: self.device_ptr(), len: self.len, own, stream, _borrow: PhantomData })
            }

            /// The elements lent to cudarc for writing (see [`cudarc_view`](Self::cudarc_view)).
            pub fn cudarc_view_mut(&mut self, ctx: &Arc<CudaContext>) -> Result<CudarcViewMut<'_, T>> {
                let (own, stream) = (self.raw().stream(), reported_stream(self.raw().stream(), ctx)?);
                Ok(CudarcViewMut { ptr: self.device_ptr(), len: self.len, own, stream, _borrow: PhantomData })
            }
        }
    };
}
lend_to_cudarc!(DeviceBuffer);
lend_to_cudarc!(DeviceUvector);
