//! Memory advice (`cuMemAdvise`): where the driver should prefer to keep pages of a range.

use super::{check, with_context, DeviceId, DevicePtr};
use crate::error::Result;
use cudarc::driver::sys;

/// Where pages should live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PreferredLocation {
    /// The memory of device `.0`.
    Device(DeviceId),
    /// Host memory.
    Host,
}

/// Sets the preferred location of the `bytes` at `ptr` (`CU_MEM_ADVISE_SET_PREFERRED_LOCATION`).
/// The range must be managed memory, or system memory on a device with pageable memory access.
pub(crate) fn mem_advise_preferred_location(ptr: DevicePtr, bytes: usize, location: PreferredLocation) -> Result<()> {
    let (type_, id) = match location {
        PreferredLocation::Device(d) => (sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, d.0),
        PreferredLocation::Host => (sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST, 0),
    };
    let location = sys::CUmemLocation { type_, id };
    let advice = sys::CUmem_advise::CU_MEM_ADVISE_SET_PREFERRED_LOCATION;
    let status = with_context(|| {
        // SAFETY: the driver is loaded; advice on a range it cannot advise is an error code, and
        // the advice changes no data, only where pages migrate to.
        unsafe { sys::cuMemAdvise_v2(ptr.raw(), bytes, advice, location) }
    })?;
    check(status, "cuMemAdvise")
}
