//! Stream-ordered copies and fills of memory the driver can address (device, managed, pinned or
//! pageable host memory: unified addressing tells the driver which is which).

use super::{check, with_context, DevicePtr, StreamHandle};
use crate::error::Result;
use cudarc::driver::sys;

/// Enqueues a copy of `bytes` from `src` to `dst` on `stream` (`cuMemcpyAsync`). A copy from or to
/// pageable host memory has finished reading or writing that memory when this returns; any other
/// copy may still be running.
///
/// # Safety
/// `src` must be readable and `dst` writable for `bytes` bytes until the copy has run, the two
/// ranges must not overlap, and `stream` must name a live stream: the driver writes host memory at
/// any host address it is given, which it cannot check.
pub(crate) unsafe fn memcpy_async(dst: DevicePtr, src: DevicePtr, bytes: usize, stream: StreamHandle) -> Result<()> {
    // SAFETY: the driver is loaded (with_context checks); both ranges are the caller's, for
    // `bytes` bytes, until the copy has run (this function's contract).
    let status = with_context(|| unsafe { sys::cuMemcpyAsync(dst.raw(), src.raw(), bytes, stream.raw()) })?;
    check(status, "cuMemcpyAsync")
}

/// Enqueues setting `bytes` bytes at `dst` to `value` on `stream` (`cuMemsetD8Async`).
///
/// # Safety
/// `dst` must be writable for `bytes` bytes until the fill has run, and `stream` must name a live
/// stream.
pub(crate) unsafe fn memset_d8_async(dst: DevicePtr, value: u8, bytes: usize, stream: StreamHandle) -> Result<()> {
    // SAFETY: the driver is loaded (with_context checks); the caller owns the `bytes` at `dst`
    // until the fill has run (this function's contract).
    let status = with_context(|| unsafe { sys::cuMemsetD8Async(dst.raw(), value, bytes, stream.raw()) })?;
    check(status, "cuMemsetD8Async")
}
