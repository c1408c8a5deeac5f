//! Stream-ordered copies and fills of memory the driver can address (device, managed, pinned or
//! pageable host memory: unified addressing tells the driver which is which).

use super::{check, with_context};
use crate::error::Result;
use crate::stream::CudaStreamView;
use cudarc::driver::sys;

/// Enqueues a copy of `bytes` from `src` to `dst` on `stream` (`cuMemcpyAsync`). A copy from or to
/// pageable host memory has finished reading or writing that memory when this returns; any other
/// copy may still be running.
///
/// Callers (all in this crate) pass ranges they own for the whole copy: the driver writes host
/// memory at any host address it is given, which it cannot check. They are `RawBuffer`'s ranges
/// inside its own block (its resource's contract says what the block is), the `unsafe` functions
/// of `crate::copy`, and the C API's live blocks.
pub(crate) fn memcpy_async(dst: usize, src: usize, bytes: usize, stream: CudaStreamView) -> Result<()> {
    // SAFETY: the driver is loaded (with_context checks); both ranges are the caller's, for
    // `bytes` bytes, until the copy has run (see above).
    let status = with_context(|| unsafe {
        sys::cuMemcpyAsync(dst as sys::CUdeviceptr, src as sys::CUdeviceptr, bytes, stream.as_raw())
    })?;
    check(status, "cuMemcpyAsync")
}

/// Enqueues setting `bytes` bytes at `dst` to `value` on `stream` (`cuMemsetD8Async`). As for
/// [`memcpy_async`], callers pass a range they own for the whole fill.
pub(crate) fn memset_d8_async(dst: usize, value: u8, bytes: usize, stream: CudaStreamView) -> Result<()> {
    // SAFETY: the driver is loaded (with_context checks); the caller owns the `bytes` at `dst`
    // until the fill has run.
    let status =
        with_context(|| unsafe { sys::cuMemsetD8Async(dst as sys::CUdeviceptr, value, bytes, stream.as_raw()) })?;
    check(status, "cuMemsetD8Async")
}
