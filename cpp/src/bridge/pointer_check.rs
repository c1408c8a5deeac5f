//! The check of a caller's address before `rmm::device_buffer` copies from it: a plain C symbol
//! beside the bridge, as the allocation fast paths are, since it returns a message into a
//! caller's buffer rather than an `Outcome`.

use super::outcome::caught;
use rmm::pointer::{check, Access};

/// Checks that the `bytes` bytes at `addr` can be the source of a copy through the driver
/// (device, managed or pinned memory, or readable host memory: [`rmm::pointer::check`]). Returns
/// 0 when they can; else writes the reason, cut to `capacity` bytes, into `message` and returns
/// its length (at least 1). A panic is reported the same way; none crosses this boundary.
///
/// # Safety
/// `message` is valid for writes of `capacity` bytes (or `capacity` is 0).
#[no_mangle]
pub unsafe extern "C" fn rmm_rs_check_copy_source(
    addr: usize,
    bytes: usize,
    message: *mut u8,
    capacity: usize,
) -> usize {
    let reason = match caught("check_copy_source", || check(addr, bytes, Access::CopyFrom)) {
        Ok(Ok(())) => return 0,
        Ok(Err(e)) => e.to_string(),
        Err(panic) => panic,
    };
    let text = reason.as_bytes();
    let n = text.len().min(capacity);
    if n > 0 {
        // SAFETY: the caller gives `capacity` writable bytes at `message`; n <= capacity, and the
        // source is a separate Rust string.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), message, n) };
    }
    n.max(1)
}
