//! Memory advice (`cuMemAdvise`): where the driver should prefer to keep pages of a range.

#[cfg(feature = "cuda-12")]
use super::CU_DEVICE_CPU;
use super::{check, entry_point, missing, with_context, DeviceId, DevicePtr, EntryPoint, Versioned};
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
/// Drivers before 12.2 are given the device ordinal (`CU_DEVICE_CPU` for the host) through
/// `cuMemAdvise`.
pub(crate) fn mem_advise_preferred_location(ptr: DevicePtr, bytes: usize, location: PreferredLocation) -> Result<()> {
    let advice = sys::CUmem_advise::CU_MEM_ADVISE_SET_PREFERRED_LOCATION;
    let status = match entry_point(Versioned::Advise)? {
        EntryPoint::Newer => {
            let (type_, id) = match location {
                PreferredLocation::Device(d) => (sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, d.0),
                PreferredLocation::Host => (sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST, 0),
            };
            let location = sys::CUmemLocation { type_, id };
            with_context(|| {
                // SAFETY: the driver exports the symbol (entry_point); advice on a range it cannot
                // advise is an error code, and the advice changes no data, only where pages
                // migrate to.
                unsafe { sys::cuMemAdvise_v2(ptr.raw(), bytes, advice, location) }
            })?
        }
        #[cfg(feature = "cuda-12")]
        EntryPoint::Older => {
            let device = match location {
                PreferredLocation::Device(d) => d.0,
                PreferredLocation::Host => CU_DEVICE_CPU,
            };
            with_context(|| {
                // SAFETY: as for cuMemAdvise_v2 above, with a device ordinal for the location.
                unsafe { sys::cuMemAdvise(ptr.raw(), bytes, advice, device) }
            })?
        }
        _ => return Err(missing(Versioned::Advise)),
    };
    check(status, "cuMemAdvise")
}
