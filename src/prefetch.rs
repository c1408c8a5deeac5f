//! Prefetching managed memory to a device (RMM's `rmm::prefetch`).

use crate::device::DeviceId;
use crate::driver::{self, DevicePtr};
use crate::error::Result;
use crate::stream::CudaStreamView;

/// Migrates `bytes` at `ptr` to `device` (a negative id, `cudaCpuDeviceId`, is the host), in
/// stream order on `stream`, when they are managed memory; for any other memory (device, pinned,
/// host, null) it does nothing, as RMM's `rmm::prefetch` does. The memory type is asked first, so
/// no driver call fails for other memory.
pub fn prefetch(ptr: *const u8, bytes: usize, device: DeviceId, stream: CudaStreamView) -> Result<()> {
    if ptr.is_null() || bytes == 0 || !driver::pointer_is_managed(DevicePtr::from_ptr(ptr))? {
        return Ok(());
    }
    driver::mem_prefetch_async(DevicePtr::from_ptr(ptr), bytes, device, stream.stream_handle())
}

/// [`prefetch`] to the device of the current context.
pub(crate) fn prefetch_to_current_device(ptr: *const u8, bytes: usize, stream: CudaStreamView) -> Result<()> {
    if ptr.is_null() || bytes == 0 || !driver::pointer_is_managed(DevicePtr::from_ptr(ptr))? {
        return Ok(());
    }
    driver::mem_prefetch_async(DevicePtr::from_ptr(ptr), bytes, driver::current_device()?, stream.stream_handle())
}
