//! `virtual_pool_memory_resource` in the pool family: its constructor, `release_above` and its
//! queries.

use super::ffi::Outcome;
use super::outcome::{answer, Context};
use super::pool::{Direct, PoolResource, Pools};
use super::resource::wrong_kind;
use rmm::resource::virtual_pool::VirtualMemoryOptions;
use rmm::resource::VirtualPoolMemoryResource;
use rmm::DeviceId;
use std::sync::Arc;

/// RMM's class name, which a query of it asked of a classic pool names.
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
) -> Box<PoolResource> {
    PoolResource::make(KIND, || {
        let options = VirtualMemoryOptions {
            device: has_device.then_some(DeviceId(device)),
            peers: peers.iter().copied().map(DeviceId).collect(),
            granule: (granule != 0).then_some(granule),
            export_posix_fd,
        };
        let pool = VirtualPoolMemoryResource::with_options(maximum_size, initial_size, &options)?;
        Ok(Direct::Virtual(Arc::new(pool)))
    })
}

impl PoolResource {
    /// The virtual pool that `query` is asked of.
    fn virtual_pool(&self, query: &str) -> rmm::Result<&VirtualPoolMemoryResource> {
        match self.pools()? {
            Pools::Virtual(v) => Ok(v),
            Pools::Classic(_) => Err(wrong_kind(query, KIND, self.resource().name())),
        }
    }

    /// Unmaps whole free granules until at most `keep` bytes stay mapped; the bytes unmapped.
    pub(crate) fn release_above(&self, keep: usize) -> Outcome {
        answer("release_above", Context::Construct, || Ok(self.virtual_pool("release_above")?.release_above(keep)?))
    }

    /// Bytes of physical memory mapped into the reservation.
    pub(crate) fn mapped_bytes(&self) -> Outcome {
        answer("mapped_bytes", Context::Construct, || Ok(self.virtual_pool("mapped_bytes")?.mapped_bytes()))
    }

    /// Bytes of addresses reserved.
    pub(crate) fn reserved_bytes(&self) -> Outcome {
        answer("reserved_bytes", Context::Construct, || Ok(self.virtual_pool("reserved_bytes")?.reserved_bytes()))
    }

    /// Bytes of one granule.
    pub(crate) fn granularity(&self) -> Outcome {
        answer("granularity", Context::Construct, || Ok(self.virtual_pool("granularity")?.granularity()))
    }

    /// A POSIX file descriptor for the physical memory of the mapped granule at `addr`; the caller
    /// owns it.
    pub(crate) fn export_posix_fd(&self, addr: usize) -> Outcome {
        answer("export_posix_fd", Context::Construct, || {
            let fd = self.virtual_pool("export_posix_fd")?.export_posix_fd(addr)?;
            Ok(fd as usize)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::ffi::ErrorKind;
    use super::super::plain::new_host_memory_resource;
    use super::super::pool::new_pool_memory_resource;
    use super::*;

    #[test]
    fn queries_of_the_classic_pool_are_logic_errors_naming_both() {
        let host = new_host_memory_resource();
        let pool = new_pool_memory_resource(host.resource(), 0, 0, false);
        for out in [
            pool.mapped_bytes(),
            pool.reserved_bytes(),
            pool.granularity(),
            pool.release_above(0),
            pool.export_posix_fd(0),
        ] {
            assert_eq!(out.kind, ErrorKind::Logic, "{}", out.message);
            assert!(out.message.contains(KIND) && out.message.contains("pool_memory_resource"), "{}", out.message);
        }
    }

    #[test]
    fn construction_fails_into_the_handle_or_makes_a_pool() {
        let made = new_virtual_pool_memory_resource(1 << 30, 0, 0, false, &[], 0, false);
        let status = made.resource().status();
        match status.kind {
            // A machine with a VMM device: the pool reserved and mapped nothing yet.
            ErrorKind::Ok => assert_eq!(made.mapped_bytes().ptr, 0),
            // No driver or no device (cuda_error), or a device without VMM (logic_error).
            ErrorKind::Cuda | ErrorKind::Logic => assert!(!status.message.is_empty()),
            other => panic!("{other:?}: {}", status.message),
        }
    }
}
