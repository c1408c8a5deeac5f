//! Memory from the system allocator that the GPU reaches through HMM or ATS (RMM's
//! `system_memory_resource`).

use crate::capabilities::system_memory_supported;
use crate::device::DeviceId;
use crate::error::{Error, Result};
use crate::resource::{same_type, HostMemoryResource, MemoryResource};
use crate::stream::CudaStreamView;
use std::sync::LazyLock;

/// Every live allocation of every system resource: all of them are interchangeable (as in RMM),
/// so any may free what another handed out, and a bad free is still an error, not undefined
/// behaviour.
static SYSTEM_HEAP: LazyLock<HostMemoryResource> = LazyLock::new(HostMemoryResource::new);

/// Pageable host memory from the global allocator, which a device with pageable memory access
/// (HMM on x86 with a recent open driver and kernel, ATS on Grace Hopper) reads and writes
/// directly. Allocation ignores the stream; freeing synchronises it first, since queued work may
/// still use the memory. All instances are equal.
#[derive(Debug, Clone, Copy)]
pub struct SystemMemoryResource {
    device: DeviceId,
}

impl SystemMemoryResource {
    /// A resource for the current device; [`Error::Unsupported`] where that device cannot access
    /// system-allocated memory (`CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS` is 0).
    pub fn new() -> Result<Self> {
        let device = DeviceId::current()?;
        if !system_memory_supported(device)? {
            return Err(Error::Unsupported(format!(
                "System memory allocator is not supported with this hardware/software version \
                 (device {} has no pageable memory access: it needs HMM or ATS)",
                device.0
            )));
        }
        Ok(SystemMemoryResource { device })
    }

    /// A value without the capability check, for tests of what needs no device.
    #[cfg(test)]
    pub(crate) fn new_unchecked_for_tests() -> Self {
        SystemMemoryResource { device: DeviceId(0) }
    }

    /// The device checked at construction.
    pub fn device(&self) -> DeviceId {
        self.device
    }
}

// SAFETY: every block comes from the process-wide host heap (`HostMemoryResource`, which keeps the
// contract) and goes back to it; the constructor checked that the device can access such memory
// (pageable memory access), so it is both host and device accessible.
unsafe impl MemoryResource for SystemMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        SYSTEM_HEAP.allocate(bytes, alignment, stream)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        // Work queued on `stream` may still read or write the memory. While the process exits the
        // driver may be gone, and no work can be left to wait for.
        if !crate::process_exit::process_is_exiting() {
            stream.synchronize()?;
        }
        SYSTEM_HEAP.deallocate(ptr, bytes, alignment, stream)
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        same_type::<Self>(other)
    }

    crate::resource::accessibility!(device: true, host: true);

    fn claim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        SYSTEM_HEAP.claim(ptr, bytes)
    }

    fn unclaim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        SYSTEM_HEAP.unclaim(ptr, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_instances_are_equal_and_share_their_allocations() {
        let (a, b) = (SystemMemoryResource { device: DeviceId(0) }, SystemMemoryResource { device: DeviceId(1) });
        assert!(a.is_equal(&b));
        assert!(!a.is_equal(&HostMemoryResource::new()));
        let p = a.allocate(1000, 512, CudaStreamView::DEFAULT).unwrap();
        assert_eq!(p as usize % 512, 0);
        // A wrong size is refused before the stream is synchronised: no driver call is needed.
        let wrong = SYSTEM_HEAP.deallocate(p, 999, 512, CudaStreamView::DEFAULT);
        assert!(matches!(wrong, Err(Error::Misuse(_))));
        // SAFETY: p is a live block of 1000 bytes of host memory.
        unsafe { p.write_bytes(7, 1000) };
        SYSTEM_HEAP.deallocate(p, 1000, 512, CudaStreamView::DEFAULT).unwrap();
    }

    #[test]
    fn missing_driver_is_an_error_not_a_panic() {
        if crate::cuda_available() {
            return;
        }
        assert!(matches!(SystemMemoryResource::new(), Err(Error::NoDriver(_))));
    }
}
