//! System-allocated memory that leaves device memory free for other work (RMM's
//! `sam_headroom_memory_resource`).

use crate::device::{available_device_memory, DeviceId};
use crate::driver::{self, DevicePtr, PreferredLocation};
use crate::error::Result;
use crate::resource::{MemoryResource, SystemMemoryResource, DEFAULT_ALIGNMENT};
use crate::stream::CudaStreamView;
use std::any::Any;

/// A [`SystemMemoryResource`] that keeps `headroom` bytes of device memory free.
///
/// System memory migrates to the GPU but never back, so over-subscribing the device with it makes
/// other CUDA calls run out of memory. On each allocation this resource asks how much device
/// memory is free, and sets the preferred location of only as much of the block as fits above the
/// headroom to the current device; the rest prefers the host. Checking costs a driver call per
/// allocation, so it suits large allocations. Resources with the same headroom are equal.
#[derive(Debug, Clone, Copy)]
pub struct SamHeadroomMemoryResource {
    system: SystemMemoryResource,
    headroom: usize,
}

impl SamHeadroomMemoryResource {
    /// Keeps `headroom` bytes of device memory free. Fails as [`SystemMemoryResource::new`] does
    /// where the device cannot access system memory.
    pub fn new(headroom: usize) -> Result<Self> {
        Ok(SamHeadroomMemoryResource { system: SystemMemoryResource::new()?, headroom })
    }

    /// The device memory kept free, in bytes.
    pub fn headroom(&self) -> usize {
        self.headroom
    }
}

/// How many of `bytes` may prefer the device when `free` bytes of it are free and `headroom` must
/// stay so: a multiple of 256 bytes (RMM's rule); the rest prefers the host.
pub(crate) fn device_portion(bytes: usize, free: usize, headroom: usize) -> usize {
    let allocatable = free.saturating_sub(headroom);
    allocatable.min(bytes) & !(DEFAULT_ALIGNMENT - 1)
}

// SAFETY: blocks come from a `SystemMemoryResource` unchanged (advice only sets where pages prefer
// to live) and go back to it; the accessibility answers are the same as its.
unsafe impl MemoryResource for SamHeadroomMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        let p = self.system.allocate(bytes, alignment, stream)?;
        if p.is_null() {
            return Ok(p);
        }
        let advised = (|| {
            let device = DeviceId::current()?;
            let (free, _) = available_device_memory()?;
            let gpu = device_portion(bytes, free, self.headroom);
            if gpu > 0 {
                driver::mem_advise_preferred_location(DevicePtr::from_ptr(p), gpu, PreferredLocation::Device(device))?;
            }
            if gpu < bytes {
                let host_part = DevicePtr::new(p as usize + gpu);
                driver::mem_advise_preferred_location(host_part, bytes - gpu, PreferredLocation::Host)?;
            }
            Ok(())
        })();
        if let Err(e) = advised {
            // Nothing can have used the block yet: hand it back so the resource stays as it was.
            let _ = self.system.deallocate(p, bytes, alignment, stream);
            return Err(e);
        }
        Ok(p)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        self.system.deallocate(ptr, bytes, alignment, stream)
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        (other as &dyn Any).downcast_ref::<Self>().is_some_and(|o| o.headroom == self.headroom)
    }

    crate::resource::accessibility!(device: true, host: true);

    crate::resource::forward_claims!(system);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_gets_what_fits_above_the_headroom_in_whole_256_byte_units() {
        assert_eq!(device_portion(1000, 10_000, 2_000), 768);
        assert_eq!(device_portion(100_000, 10_192, 2_000), 8_192);
        assert_eq!(device_portion(100_000, 10_100, 2_000), 7_936);
        assert_eq!(device_portion(1000, 1_000, 2_000), 0);
        assert_eq!(device_portion(1000, 10_000, 0), 768);
        assert_eq!(device_portion(0, 10_000, 0), 0);
    }

    #[test]
    fn equal_when_the_headroom_is() {
        let system = SystemMemoryResource::new_unchecked_for_tests();
        let a = SamHeadroomMemoryResource { system, headroom: 1 << 20 };
        let b = SamHeadroomMemoryResource { system, headroom: 1 << 20 };
        let c = SamHeadroomMemoryResource { system, headroom: 2 << 20 };
        assert!(a.is_equal(&b));
        assert!(!a.is_equal(&c));
        assert!(!a.is_equal(&system));
    }
}
