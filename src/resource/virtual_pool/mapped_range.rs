//! The address space shared by the pool (where it grows, what it releases) and the pool's
//! upstream (its initial chunk, and every range still mapped given back when it is dropped).

use crate::error::{Error, Result};
use crate::resource::pool::ReservedRange;
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use parking_lot::{Mutex, MutexGuard};
use rmm_algorithms::{AddressSpace, Partial, PhysicalMemory};
use std::sync::Arc;

/// An [`AddressSpace`] behind a lock. Taken after a shard's lock, never before one.
pub(super) struct SharedSpace<P: PhysicalMemory>(Mutex<AddressSpace<P>>);

impl<P: PhysicalMemory> SharedSpace<P> {
    pub(super) fn new(space: AddressSpace<P>) -> Self {
        SharedSpace(Mutex::new(space))
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, AddressSpace<P>> {
        self.0.lock()
    }
}

impl<P: PhysicalMemory> ReservedRange for SharedSpace<P> {
    fn granularity(&self) -> usize {
        self.lock().granularity()
    }

    fn mapped_end(&self) -> usize {
        self.lock().mapped_end()
    }

    fn grow(
        &self,
        needed: usize,
        free_around: &mut dyn FnMut(usize, usize) -> (usize, usize),
    ) -> Result<(usize, usize)> {
        self.lock().grow(needed, free_around)
    }

    fn unmap(&self, addr: usize, len: usize) -> std::result::Result<(), Partial> {
        self.lock().release(addr, len)
    }
}

/// The pool's upstream: `allocate` maps whole granules at the end of the range, `deallocate`
/// unmaps them.
pub(super) struct MappedRange<P: PhysicalMemory> {
    space: Arc<SharedSpace<P>>,
    /// What the physical side says of its memory, asked once.
    device_memory: bool,
}

impl<P: PhysicalMemory> MappedRange<P> {
    pub(super) fn new(space: Arc<SharedSpace<P>>) -> Self {
        let device_memory = space.lock().physical().is_device_memory();
        MappedRange { space, device_memory }
    }
}

// SAFETY: hands out mapped runs of the reservation, each once until it is unmapped again; the
// accessibility is the physical side's (see `VirtualPoolMemoryResource::with_physical`).
unsafe impl<P: PhysicalMemory + 'static> MemoryResource for MappedRange<P> {
    fn allocate(&self, bytes: usize, _alignment: usize, _stream: CudaStreamView) -> Result<*mut u8> {
        let mut space = self.space.lock();
        if !bytes.is_multiple_of(space.granularity()) {
            return Err(Error::InvalidArgument(format!(
                "{bytes} bytes: a mapped range grows by whole granules of {}",
                space.granularity()
            )));
        }
        let (addr, len) = space.grow(bytes, &mut |_, _| (0, 0))?;
        debug_assert_eq!(len, bytes);
        Ok(addr as *mut u8)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, _alignment: usize, _stream: CudaStreamView) -> Result<()> {
        self.space.lock().release(ptr as usize, bytes).map_err(|p| p.error)
    }

    fn is_device_accessible(&self) -> bool {
        self.device_memory
    }

    fn is_host_accessible(&self) -> bool {
        false
    }
}
