//! A resource that hands out blocks of one size from chunks of its upstream, stream-ordered as
//! RMM's `fixed_size_memory_resource`.

use crate::error::{Error, Result};
use crate::resource::claims::ClaimTable;
use crate::resource::cuda_event_order::default_order;
use crate::resource::upstream_check::{allocate_chunk, give_back_chunks};
use crate::resource::{effective_alignment, MemoryResource, DEFAULT_ALIGNMENT};
use crate::stream::CudaStreamView;
use crate::stream_registry::{add_tenant, StreamTenant, Tenancy};
use parking_lot::lock_api::MutexGuard;
use parking_lot::Mutex;
use rmm_algorithms::fixed_size::magazine::{self, Magazine};
use rmm_algorithms::fixed_size::{ChunkTable, FixedSizeFreeList, FRESH_SLOT};
use rmm_algorithms::{next_retirement_number, StreamIdentity, StreamKey, StreamOrder};
use rmm_algorithms::{RawSpinLock, SpinMutex};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// RMM's default block size: 1 MiB.
pub const DEFAULT_BLOCK_SIZE: usize = 1 << 20;

/// RMM's default number of blocks taken from the upstream at once.
pub const DEFAULT_BLOCKS_TO_PREALLOCATE: usize = 128;

mod magazines;

/// Blocks a thread's magazine holds at most.
const MAGAZINE_MAX: usize = 32;

/// What the resource and the stream registry's tenant share: the free list behind its lock, and
/// every magazine of every thread (each behind its own lock; lock order: list, registry, magazine).
struct Shared {
    list: SpinMutex<FixedSizeFreeList>,
    magazines: Mutex<Vec<Arc<Magazine>>>,
}

/// Hands out blocks of `block_size` bytes (rounded up to 256), for any request of at most that
/// many bytes; larger requests fail with [`Error::OutOfMemory`] (RMM's `rmm::out_of_memory`,
/// "maximum allocation size exceeded"). Blocks are 256-byte aligned; larger alignments are
/// refused with [`Error::BadAlignment`].
///
/// The resource takes `blocks_to_preallocate` blocks from the upstream in one chunk when it is
/// made and again each time it runs out, and gives every chunk back when dropped. Frees are
/// checked: a pointer that is not a live block of this resource is refused with a
/// [`Misuse`](crate::Misuse) and changes nothing.
///
/// Streams as in RMM's `stream_ordered_memory_resource`: each stream has its own free blocks and
/// reuses them at once; while several streams use the resource, every free captures the stream's
/// work (an event), and a stream with no blocks of its own takes another stream's captured blocks
/// after waiting for that capture. A stream alone makes no CUDA call. Before it reports
/// out-of-memory, the resource synchronises everything and makes every free block usable by all.
/// Destroyed streams are handled as the pool handles them (see [`crate::stream_registry`]).
///
/// Each thread keeps, per stream, a small stack of that stream's free blocks (a magazine, up to a
/// quarter of a chunk and at most 32 blocks), so that most calls touch nothing another thread
/// uses; it is filled from and emptied into the shared sets in batches. Blocks in magazines count
/// as free, stay usable only on their stream (as a stream's own blocks in the shared sets), move
/// back to the shared sets before the resource grows or reports out-of-memory and when their
/// stream retires, and are kept by the resource when their thread exits.
pub struct FixedSizeMemoryResource<U: MemoryResource> {
    shared: Arc<Shared>,
    /// The chunk table, also reached without the lock.
    table: Arc<ChunkTable>,
    /// What tells this resource's magazines apart in a thread's cache.
    id: u64,
    /// Blocks one magazine holds at most; 0 turns magazines off.
    magazine_capacity: usize,
    upstream: U,
    block_size: usize,
    blocks_per_chunk: usize,
    order: Arc<dyn StreamOrder>,
    ordered: bool,
    _tenancy: Option<Tenancy>,
    /// Blocks a suballocator over this resource claimed as its chunks.
    claims: ClaimTable,
}

impl<U: MemoryResource> FixedSizeMemoryResource<U> {
    /// Blocks of `block_size` bytes from `upstream`, `blocks_to_preallocate` at a time (RMM's
    /// defaults are [`DEFAULT_BLOCK_SIZE`] and [`DEFAULT_BLOCKS_TO_PREALLOCATE`]). Device memory
    /// is ordered with CUDA events; host-only memory needs no ordering.
    pub fn new(upstream: U, block_size: usize, blocks_to_preallocate: usize) -> Result<Self> {
        let order = default_order(&upstream);
        // SAFETY: `default_order` orders device-accessible memory with CUDA events.
        unsafe { Self::with_stream_order(upstream, block_size, blocks_to_preallocate, order) }
    }

    /// Like [`new`](Self::new) with an explicit way of ordering streams.
    ///
    /// # Safety
    /// `order` orders work on the streams as `upstream`'s memory needs: CUDA events (a
    /// [`CudaEventOrder`](crate::resource::CudaEventOrder)) for memory kernels or the driver's
    /// copies use; an order that waits for nothing ([`HostOrder`](rmm_algorithms::HostOrder),
    /// [`SimulatedDeviceOrder`](rmm_algorithms::SimulatedDeviceOrder)) only for memory no device
    /// work touches. A wrong order hands a block to a stream while work on another may still use
    /// it.
    pub unsafe fn with_stream_order(
        upstream: U,
        block_size: usize,
        blocks_to_preallocate: usize,
        order: Box<dyn StreamOrder>,
    ) -> Result<Self> {
        if block_size == 0 {
            return Err(Error::InvalidArgument("a fixed-size resource needs a block size above 0".into()));
        }
        if blocks_to_preallocate == 0 {
            return Err(Error::InvalidArgument(
                "a fixed-size resource needs at least 1 block to preallocate (its growth step)".into(),
            ));
        }
        let block_size = crate::resource::align_up(block_size, DEFAULT_ALIGNMENT)
            .filter(|b| b.checked_mul(blocks_to_preallocate).is_some())
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{blocks_to_preallocate} blocks of {block_size} bytes overflow the address space"
                ))
            })?;
        let ordered = order.is_needed();
        let order: Arc<dyn StreamOrder> = Arc::from(order);
        let list = FixedSizeFreeList::new(block_size);
        let table = list.table.clone();
        let shared = Arc::new(Shared { list: SpinMutex::new(list), magazines: Mutex::new(Vec::new()) });
        let tenancy = ordered
            .then(|| add_tenant(Arc::new(FixedSizeTenant { shared: Arc::downgrade(&shared), order: order.clone() })));
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let resource = FixedSizeMemoryResource {
            claims: ClaimTable::new(),
            shared,
            table,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            magazine_capacity: (blocks_to_preallocate / 4).min(MAGAZINE_MAX),
            upstream,
            block_size,
            blocks_per_chunk: blocks_to_preallocate,
            order,
            ordered,
            _tenancy: tenancy,
        };
        let chunk = resource.chunk_bytes();
        let ptr = allocate_chunk(&resource.upstream, chunk, DEFAULT_ALIGNMENT, CudaStreamView::DEFAULT)?;
        // As the pool's initial chunk: fresh once nothing is pending, else the default stream's.
        let fresh = !resource.ordered || resource.order.synchronize_all().is_ok();
        let mut st = resource.lock();
        let slot = if fresh { FRESH_SLOT } else { st.sets.slot_of(StreamKey::LEGACY_DEFAULT) };
        st.add_chunk(ptr as usize, blocks_to_preallocate, slot);
        drop(st);
        Ok(resource)
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }

    /// The size of every block (the block size asked for, rounded up to 256).
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// How many blocks one chunk from the upstream holds.
    pub fn blocks_per_chunk(&self) -> usize {
        self.blocks_per_chunk
    }

    /// Bytes taken from the upstream.
    pub fn pool_size(&self) -> usize {
        self.table.total_blocks() * self.block_size
    }

    /// Free blocks, on all streams, those in the threads' magazines included.
    pub fn free_blocks(&self) -> usize {
        let st = self.lock();
        let cached: usize = self.shared.magazines.lock().iter().map(|m| m.held()).sum();
        st.sets.free_blocks() + cached
    }

    /// `(start, bytes)` of every chunk taken from the upstream, by address.
    pub fn chunks(&self) -> Vec<(usize, usize)> {
        self.table.chunks().collect()
    }

    /// Checks the internal invariants; for tests and debugging.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let st = self.lock();
        let magazines = self.shared.magazines.lock();
        let cached: Vec<usize> = magazines.iter().flat_map(|m| m.state.lock().blocks.clone()).collect();
        st.check_invariants(&cached)
    }

    fn chunk_bytes(&self) -> usize {
        self.block_size * self.blocks_per_chunk
    }

    /// Refuses what no block can hold.
    #[inline]
    fn check_request(&self, bytes: usize, alignment: usize) -> Result<()> {
        if effective_alignment(alignment)? > DEFAULT_ALIGNMENT {
            return Err(Error::BadAlignment { alignment, max: DEFAULT_ALIGNMENT });
        }
        if bytes > self.block_size {
            return Err(Error::out_of_memory(
                bytes,
                format!("maximum allocation size exceeded: this resource's blocks are {} bytes", self.block_size),
            ));
        }
        Ok(())
    }

    /// Everything but the fast path: the stream's identity checked, its own blocks, fresh memory,
    /// other streams' captured blocks, a new chunk, and last a synchronisation of everything.
    #[cold]
    #[inline(never)]
    fn allocate_slow(
        &self,
        st: &mut FixedSizeFreeList,
        slot: usize,
        key: StreamKey,
        stream: CudaStreamView,
    ) -> Result<*mut u8> {
        let slot = if self.ordered { self.own_slot_checked(st, slot, key) } else { slot };
        if self.ordered && st.sets.is_wanted(slot) {
            self.publish(st, slot);
        }
        if let Some(a) = st.allocate_own(slot).or_else(|| st.allocate_fresh()) {
            return Ok(a as *mut u8);
        }
        for donor in st.sets.others_with_blocks(slot) {
            if self.usable_now(st, donor, key) {
                let all = !self.ordered || st.sets.key_of(donor) == StreamKey::FRESH;
                st.sets.take(donor, slot, all);
                if let Some(a) = st.allocate_own(slot) {
                    return Ok(a as *mut u8);
                }
            } else if st.sets.key_of(donor).is_stream() && st.sets.has_private(donor) {
                st.sets.want(donor);
            }
        }
        // Blocks in other threads' magazines: this stream's serve at once, others' once published.
        if self.reclaim(st, key, false) {
            if let Some(a) = st.allocate_own(slot).or_else(|| st.allocate_fresh()) {
                return Ok(a as *mut u8);
            }
        }
        match allocate_chunk(&self.upstream, self.chunk_bytes(), DEFAULT_ALIGNMENT, stream) {
            Ok(ptr) => {
                st.add_chunk(ptr as usize, self.blocks_per_chunk, slot);
                let a = st.allocate_own(slot).expect("a new chunk has a block");
                if self.ordered && st.sets.shared_by_streams() {
                    // Offer the rest of the chunk to the other streams at once, as RMM's lists do.
                    self.publish(st, slot);
                }
                return Ok(a as *mut u8);
            }
            Err(e) if !e.is_out_of_memory() => return Err(e),
            Err(_) => {}
        }
        // Once no stream has work pending, every free block is usable by all, cached ones included.
        if self.ordered {
            self.reclaim(st, key, true);
        }
        if self.ordered && st.sets.free_blocks() > 0 && self.order.synchronize_all().is_ok() {
            st.sets.make_all_fresh();
            if let Some(a) = st.allocate_fresh() {
                return Ok(a as *mut u8);
            }
        }
        Err(Error::out_of_memory(
            self.block_size,
            format!(
                "the upstream has no room for another chunk of {} blocks of {} bytes, and no block is free",
                self.blocks_per_chunk, self.block_size
            ),
        ))
    }

    /// Whether work on `key` may take the blocks of `donor` now: fresh memory and unordered
    /// memory at once, another stream's (or a retired stream's) published blocks once `key`
    /// waits for their capture, a replaced stream's blocks only after a synchronisation.
    fn usable_now(&self, st: &FixedSizeFreeList, donor: usize, key: StreamKey) -> bool {
        let owner = st.sets.key_of(donor);
        if !self.ordered || owner == StreamKey::FRESH {
            return true;
        }
        if owner.waits_for_sync() || owner.is_sealed() || !st.sets.has_published(donor) {
            return false;
        }
        self.order.wait(owner, st.sets.identity(donor), key).is_ok()
    }

    /// The slot of `key`'s own set for a call that takes from it without waiting: checked to have
    /// been filled by the stream `key` names now (see `StreamOrder::identity`).
    fn own_slot_checked(&self, st: &mut FixedSizeFreeList, slot: usize, key: StreamKey) -> usize {
        if self.identity_holds(st, slot) {
            return slot;
        }
        let slot = st.sets.slot_of(key);
        let identity = self.order.identity(key, StreamIdentity::Unknown);
        st.sets.set_identity(slot, identity);
        slot
    }

    /// True when the set in `slot` was filled by the stream its key names now; otherwise that
    /// stream was destroyed and its handle reused, and its blocks move to a retired key that
    /// waits for a synchronisation of everything.
    fn identity_holds(&self, st: &mut FixedSizeFreeList, slot: usize) -> bool {
        let known = st.sets.identity(slot);
        if known == StreamIdentity::Trusted {
            return true;
        }
        let key = st.sets.key_of(slot);
        let now = self.order.identity(key, known);
        if known == StreamIdentity::Unknown || known == now {
            st.sets.set_identity(slot, now);
            return true;
        }
        st.sets.retire_key(key, StreamKey::retired_after_sync(next_retirement_number()));
        false
    }

    /// Captures the work of `slot`'s stream and publishes its private blocks. Called only from a
    /// call on that stream, so the stream is alive.
    fn publish(&self, st: &mut FixedSizeFreeList, slot: usize) {
        if !self.identity_holds(st, slot) {
            return;
        }
        match self.order.record(st.sets.key_of(slot), st.sets.identity(slot)) {
            Ok(()) => st.sets.publish(slot),
            Err(_) => st.sets.clear_wanted(slot),
        }
    }

    /// Everything but the magazine: the stream's own blocks in the shared sets, else the slow
    /// path; then the calling thread's magazine for the stream is refilled.
    #[cold]
    #[inline(never)]
    fn allocate_shared(&self, key: StreamKey, stream: CudaStreamView) -> Result<*mut u8> {
        let mut st = self.lock();
        let magazine = self.magazine_of(&mut st, key);
        let slot = st.sets.slot_of(key);
        let own = if self.serves_at_once(&st, slot) { st.allocate_own(slot) } else { None };
        let a = match own {
            Some(a) => a as *mut u8,
            None => self.allocate_slow(&mut st, slot, key, stream)?,
        };
        if let Some(m) = magazine {
            self.refill(&mut st, &m, key);
        }
        Ok(a)
    }

    /// A free the magazine did not take (full, not usable yet, or wanted by another stream): into
    /// the stream's set, with half of a full magazine, published where other streams need it.
    #[cold]
    #[inline(never)]
    fn deallocate_shared(&self, block: usize, key: StreamKey) {
        let mut st = self.lock();
        let magazine = self.magazine_of(&mut st, key);
        let slot = st.sets.slot_of(key);
        if self.ordered && st.sets.identity(slot) == StreamIdentity::Unknown {
            let identity = self.order.identity(key, StreamIdentity::Unknown);
            st.sets.set_identity(slot, identity);
        }
        st.sets.push(slot, block);
        if let Some(m) = magazine {
            if self.serves_at_once(&st, slot) {
                let mut ms = m.state.lock();
                if !ms.retired {
                    ms.usable = true;
                    let keep = self.magazine_capacity / 2;
                    if ms.blocks.len() > keep {
                        let spill = ms.blocks.len() - keep;
                        for b in ms.blocks.drain(..spill) {
                            st.sets.push(slot, b);
                        }
                    }
                }
            }
        }
        if self.ordered && (st.sets.is_wanted(slot) || st.sets.shared_by_streams()) {
            self.publish(&mut st, slot);
        }
    }

    fn lock(&self) -> MutexGuard<'_, RawSpinLock, FixedSizeFreeList> {
        self.shared.list.lock()
    }
}

// SAFETY: blocks are disjoint fixed-size slices of chunks the upstream handed out and this
// resource keeps until it is dropped; a block is reused only after its free, in stream order; the
// accessibility answers are the upstream's.
unsafe impl<U: MemoryResource> MemoryResource for FixedSizeMemoryResource<U> {
    #[inline]
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        self.check_request(bytes, alignment)?;
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        let key = stream.key();
        if let Some(m) = magazine::lookup(self.id, key) {
            // SAFETY: the thread's cache holds the magazine until this thread next calls
            // `magazine::insert`, which `pop` never does.
            if let Some(a) = unsafe { &*m }.pop() {
                self.table.mark_live(a);
                return Ok(a as *mut u8);
            }
        }
        self.allocate_shared(key, stream)
    }

    #[inline]
    fn deallocate(&self, ptr: *mut u8, bytes: usize, _alignment: usize, stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        self.claims.refuse_claimed(ptr)?;
        self.table.take_back(ptr as usize, bytes).map_err(Error::Misuse)?;
        let key = stream.key();
        if let Some(m) = magazine::lookup(self.id, key) {
            // SAFETY: as in `allocate`; `push` never calls `magazine::insert`.
            if unsafe { &*m }.push(ptr as usize, self.magazine_capacity) {
                return Ok(());
            }
        }
        self.deallocate_shared(ptr as usize, key);
        Ok(())
    }

    crate::resource::accessibility!(upstream);

    crate::resource::forward_claims!(claims);
}

impl<U: MemoryResource> Drop for FixedSizeMemoryResource<U> {
    fn drop(&mut self) {
        // Work still queued may use freed blocks; the upstream gets them back once it is done.
        let chunks = || self.table.chunks().collect::<Vec<_>>();
        give_back_chunks(&self.upstream, &*self.order, DEFAULT_ALIGNMENT, chunks);
    }
}

/// What the stream registry holds of a fixed-size resource: enough to retire a stream, and
/// nothing that keeps the resource alive.
struct FixedSizeTenant {
    shared: Weak<Shared>,
    order: Arc<dyn StreamOrder>,
}

impl StreamTenant for FixedSizeTenant {
    fn stream_retiring(&self, key: StreamKey) {
        let Some(shared) = self.shared.upgrade() else { return };
        let mut st = shared.list.lock();
        // The stream's blocks in any thread's magazine join its set, to retire with it; those
        // magazines never serve again.
        let mut cached = Vec::new();
        shared.magazines.lock().retain(|m| {
            if m.key != key {
                return true;
            }
            let mut ms = m.state.lock();
            cached.append(&mut ms.blocks);
            ms.usable = false;
            ms.retired = true;
            false
        });
        if !cached.is_empty() {
            let slot = st.sets.slot_of(key);
            for b in cached {
                st.sets.push(slot, b);
            }
        }
        let Some(slot) = st.sets.find(key) else { return };
        // Filled by this stream: a capture made now, while it is alive, covers its blocks. Filled
        // by an earlier stream with this handle, or never checked: only a synchronisation does.
        let retired = if st.sets.identity(slot) == StreamIdentity::Trusted {
            let retired = StreamKey::retired_after_capture(next_retirement_number());
            match self.order.retire(key, retired) {
                Ok(()) => retired,
                Err(_) => StreamKey::retired_after_sync(next_retirement_number()),
            }
        } else {
            StreamKey::retired_after_sync(next_retirement_number())
        };
        st.sets.retire_key(key, retired);
        st.sets.prune();
        self.order.forget_retired(&|k| st.sets.has_key(k));
    }
}

impl<U: MemoryResource> std::fmt::Debug for FixedSizeMemoryResource<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixedSizeMemoryResource")
            .field("block_size", &self.block_size)
            .field("blocks_per_chunk", &self.blocks_per_chunk)
            .field("pool_size", &self.pool_size())
            .finish_non_exhaustive()
    }
}
