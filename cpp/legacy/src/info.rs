//! `rmmGetInfo`: the device's free and total memory.

use super::codes::{code, status, RmmError};
use super::guarded;
use super::session::with_session;
use rmm::device::{available_device_memory, with_device};
use rmm::RawStream;

/// `rmmError_t rmmGetInfo(size_t* freeSize, size_t* totalSize, cudaStream_t stream)`: free and
/// total memory of the device `rmmInitialize` ran on, in bytes (`cuMemGetInfo`; a pool's free
/// blocks count as used, since the device has given them out). `RMM_ERROR_NOT_INITIALIZED` before
/// `rmmInitialize`, `RMM_ERROR_INVALID_ARGUMENT` for a null out pointer.
///
/// # Safety
/// `freeSize` and `totalSize` are null or writable.
pub unsafe fn rmmGetInfo(free_size: *mut usize, total_size: *mut usize, _stream: RawStream) -> RmmError {
    guarded(RmmError::UNKNOWN, || {
        code(with_session(|s| {
            if free_size.is_null() || total_size.is_null() {
                return Err(RmmError::INVALID_ARGUMENT);
            }
            let (free, total) = status(with_device(s.device, available_device_memory))?;
            // SAFETY: both are not null (checked above) and writable, as the caller promises.
            unsafe {
                free_size.write(free);
                total_size.write(total);
            }
            Ok(())
        }))
    })
}
