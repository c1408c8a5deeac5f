//! A pool over one reserved range of virtual addresses, backed by physical memory mapped in
//! granules on demand: it grows without fragmenting, gives memory back without moving an address,
//! and takes it again at the same addresses.
//!
//! ```text
//!   reserved range (addresses only, no memory)
//!   [ granule | granule | granule | granule | granule | .  .  .  .  .  .  .  .  .  .  .  .  ]
//!   |<------------ mapped: the pool's chunk ---------->|<- growth maps here, after the tail
//!   [ block ][ block ][   free tail   ][ block ][ free ]
//! ```
//!
//! The pool on top is [`PoolMemoryResource`]'s: the same O(1) free lists and stream sets, the same
//! stream-ordered hand-overs. What the range changes is growth (new memory is mapped right after
//! the free tail, so the two are one block; addresses released earlier are mapped again first)
//! and [`release`](VirtualPoolMemoryResource::release) (whole free granules are unmapped, their
//! addresses kept). The mapping logic is [`rmm_algorithms::AddressSpace`], tested on the host; the
//! device's side is [`DevicePhysicalMemory`], through the driver's virtual memory management
//! (`cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`).

use crate::device::DeviceId;
use crate::error::{Error, Result};
use crate::resource::pool::{PoolMemoryResource, DEFAULT_SHARDS};
use crate::resource::{CudaEventOrder, MemoryResource};
use crate::stream::CudaStreamView;
use crate::PoolState;
use rmm_algorithms::{AddressSpace, PhysicalMemory, StreamOrder, MAX_BLOCK_BYTES};
use std::sync::Arc;

mod device;
mod mapped_range;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_split_free_memory;
#[cfg(test)]
mod tests_threaded_replay;

pub use device::{DevicePhysicalMemory, VirtualMemoryOptions};
use mapped_range::{MappedRange, SharedSpace};

/// A stream-ordered pool over one reserved range of virtual addresses (see the module
/// documentation): per device one large reservation, physical memory created and mapped in
/// granules at the end of what is in use, released in whole granules with addresses unchanged.
///
/// ```no_run
/// use rmm::resource::VirtualPoolMemoryResource;
/// use rmm::{CudaStreamView, MemoryResource};
///
/// // 64 GiB of addresses; memory is mapped as the pool grows.
/// let pool = VirtualPoolMemoryResource::new(64 << 30, 0)?;
/// let s = CudaStreamView::DEFAULT;
/// let p = pool.allocate(3 << 30, 256, s)?;
/// pool.deallocate(p, 3 << 30, 256, s)?;
/// pool.release()?; // the memory goes back to the device; the addresses stay reserved
/// assert_eq!(pool.allocate(3 << 30, 256, s)?, p); // mapped again, same address
/// # Ok::<(), rmm::Error>(())
/// ```
pub struct VirtualPoolMemoryResource<P: PhysicalMemory + 'static = DevicePhysicalMemory> {
    pool: PoolMemoryResource<MappedRange<P>>,
    space: Arc<SharedSpace<P>>,
}

impl VirtualPoolMemoryResource<DevicePhysicalMemory> {
    /// A pool on the current device over a reservation of `reserve` bytes (rounded up to the
    /// device's granularity), with `initial_size` bytes (rounded up likewise) mapped at once.
    /// [`Error::Unsupported`] where the device or its driver lacks virtual memory management.
    pub fn new(reserve: usize, initial_size: usize) -> Result<Self> {
        Self::with_options(reserve, initial_size, &VirtualMemoryOptions::default())
    }

    /// Like [`new`](Self::new), with the device, the peers given access and the export of the
    /// memory as a file descriptor set in `options`.
    pub fn with_options(reserve: usize, initial_size: usize, options: &VirtualMemoryOptions) -> Result<Self> {
        let phys = DevicePhysicalMemory::reserve(reserve, options)?;
        // Bound to the device and the peers, so its synchronisations wait for their work whichever
        // context is current then.
        let order: Box<dyn StreamOrder> = Box::new(CudaEventOrder::for_devices(phys.access())?);
        // SAFETY: the device's physical side maps device memory of the device it reserved on, which
        // it says through `is_device_memory`.
        unsafe { Self::with_physical(phys, initial_size, order, DEFAULT_SHARDS) }
    }

    /// The devices that may access the memory: the pool's device first, then the peers.
    pub fn access(&self) -> Vec<DeviceId> {
        self.space.lock().physical().access().to_vec()
    }

    /// A POSIX file descriptor for the physical memory of the mapped granule at `addr` (see
    /// [`DevicePhysicalMemory::export_posix_fd`]). No code of the caller runs under the pool's
    /// address-space lock, which an allocation that grows the pool takes too.
    pub fn export_posix_fd(&self, addr: usize) -> Result<i32> {
        self.space.lock().physical().export_posix_fd(addr)
    }
}

/// [`Error::InvalidArgument`] for a reservation of more than [`MAX_BLOCK_BYTES`].
pub(crate) fn check_reservation(capacity: usize) -> Result<()> {
    if capacity > MAX_BLOCK_BYTES {
        return Err(Error::InvalidArgument(format!(
            "a reservation of {capacity} bytes: a virtual pool reserves at most {MAX_BLOCK_BYTES}"
        )));
    }
    Ok(())
}

impl<P: PhysicalMemory + 'static> VirtualPoolMemoryResource<P> {
    /// A pool over the reservation of `phys`, with `initial_size` bytes (rounded up to the
    /// granularity) mapped at once, `shards` shards (1 to 256) and streams ordered by `order`.
    /// The reservation may hold at most [`MAX_BLOCK_BYTES`].
    ///
    /// # Safety
    /// Memory that `phys` maps is memory the device may use where `phys.is_device_memory()` is
    /// true, host memory otherwise (the promise every [`MemoryResource`] makes of its blocks). A
    /// stand-in whose addresses no code reads or writes, such as
    /// [`HostPhysicalMemory`](rmm_algorithms::HostPhysicalMemory) in tests of the algorithm, keeps it
    /// as long as nothing touches the blocks.
    pub unsafe fn with_physical(
        phys: P,
        initial_size: usize,
        order: Box<dyn StreamOrder>,
        shards: usize,
    ) -> Result<Self> {
        check_reservation(phys.capacity())?;
        let space = AddressSpace::new(phys)?;
        let initial = space.granule_ceil(initial_size);
        if initial > space.capacity() {
            return Err(Error::InvalidArgument(format!(
                "an initial size of {initial_size} bytes is above the reservation of {}",
                space.capacity()
            )));
        }
        let space = Arc::new(SharedSpace::new(space));
        let upstream = MappedRange::new(Arc::clone(&space));
        let pool = PoolMemoryResource::over_reserved_range(upstream, space.clone(), initial, order, shards)?;
        Ok(VirtualPoolMemoryResource { pool, space })
    }

    /// Unmaps the memory of every whole free granule (see [`release_above`](Self::release_above));
    /// returns the bytes unmapped.
    pub fn release(&self) -> Result<usize> {
        self.release_above(0)
    }

    /// Unmaps whole free granules, lowest addresses first, until the pool holds at most `keep`
    /// bytes or no whole free granule is left; returns the bytes unmapped. Every stream is
    /// synchronised first, and only blocks free before that are unmapped (work queued on a stream
    /// may still use the blocks freed on it). Addresses stay reserved: the next growth maps the
    /// same addresses again, so a program may give its memory to another library or process and
    /// take it back later with every pointer it kept unchanged.
    pub fn release_above(&self, keep: usize) -> Result<usize> {
        self.pool.release_above(keep)
    }

    /// Bytes mapped: the pool's size, and any granules a failed map could not unmap again (see
    /// [`AddressSpace::stranded_bytes`]).
    pub fn mapped_bytes(&self) -> usize {
        self.space.lock().mapped_bytes()
    }

    /// Bytes of the reservation.
    pub fn reserved_bytes(&self) -> usize {
        self.space.lock().capacity()
    }

    /// The first address of the reservation.
    pub fn base(&self) -> usize {
        self.space.lock().base()
    }

    /// Bytes of one granule: the unit of every map and unmap.
    pub fn granularity(&self) -> usize {
        self.space.lock().granularity()
    }

    /// Whether every byte of `[addr, addr + len)` is mapped.
    pub fn is_mapped(&self, addr: usize, len: usize) -> bool {
        self.space.lock().is_mapped(addr, len)
    }

    /// The mapped runs of the reservation, as `(address, bytes)`, lowest first.
    pub fn mapped_runs(&self) -> Vec<(usize, usize)> {
        self.space.lock().mapped_runs()
    }

    /// Pool size, free bytes and largest free block.
    pub fn state(&self) -> PoolState {
        self.pool.state()
    }

    /// Bytes the pool holds (mapped).
    pub fn pool_size(&self) -> usize {
        self.pool.pool_size()
    }

    /// Marks `stream`, being captured into a CUDA graph, as the pool does (see
    /// [`PoolMemoryResource::begin_capture`]): its allocations come from memory private to the
    /// capture, mapped in relaxed capture mode. Returns the capture's id.
    pub fn begin_capture(&self, stream: CudaStreamView) -> Result<u64> {
        self.pool.begin_capture(stream)
    }

    /// The capture on `stream` ended (see [`PoolMemoryResource::end_capture`]).
    pub fn end_capture(&self, stream: CudaStreamView) {
        self.pool.end_capture(stream)
    }

    /// Gives capture `id`'s private memory back to the pool once its graphs and their executable
    /// graphs are destroyed (see [`PoolMemoryResource::release_capture`]).
    ///
    /// # Safety
    /// As for [`PoolMemoryResource::release_capture`]: every graph of capture `id` is destroyed.
    pub unsafe fn release_capture(&self, id: u64) -> Result<()> {
        // SAFETY: the caller's duty, passed on unchanged.
        unsafe { self.pool.release_capture(id) }
    }

    /// Ids of the captures whose private memory the pool keeps.
    pub fn captures(&self) -> Vec<u64> {
        self.pool.captures()
    }

    /// Bytes of private memory the pool keeps for capture `id` (0 for an unknown one).
    pub fn capture_pool_size(&self, id: u64) -> usize {
        self.pool.capture_pool_size(id)
    }

    /// Checks the pool's internal invariants and that it holds exactly what is mapped; for tests
    /// and debugging.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        self.pool.check_invariants()?;
        let (mapped, stranded) = {
            let space = self.space.lock();
            (space.mapped_bytes(), space.stranded_bytes())
        };
        if mapped - stranded != self.pool.pool_size() {
            return Err(format!(
                "{mapped} bytes mapped ({stranded} stranded by a failed undo) but the pool holds {}",
                self.pool.pool_size()
            ));
        }
        Ok(())
    }
}

// SAFETY: the pool's blocks are disjoint ranges of mapped memory of the reservation (the pool's
// promise over its upstream, here the mapped range); memory is unmapped only once no block of it
// is handed out and no work queued may use it (`release_above`). The accessibility is the
// physical side's, which `with_physical`'s caller vouched for.
unsafe impl<P: PhysicalMemory + 'static> MemoryResource for VirtualPoolMemoryResource<P> {
    #[inline]
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        self.pool.allocate(bytes, alignment, stream)
    }

    #[inline]
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        self.pool.deallocate(ptr, bytes, alignment, stream)
    }

    #[inline]
    fn try_allocate_immediately(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Option<*mut u8> {
        self.pool.try_allocate_immediately(bytes, alignment, stream)
    }

    #[inline]
    fn try_deallocate_immediately(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> bool {
        self.pool.try_deallocate_immediately(ptr, bytes, alignment, stream)
    }

    crate::resource::accessibility!(pool);

    crate::resource::forward_claims!(pool);

    fn memory_segments(&self) -> Option<Vec<crate::resource::MemorySegment>> {
        self.pool.memory_segments()
    }
}
