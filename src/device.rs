//! Device ids and current-device helpers.

use crate::driver;
use crate::error::{Error, Result};

pub use crate::driver::DeviceId;

impl DeviceId {
    /// The device of the context current on this thread (device 0 when none is current, as with
    /// the runtime).
    pub fn current() -> Result<DeviceId> {
        driver::current_device()
    }

    /// The current device, or [`DeviceId::NONE`] where no driver is installed: the device a
    /// buffer records when it is made, to make it current again for its later allocations,
    /// copies and its free.
    pub fn current_or_none() -> Result<DeviceId> {
        match DeviceId::current() {
            Err(Error::NoDriver(_)) => Ok(DeviceId::NONE),
            other => other,
        }
    }
}

/// Makes a device current on this thread while alive, and the context that was current before
/// current again when dropped (RMM's `cuda_set_device_raii`). For the device already current, or
/// [`DeviceId::NONE`], it changes nothing and costs one current-device query.
///
/// ```no_run
/// use rmm::device::DeviceGuard;
/// use rmm::DeviceId;
/// # fn main() -> rmm::Result<()> {
/// {
///     let _on_1 = DeviceGuard::new(DeviceId(1))?;
///     // ... device 1 is current here
/// }
/// // the device current before is current again
/// # Ok(())
/// # }
/// ```
#[must_use = "the previous device is made current again when the guard is dropped"]
pub struct DeviceGuard {
    _inner: driver::DeviceGuard,
}

impl DeviceGuard {
    /// Makes `device` current until the guard is dropped. A device that does not exist is
    /// [`Error::InvalidArgument`], and nothing changes.
    pub fn new(device: DeviceId) -> Result<DeviceGuard> {
        Ok(DeviceGuard { _inner: driver::DeviceGuard::set(device)? })
    }
}

impl std::fmt::Debug for DeviceGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceGuard").finish_non_exhaustive()
    }
}

/// The number of CUDA devices.
pub fn device_count() -> Result<usize> {
    driver::device_count().map(|n| n as usize)
}

/// Makes `device` current on this thread (`cudaSetDevice`).
pub fn set_current_device(device: DeviceId) -> Result<()> {
    let count = device_count()?;
    if device.0 < 0 || device.0 as usize >= count {
        return Err(Error::InvalidArgument(format!(
            "device {} does not exist; this machine has {count} device(s)",
            device.0
        )));
    }
    driver::make_primary_current(device)
}

/// Runs `f` with `device` current and restores the previous device afterwards, like RMM's
/// `cuda_set_device_raii`.
pub fn with_device<T>(device: DeviceId, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let previous = DeviceId::current()?;
    if previous == device {
        return f();
    }
    set_current_device(device)?;
    let out = f();
    set_current_device(previous)?;
    out
}

/// The CUDA version the installed driver supports, as `1000 * major + 10 * minor` (13000 for
/// 13.0): what `cudaDriverGetVersion` answers.
pub fn driver_version() -> Result<i32> {
    driver::ensure_driver()?;
    driver::driver_version()
}

/// `(free, total)` bytes of the current device.
pub fn available_device_memory() -> Result<(usize, usize)> {
    driver::mem_get_info()
}

/// A CUDA context, kept valid for the rest of the process: see
/// [`current_context_kept`].
pub use crate::driver::ContextHandle;

/// The context current on this thread (the current device's primary context, made current when
/// none is), retained so that it stays valid for the rest of the process. For an object that must
/// later synchronise the context it was made in, from any thread ([`synchronize_context`]).
/// Exists for the legacy API (`rmmInitialize` keeps its context, `rmmFinalize` synchronises it);
/// hidden from the docs for that reason.
#[doc(hidden)]
pub fn current_context_kept() -> Result<ContextHandle> {
    driver::current_context_kept()
}

/// Waits for all work of `context` (one [`current_context_kept`] returned), from any thread: the
/// context is made current for the call and the caller's current context is put back. Exists for
/// the legacy API; hidden from the docs for that reason.
#[doc(hidden)]
pub fn synchronize_context(context: ContextHandle) -> Result<()> {
    driver::synchronize_context(context)
}

/// The start of the driver allocation that device address `ptr` lies in (`cuMemGetAddressRange`):
/// for a block of a pool, the chunk it was carved from. An address the driver does not know is an
/// error.
pub fn allocation_base(ptr: usize) -> Result<usize> {
    Ok(driver::mem_allocation_base(driver::DevicePtr::new(ptr))?.addr())
}

/// `pct` percent of the current device's free memory, rounded down to a multiple of 256: the usual
/// way to size a pool's initial allocation.
pub fn percent_of_free_device_memory(pct: u32) -> Result<usize> {
    if pct > 100 {
        return Err(Error::InvalidArgument(format!("percent {pct} is above 100")));
    }
    let (free, _) = available_device_memory()?;
    Ok(percent_of(free, pct))
}

fn percent_of(free: usize, pct: u32) -> usize {
    let bytes = (free as u128 * pct as u128 / 100) as usize;
    bytes & !(crate::DEFAULT_ALIGNMENT - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_rounds_down_to_256() {
        assert_eq!(percent_of(1000, 50), 256);
        assert_eq!(percent_of(1 << 30, 100), 1 << 30);
        assert_eq!(percent_of(12345, 0), 0);
    }

    #[test]
    fn percent_above_100_is_rejected_before_any_cuda_call() {
        assert!(matches!(percent_of_free_device_memory(101), Err(Error::InvalidArgument(_))));
    }
}
