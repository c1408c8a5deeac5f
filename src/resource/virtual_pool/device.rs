//! The device's physical side of a virtual-memory pool: a reservation of addresses, and one
//! piece of physical memory per mapped granule, so that any granule can be unmapped alone (the
//! driver unmaps only whole mappings).

use crate::driver::{self, DeviceId, DevicePtr, PhysicalHandle};
use crate::error::{Error, Result};
use rmm_algorithms::{Partial, PhysicalMemory};

/// How a [`DevicePhysicalMemory`] is made.
#[derive(Debug, Clone, Default)]
pub struct VirtualMemoryOptions {
    /// The device whose memory is mapped; the current device when `None`.
    pub device: Option<DeviceId>,
    /// Other devices that may read and write the memory (each must be able to access the device's
    /// memory: `cuDeviceCanAccessPeer`).
    pub peers: Vec<DeviceId>,
    /// Bytes of one granule: a multiple of the device's recommended granularity; that granularity
    /// when `None`. Larger granules mean fewer driver calls per byte mapped and coarser releases.
    pub granule: Option<usize>,
    /// Create the memory exportable as POSIX file descriptors. Where the device cannot
    /// (`CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED` is 0) the memory is
    /// made without, and [`DevicePhysicalMemory::export_posix_fd`] says so.
    pub export_posix_fd: bool,
}

/// A reservation of device addresses, and the physical memory mapped into it granule by granule
/// (`cuMemCreate`, `cuMemMap`, `cuMemSetAccess` for the device and the peers asked for). Everything
/// still mapped is unmapped and released, and the reservation freed, when it is dropped.
pub struct DevicePhysicalMemory {
    device: DeviceId,
    base: DevicePtr,
    capacity: usize,
    granule: usize,
    /// The device and the peers: who may access the memory.
    access: Vec<DeviceId>,
    posix_fd: bool,
    /// The physical memory behind each granule, where mapped.
    handles: Vec<Option<PhysicalHandle>>,
}

impl DevicePhysicalMemory {
    /// Reserves `bytes` of addresses (rounded up to whole granules) on the device of `options`.
    /// [`Error::Unsupported`] where the device lacks virtual memory management or a peer cannot
    /// access it.
    pub fn reserve(bytes: usize, options: &VirtualMemoryOptions) -> Result<Self> {
        let device = match options.device {
            Some(d) => d,
            None => driver::current_device()?,
        };
        driver::vmm_check(device)?;
        for &peer in options.peers.iter().filter(|&&p| p != device) {
            if !driver::can_access_peer(peer, device)? {
                return Err(Error::Unsupported(format!(
                    "device {} cannot access the memory of device {} (cuDeviceCanAccessPeer): it cannot be \
                     given access to this pool",
                    peer.0, device.0
                )));
            }
        }
        let posix_fd = options.export_posix_fd && driver::posix_fd_handles_supported(device)?;
        let recommended = driver::mem_recommended_granularity(device, posix_fd)?;
        let granule = options.granule.unwrap_or(recommended);
        if granule == 0 || !granule.is_multiple_of(recommended) || !granule.is_power_of_two() {
            return Err(Error::InvalidArgument(format!(
                "a granule of {granule} bytes: a power of two and a multiple of the device's granularity \
                 ({recommended} bytes)"
            )));
        }
        let capacity = bytes.max(1).div_ceil(granule).checked_mul(granule).ok_or_else(|| {
            Error::InvalidArgument(format!("a reservation of {bytes} bytes is more than addresses can hold"))
        })?;
        // Refused before anything is reserved or recorded: the record takes host memory per
        // granule, half a GiB for a reservation of 64 TiB.
        crate::resource::virtual_pool::check_reservation(capacity)?;
        let base = driver::mem_address_reserve(capacity, granule)?;
        let mut access = vec![device];
        access.extend(options.peers.iter().copied().filter(|&p| p != device));
        access.dedup();
        Ok(DevicePhysicalMemory {
            device,
            base,
            capacity,
            granule,
            access,
            posix_fd,
            handles: vec![None; capacity / granule],
        })
    }

    /// The device whose memory is mapped.
    pub fn device(&self) -> DeviceId {
        self.device
    }

    /// The devices that may access the memory: the device first, then the peers.
    pub fn access(&self) -> &[DeviceId] {
        &self.access
    }

    /// A POSIX file descriptor for the physical memory of the granule at `addr` (mapped), for
    /// another process to import (`cuMemImportFromShareableHandle`) and map; the caller owns and
    /// closes it. [`Error::Unsupported`] where the memory was not made exportable.
    pub fn export_posix_fd(&self, addr: usize) -> Result<i32> {
        if !self.posix_fd {
            return Err(Error::Unsupported(
                "the memory was not made exportable: ask for export_posix_fd on a device that supports POSIX \
                 file descriptor handles"
                    .into(),
            ));
        }
        let handle = addr
            .checked_sub(self.base.addr())
            .filter(|&off| off < self.capacity)
            .and_then(|off| self.handles[off / self.granule]);
        let Some(handle) = handle else {
            return Err(Error::InvalidArgument(format!("{addr:#x} is not in a mapped granule of this reservation")));
        };
        driver::mem_export_posix_fd(handle)
    }

    /// Creates and maps the granule `i`.
    fn map_granule(&mut self, i: usize) -> Result<()> {
        let handle = driver::mem_create(self.device, self.granule, self.posix_fd)?;
        // SAFETY: granule i lies in the live reservation and is unmapped (the address space maps a
        // granule once); the handle was created with the granule's size.
        if let Err(e) = unsafe { driver::mem_map(self.at(i), self.granule, handle) } {
            // SAFETY: the handle was just made and is released once; nothing maps it.
            let _ = unsafe { driver::mem_release(handle) };
            return Err(e);
        }
        self.handles[i] = Some(handle);
        Ok(())
    }

    /// Unmaps and releases the granule `i`, which is mapped.
    fn unmap_granule(&mut self, i: usize) -> Result<()> {
        let Some(handle) = self.handles[i] else { return Ok(()) };
        // SAFETY: granule i is one whole mapping of `handle`; the pool unmaps only memory no block
        // and no queued work uses.
        unsafe { driver::mem_unmap(self.at(i), self.granule) }?;
        self.handles[i] = None;
        // The granule is unmapped whatever the release says: a failed release leaks the memory
        // (nothing else can be done with it) but must not keep the address counted as mapped.
        // SAFETY: the handle was made for granule i and is released once, now that it is unmapped.
        let _ = unsafe { driver::mem_release(handle) };
        Ok(())
    }

    fn at(&self, i: usize) -> DevicePtr {
        DevicePtr::new(self.base.addr() + i * self.granule)
    }
}

impl PhysicalMemory for DevicePhysicalMemory {
    fn base(&self) -> usize {
        self.base.addr()
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn granularity(&self) -> usize {
        self.granule
    }

    fn map(&mut self, off: usize, len: usize) -> std::result::Result<(), Partial> {
        let first = off / self.granule;
        for (k, i) in (first..(off + len) / self.granule).enumerate() {
            self.map_granule(i).map_err(|error| Partial { done: k * self.granule, error })?;
        }
        // One call for the whole run, as every granule in it is mapped now.
        let access = self.access.clone();
        driver::mem_set_access(self.at(first), len, &access).map_err(|error| Partial { done: len, error })
    }

    fn unmap(&mut self, off: usize, len: usize) -> std::result::Result<(), Partial> {
        let first = off / self.granule;
        for (k, i) in (first..(off + len) / self.granule).enumerate() {
            self.unmap_granule(i).map_err(|error| Partial { done: k * self.granule, error })?;
        }
        Ok(())
    }

    fn is_device_memory(&self) -> bool {
        true
    }
}

impl Drop for DevicePhysicalMemory {
    fn drop(&mut self) {
        // The driver may be gone while the process exits; the memory goes with the process.
        if crate::process_exit::process_is_exiting() {
            return;
        }
        for i in 0..self.handles.len() {
            let _ = self.unmap_granule(i);
        }
        if self.handles.iter().all(Option::is_none) {
            // SAFETY: the whole reservation, made in `reserve`, freed once, with nothing mapped.
            unsafe { driver::mem_address_free(self.base, self.capacity) };
        }
    }
}
