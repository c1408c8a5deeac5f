//! Device attributes (`cuDeviceGetAttribute`): what the capability checks of
//! [`crate::capabilities`] are built on.

use super::{check, ensure_driver, DeviceId};
use crate::error::Result;
use cudarc::driver::sys;

/// The value of `attribute` for `device`. The driver needs no context for it.
pub(crate) fn device_attribute(device: DeviceId, attribute: sys::CUdevice_attribute) -> Result<i32> {
    ensure_driver()?;
    let mut value = 0;
    // SAFETY: the driver is initialised; value is a valid out pointer. A bad ordinal or an
    // attribute the driver does not know is reported as an error code.
    check(unsafe { sys::cuDeviceGetAttribute(&mut value, attribute, device.0) }, "cuDeviceGetAttribute")?;
    Ok(value)
}
