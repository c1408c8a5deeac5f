//! Typed, owning buffers of device memory: [`DeviceBuffer`] (fixed length) and [`DeviceUvector`]
//! (growable, RMM's `device_uvector`).
//!
//! A buffer allocates from a [`MemoryResource`](crate::MemoryResource) (a given one, or the
//! current device resource) on a stream, and frees on its stream when dropped. Copies to and from
//! host slices come in two forms: `unsafe` asynchronous ones, where the caller keeps the host
//! memory alive until the stream has run the copy, and safe ones that wait for the stream.
//! Zero-length buffers allocate nothing; a length whose size in bytes overflows `usize` is
//! [`Error::SizeOverflow`].
//!
//! A buffer belongs to the device that was current when it was made (`device()`): it makes that
//! device current again for each later allocation, copy and free (a
//! [`DeviceGuard`](crate::DeviceGuard), RMM's `cuda_set_device_raii`), so a buffer made on device
//! 0 and grown while device 1 is current still grows on device 0.
//!
//! A buffer over a resource that kernels cannot reach (a host resource such as
//! [`HostMemoryResource`](crate::resource::HostMemoryResource)) is copied and filled by the CPU,
//! so the buffer types work, and are tested, without a GPU.
//!
//! ## cudarc
//! [`cudarc`](https://docs.rs/cudarc/0.19) is the Rust crate for the rest of CUDA (kernel launch,
//! cuBLAS, NVRTC). The two meet in these places (see [`cudarc_interop`]):
//! - streams: `CudaStreamView::from(&cudarc_stream)` views a cudarc stream; the other way,
//!   [`CudaStreamView::as_cudarc_stream`](crate::CudaStreamView::as_cudarc_stream) wraps one of ours as a cudarc stream that cudarc will not
//!   destroy (`unsafe`: the wrapper must not outlive the stream);
//! - memory: [`DeviceBuffer::cudarc_view`] and [`DeviceBuffer::cudarc_view_mut`] (and the same on
//!   [`DeviceUvector`]) lend a buffer to cudarc as a slice that implements cudarc's `DevicePtr` /
//!   `DevicePtrMut`, so `memcpy_htod`, `memset_zeros`, `memcpy_dtod` and cuBLAS calls take it;
//!   cudarc never frees it. A kernel takes a buffer's address as a plain argument:
//!   `builder.arg(&buf.device_ptr())`.
//! - cudarc's own allocations (`CudaStream::alloc`) cannot be served by our resources: cudarc has
//!   no allocator hook and frees its `CudaSlice`s itself with `cuMemFree(Async)`. Allocate from a
//!   resource with these buffers instead and lend them to cudarc.

use crate::error::{Error, Result};
use parking_lot::Mutex;

pub mod cudarc_interop;
mod device_buffer;
mod device_uvector;
mod raw;

pub use cudarc_interop::{CudarcView, CudarcViewMut};
pub use device_buffer::DeviceBuffer;
pub use device_uvector::DeviceUvector;

/// Element types a buffer may hold: plain data for which every bit pattern is a valid value, so
/// that bytes copied back from the device (or device memory never written) are always a valid `T`.
///
/// # Safety
/// Every bit pattern of `size_of::<T>()` bytes must be a valid `T`, and `T` must own nothing
/// (no references, no heap pointers, no `Drop`).
pub unsafe trait Pod: Copy + Send + Sync + 'static {}

macro_rules! pod {
    ($($t:ty),*) => { $(
        // SAFETY: every bit pattern is a valid value of a primitive integer or float.
        unsafe impl Pod for $t {}
    )* };
}
pod!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);

// SAFETY: an array of plain data is plain data.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}

/// Bytes of `len` elements of `T`, or [`Error::SizeOverflow`].
pub(crate) fn byte_size<T>(len: usize) -> Result<usize> {
    len.checked_mul(std::mem::size_of::<T>()).ok_or(Error::SizeOverflow { len, element_size: std::mem::size_of::<T>() })
}

/// The alignment a buffer of `T` allocates with: the resources' default, or `T`'s if larger.
pub(crate) fn alignment_of<T>() -> usize {
    crate::DEFAULT_ALIGNMENT.max(std::mem::align_of::<T>())
}

/// The most drop errors kept for [`take_drop_errors`]; later ones are only counted.
const KEPT_DROP_ERRORS: usize = 64;

/// Errors of frees made by `Drop`, which has nowhere to return them, and how many there were.
static DROP_ERRORS: Mutex<(Vec<Error>, usize)> = Mutex::new((Vec::new(), 0));

/// Keeps an error of a free made by a destructor.
pub(crate) fn record_drop_error(e: Error) {
    let mut errors = DROP_ERRORS.lock();
    if errors.0.len() < KEPT_DROP_ERRORS {
        errors.0.push(e);
    }
    errors.1 += 1;
}

/// The errors of frees that buffers made when dropped since the last call (at most 64 are kept),
/// and how many there were in all. Call `free()` on a buffer to get its free's error directly.
pub fn take_drop_errors() -> (Vec<Error>, usize) {
    std::mem::take(&mut *DROP_ERRORS.lock())
}

/// The check of a copy's length against the buffer's, shared by both buffer types.
pub(crate) fn check_same_len(what: &str, given: usize, len: usize) -> Result<()> {
    if given == len {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!("{what}: the host slice has {given} elements, the buffer {len}")))
    }
}

/// The check of an element index, shared by both buffer types.
pub(crate) fn check_index(index: usize, len: usize) -> Result<()> {
    if index < len {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!("element index {index} is out of range for {len} elements")))
    }
}
