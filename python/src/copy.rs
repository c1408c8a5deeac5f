//! Raw copies between addresses for `rmm.pylibrmm.device_buffer`, and its module functions
//! `copy_ptr_to_host`, `copy_host_to_ptr` and `copy_device_to_ptr`.
//!
//! A copy goes through the driver (`cuMemcpyAsync`, which infers host or device from the
//! addresses) on the given stream, except where both sides are known to be host memory (a buffer
//! of a host resource and a Python host buffer) or there is no CUDA driver at all (then every
//! address is host memory): the CPU copies those at once. As in RMM, a copy on the default stream
//! is waited for; on another stream a copy between device addresses may still run when the call
//! returns. A copy from or to a Python host object (bytes, a NumPy array) is waited for on every
//! stream before the object's buffer is released ([`wait_before_release`]).

use crate::error::{to_py, IntoPy};
use crate::host_buffer::HostBuffer;
use crate::stream::StreamArg;
use pyo3::prelude::*;
use rmm::CudaStreamView;
use std::sync::OnceLock;

/// Whether a CUDA driver with a device is present (asked once: it does not change).
pub fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(rmm::cuda_available)
}

/// Refuses, as a `ValueError`, a caller's address from which (`to` false) or to which no copy of
/// `bytes` bytes can be made: null, unmapped, not readable (not writable), or a range that runs
/// off into nothing ([`rmm::pointer::check`]). Memory of any kind the driver's copy accepts
/// passes: device, managed, page-locked and pageable host memory.
pub fn check_user_pointer(addr: usize, bytes: usize, to: bool) -> PyResult<()> {
    let access = if to { rmm::pointer::Access::CopyTo } else { rmm::pointer::Access::CopyFrom };
    rmm::pointer::check(addr, bytes, access).py()
}

/// Copies `n` bytes from `src` to `dst`: on the CPU when `host_to_host` or without a driver, else
/// enqueued on `stream`. Returns whether a copy was enqueued on the stream.
///
/// # Safety
/// `src` must be readable and `dst` writable for `n` bytes until the copy has run; for a copy the
/// driver makes, the two ranges must not overlap.
pub unsafe fn copy_bytes(
    dst: usize,
    src: usize,
    n: usize,
    stream: CudaStreamView,
    host_to_host: bool,
) -> rmm::Result<bool> {
    if n == 0 {
        return Ok(false);
    }
    if host_to_host || !driver_present() {
        // SAFETY: the caller's contract; `copy` allows overlapping ranges.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, n) };
        return Ok(false);
    }
    // SAFETY: the caller's contract.
    unsafe { rmm::copy::copy_async(dst as *mut u8, src as *const u8, n, stream)? };
    Ok(true)
}

/// Waits for `stream` when a copy was enqueued on it and it is the default stream (RMM's rule).
pub fn sync_if_default(stream: CudaStreamView, enqueued: bool) -> rmm::Result<()> {
    if enqueued && stream.is_default() {
        stream.synchronize()
    } else {
        Ok(())
    }
}

/// Waits for a copy enqueued on `stream` that reads or writes a Python host buffer, before the
/// caller releases that buffer: once released its exporter may free or reuse the memory, and a
/// pinned (page-locked) buffer is read or written by the copy engine until the copy has run on
/// the stream. (The driver is done with a pageable buffer when `cuMemcpyAsync` returns, but the
/// two cannot be told apart without asking the driver about every buffer.) RMM waits only on the
/// default stream, and so reads or writes a released pinned buffer.
pub fn wait_before_release(stream: CudaStreamView, enqueued: bool) -> rmm::Result<()> {
    if enqueued {
        stream.synchronize()
    } else {
        Ok(())
    }
}

/// Copies `len(hb)` bytes from the device address `db` into the writable host buffer `hb`.
#[pyfunction]
#[pyo3(signature = (db, hb, stream = StreamArg::Omitted))]
pub fn copy_ptr_to_host(py: Python<'_>, db: usize, hb: &Bound<'_, PyAny>, stream: StreamArg<'_>) -> PyResult<()> {
    let stream = stream.resolve(py)?;
    let view = stream.get().view();
    let host = HostBuffer::get(hb, true, "hb")?;
    let (dst, n) = (host.addr(), host.len());
    check_user_pointer(db, n, false)?;
    py.detach(|| {
        // SAFETY: `host` holds the destination until it is dropped, after this closure, which
        // waits for the copy; the caller vouches for `db`.
        let enqueued = unsafe { copy_bytes(dst, db, n, view, false)? };
        wait_before_release(view, enqueued)
    })
    .py()?;
    drop(host);
    Ok(())
}

/// Copies the host buffer `hb` to the device address `db`.
#[pyfunction]
#[pyo3(signature = (hb, db, stream = StreamArg::Omitted))]
pub fn copy_host_to_ptr(py: Python<'_>, hb: &Bound<'_, PyAny>, db: usize, stream: StreamArg<'_>) -> PyResult<()> {
    let stream = stream.resolve(py)?;
    let view = stream.get().view();
    let host = HostBuffer::get(hb, false, "hb")?;
    let (src, n) = (host.addr(), host.len());
    check_user_pointer(db, n, true)?;
    py.detach(|| {
        // SAFETY: `host` holds the source until it is dropped, after this closure, which waits
        // for the copy (a pinned source is read until the copy has run); the caller vouches for
        // `db`.
        let enqueued = unsafe { copy_bytes(db, src, n, view, false)? };
        wait_before_release(view, enqueued)
    })
    .py()?;
    drop(host);
    Ok(())
}

/// Copies `count` bytes from the device address `d_src` to `d_dst`, on `stream` (not waited for,
/// as in RMM).
#[pyfunction]
#[pyo3(signature = (d_src, d_dst, count, stream = StreamArg::Omitted))]
pub fn copy_device_to_ptr(
    py: Python<'_>,
    d_src: usize,
    d_dst: usize,
    count: usize,
    stream: StreamArg<'_>,
) -> PyResult<()> {
    let stream = stream.resolve(py)?;
    let view = stream.get().view();
    check_user_pointer(d_src, count, false)?;
    check_user_pointer(d_dst, count, true)?;
    // SAFETY: the caller vouches for both device ranges, as with cudaMemcpyAsync.
    py.detach(|| unsafe { copy_bytes(d_dst, d_src, count, view, false) }).map(|_| ()).map_err(to_py)
}

/// Raises ValueError unless the device can address the `nbytes` bytes at `ptr` (device, managed
/// or page-locked host memory; without a driver, writable host memory): for `librmm_cffi`'s
/// arrays over a caller's address.
#[pyfunction]
fn _check_device_pointer(ptr: usize, nbytes: usize) -> PyResult<()> {
    rmm::pointer::check(ptr, nbytes, rmm::pointer::Access::Device).py()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_check_device_pointer, m)?)?;
    m.add_function(wrap_pyfunction!(copy_ptr_to_host, m)?)?;
    m.add_function(wrap_pyfunction!(copy_host_to_ptr, m)?)?;
    m.add_function(wrap_pyfunction!(copy_device_to_ptr, m)?)?;
    Ok(())
}
