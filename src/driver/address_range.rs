//! The driver allocation a device pointer lies in (`cuMemGetAddressRange`).

use super::{check, ensure_context, DevicePtr};
use crate::error::Result;
use cudarc::driver::sys;

/// The start of the driver allocation (`cuMemAlloc`, `cuMemAllocManaged`, ...) that contains
/// `ptr`. The caller passes an address it knows the driver handed out, so the call does not fail.
pub(crate) fn mem_allocation_base(ptr: DevicePtr) -> Result<DevicePtr> {
    ensure_context()?;
    let mut base: sys::CUdeviceptr = 0;
    // SAFETY: the driver is loaded and a context is current; base is a valid out pointer and the
    // size out pointer may be null. An unknown address is reported as an error code.
    let status = unsafe { sys::cuMemGetAddressRange_v2(&mut base, std::ptr::null_mut(), ptr.raw()) };
    check(status, "cuMemGetAddressRange")?;
    Ok(DevicePtr::new(base as usize))
}
