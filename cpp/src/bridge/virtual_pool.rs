//! `virtual_pool_memory_resource`: its constructor, `release_above` and its queries.

use super::ffi::Outcome;
use super::handle::{query_outcome, Direct, RustResource};
use rmm::resource::virtual_pool::VirtualMemoryOptions;
use rmm::resource::{SharedResource, VirtualPoolMemoryResource};
use rmm::DeviceId;
use std::sync::Arc;

/// RMM's class name, which a query asked of another kind of resource names.
const KIND: &str = "virtual_pool_memory_resource";

/// A virtual pool reserving `maximum_size` bytes of addresses, `initial_size` of them mapped at
/// once, on `device` (the current device when `has_device` is false), giving `peers` access, in
/// granules of `granule` bytes (0: the device's recommended granularity), exportable as POSIX file
/// descriptors when `export_posix_fd`.
pub(crate) fn new_virtual_pool_memory_resource(
    maximum_size: usize,
    initial_size: usize,
    device: i32,
    has_device: bool,
    peers: &[i32],
    granule: usize,
    export_posix_fd: bool,
) -> Box<RustResource> {
    let mut direct = Direct::None;
    let mut made = RustResource::make(KIND, || {
        let options = VirtualMemoryOptions {
            device: has_device.then_some(DeviceId(device)),
            peers: peers.iter().copied().map(DeviceId).collect(),
            granule: (granule != 0).then_some(granule),
            export_posix_fd,
        };
        let pool = Arc::new(VirtualPoolMemoryResource::with_options(maximum_size, initial_size, &options)?);
        direct = Direct::VirtualPool(Arc::clone(&pool));
        Ok(pool as SharedResource)
    });
    // Calls from C++ reach the pool without dynamic dispatch, as the classic pool's do.
    made.direct = direct;
    made
}

/// `r` as a virtual pool, or the logic error of a query asked of another kind.
fn virtual_pool<'a>(r: &'a RustResource, query: &str) -> rmm::Result<&'a VirtualPoolMemoryResource> {
    r.kind::<VirtualPoolMemoryResource>(query, KIND)
}

/// Unmaps whole free granules until at most `keep` bytes stay mapped; the bytes unmapped.
pub(crate) fn virtual_pool_release_above(r: &RustResource, keep: usize) -> Outcome {
    query_outcome("release_above", || virtual_pool(r, "release_above")?.release_above(keep))
}

/// Bytes of physical memory mapped into the reservation.
pub(crate) fn virtual_pool_mapped_bytes(r: &RustResource) -> Outcome {
    query_outcome("mapped_bytes", || Ok(virtual_pool(r, "mapped_bytes")?.mapped_bytes()))
}

/// Bytes of addresses reserved.
pub(crate) fn virtual_pool_reserved_bytes(r: &RustResource) -> Outcome {
    query_outcome("reserved_bytes", || Ok(virtual_pool(r, "reserved_bytes")?.reserved_bytes()))
}

/// Bytes of one granule.
pub(crate) fn virtual_pool_granularity(r: &RustResource) -> Outcome {
    query_outcome("granularity", || Ok(virtual_pool(r, "granularity")?.granularity()))
}

/// Bytes the pool holds (handed out and free).
pub(crate) fn virtual_pool_size(r: &RustResource) -> Outcome {
    query_outcome("pool_size", || Ok(virtual_pool(r, "pool_size")?.pool_size()))
}

/// A POSIX file descriptor for the physical memory of the mapped granule at `addr`; the caller
/// owns it.
pub(crate) fn virtual_pool_export_posix_fd(r: &RustResource, addr: usize) -> Outcome {
    query_outcome("export_posix_fd", || {
        let fd = virtual_pool(r, "export_posix_fd")?.export_posix_fd(addr)?;
        Ok(fd as usize)
    })
}

#[cfg(test)]
mod tests {
    use super::super::ffi::ErrorKind;
    use super::super::plain::new_host_memory_resource;
    use super::*;

    #[test]
    fn queries_of_another_kind_are_logic_errors_naming_both() {
        let host = new_host_memory_resource();
        for out in [
            virtual_pool_mapped_bytes(&host),
            virtual_pool_reserved_bytes(&host),
            virtual_pool_granularity(&host),
            virtual_pool_size(&host),
            virtual_pool_release_above(&host, 0),
            virtual_pool_export_posix_fd(&host, 0),
        ] {
            assert_eq!(out.kind, ErrorKind::Logic, "{}", out.message);
            assert!(out.message.contains(KIND), "{}", out.message);
        }
    }

    #[test]
    fn construction_fails_into_the_handle_or_makes_a_pool() {
        let made = new_virtual_pool_memory_resource(1 << 30, 0, 0, false, &[], 0, false);
        let status = made.status();
        match status.kind {
            // A machine with a VMM device: the pool reserved and mapped nothing yet.
            ErrorKind::Ok => assert_eq!(virtual_pool_mapped_bytes(&made).ptr, 0),
            // No driver or no device (cuda_error), or a device without VMM (logic_error).
            ErrorKind::Cuda | ErrorKind::Logic => assert!(!status.message.is_empty()),
            other => panic!("{other:?}: {}", status.message),
        }
    }
}
