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
//! stream.memset_zeros(&mut buf.cudarc_view_mut(&ctx))?; // cudarc writes our memory
//! assert_eq!(buf.to_vec()?, [0.0; 3]);
//! # Ok(())
//! # }
//! ```
//!
//! A view lent to cudarc carries the buffer's stream. Work that cudarc enqueues on that stream
//! needs no synchronisation; work on another cudarc stream first waits for the buffer's stream,
//! and the host then waits for that work when cudarc releases the pointer, so that the buffer's
//! later work and its free never overtake it.

use super::raw::RawBuffer;
use super::{DeviceBuffer, DeviceUvector};
use crate::stream::CudaStreamView;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaContext, CudaStream as CudarcStream, DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop};
use std::marker::PhantomData;
use std::sync::Arc;

impl From<&CudarcStream> for CudaStreamView {
    /// A view of a cudarc stream's handle; the cudarc stream must outlive the work that uses it.
    fn from(stream: &CudarcStream) -> Self {
        CudaStreamView::from_raw(stream.cu_stream())
    }
}

impl CudaStreamView {
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
    stream: Arc<CudarcStream>,
    _borrow: PhantomData<&'a [T]>,
}

/// A buffer lent to cudarc for writing (`&mut [T]` on the device): it implements cudarc's
/// [`DevicePtr`] and [`DevicePtrMut`]. cudarc never frees it.
#[derive(Debug)]
pub struct CudarcViewMut<'a, T> {
    ptr: CUdeviceptr,
    len: usize,
    stream: Arc<CudarcStream>,
    _borrow: PhantomData<&'a mut [T]>,
}

/// The buffer's stream as a cudarc stream of `ctx`.
fn borrowed_stream(raw: &RawBuffer, ctx: &Arc<CudaContext>) -> Arc<CudarcStream> {
    // SAFETY: a buffer's stream must outlive the buffer (it is freed there), and the view that
    // holds this stream borrows the buffer.
    unsafe { raw.stream().as_cudarc_stream(ctx) }
}

/// What cudarc does around its use of our pointer on `using`: nothing on the buffer's own stream;
/// on another stream, `using` first waits for the buffer's stream, and the host waits for `using`
/// once the use is enqueued (the returned guard), so no later work on the buffer's stream, its
/// free included, can overtake the use.
fn order_use<'b>(own: &CudarcStream, using: &'b CudarcStream) -> SyncOnDrop<'b> {
    if own.cu_stream() == using.cu_stream() {
        return SyncOnDrop::Sync(None);
    }
    using.context().record_err(using.join(own));
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
                (self.ptr, order_use(&self.stream, stream))
            }
        }
    };
}
device_slice!(CudarcView);
device_slice!(CudarcViewMut);

impl<T> DevicePtrMut<T> for CudarcViewMut<'_, T> {
    fn device_ptr_mut<'b>(&'b mut self, stream: &'b CudarcStream) -> (CUdeviceptr, SyncOnDrop<'b>) {
        (self.ptr, order_use(&self.stream, stream))
    }
}

macro_rules! lend_to_cudarc {
    ($buffer:ident) => {
        impl<T> $buffer<T> {
            /// The address of the first element as a cudarc device pointer (0 when nothing is
            /// allocated): a kernel argument, `builder.arg(&buf.device_ptr())`.
            pub fn device_ptr(&self) -> CUdeviceptr {
                self.raw().ptr() as CUdeviceptr
            }

            /// The elements lent to cudarc for reading. `ctx` must be the context the memory and
            /// the buffer's stream belong to (for the primary context, `CudaContext::new(ordinal)`).
            pub fn cudarc_view(&self, ctx: &Arc<CudaContext>) -> CudarcView<'_, T> {
                let stream = borrowed_stream(self.raw(), ctx);
                CudarcView { ptr: self.device_ptr(), len: self.len, stream, _borrow: PhantomData }
            }

            /// The elements lent to cudarc for writing (see [`cudarc_view`](Self::cudarc_view)).
            pub fn cudarc_view_mut(&mut self, ctx: &Arc<CudaContext>) -> CudarcViewMut<'_, T> {
                let stream = borrowed_stream(self.raw(), ctx);
                CudarcViewMut { ptr: self.device_ptr(), len: self.len, stream, _borrow: PhantomData }
            }
        }
    };
}
lend_to_cudarc!(DeviceBuffer);
lend_to_cudarc!(DeviceUvector);
