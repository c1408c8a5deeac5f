//! Raw, stream-ordered copies and fills of memory the driver can address: device, managed, pinned
//! and pageable host memory (unified addressing tells the driver which is which). For code that
//! holds raw addresses, such as the Python face; typed code uses [`crate::DeviceBuffer`].

use crate::driver::{self, DevicePtr};
use crate::error::Result;
use crate::pointer::{check, Access};
use crate::stream::CudaStreamView;

/// Enqueues a copy of `bytes` bytes from `src` to `dst` on `stream` (`cuMemcpyAsync`). A copy from
/// or to pageable host memory has finished with that memory when this returns; any other copy may
/// still be running: synchronise `stream` before reading `dst` on the host or reusing `src`.
///
/// # Safety
/// `src` must be readable and `dst` writable for `bytes` bytes until the copy has run, and the two
/// ranges must not overlap.
pub unsafe fn copy_async(dst: *mut u8, src: *const u8, bytes: usize, stream: CudaStreamView) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the ranges are readable and writable for `bytes` bytes until the copy has run and do
    // not overlap (this function's contract); a view names a live stream.
    unsafe { driver::memcpy_async(DevicePtr::from_ptr(dst), DevicePtr::from_ptr(src), bytes, stream.stream_handle()) }
}

/// As [`copy_async`], for addresses a caller handed over: first refuses, with
/// [`crate::Error::BadPointer`], a source or destination range that no copy can use (null,
/// unmapped, a host destination that is not writable, a range that runs off its memory; see
/// [`crate::pointer::check`]), where the driver would read or write it on the CPU and kill the
/// process. Asks the driver up to four questions first: for code that copies from raw addresses it
/// did not allocate.
///
/// # Safety
/// As [`copy_async`]: the check finds memory that is not there, not memory that is another
/// owner's or freed before the copy has run.
pub unsafe fn copy_async_checked(dst: *mut u8, src: *const u8, bytes: usize, stream: CudaStreamView) -> Result<()> {
    check(src as usize, bytes, Access::CopyFrom)?;
    check(dst as usize, bytes, Access::CopyTo)?;
    // SAFETY: the caller's contract.
    unsafe { copy_async(dst, src, bytes, stream) }
}

/// Enqueues setting `bytes` bytes at `dst` to `value` on `stream` (`cuMemsetD8Async`).
///
/// # Safety
/// `dst` must be writable for `bytes` bytes until the fill has run.
pub unsafe fn fill_async(dst: *mut u8, value: u8, bytes: usize, stream: CudaStreamView) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: `dst` is writable for `bytes` bytes until the fill has run (this function's
    // contract); a view names a live stream.
    unsafe { driver::memset_d8_async(DevicePtr::from_ptr(dst), value, bytes, stream.stream_handle()) }
}
