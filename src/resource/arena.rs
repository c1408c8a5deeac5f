//! An arena allocator over one range taken from the upstream at construction (RMM's
//! `arena_memory_resource`), fast at many threads: each thread has its own small arena per
//! stream, found through a thread-local cache, so an allocation or free takes no global lock and
//! makes no CUDA call while the thread's arena holds enough memory.

use crate::error::{Error, Result};
use crate::resource::claims::ClaimTable;
use crate::resource::cuda_event_order::default_order;
use crate::resource::upstream_check::{allocate_chunk, give_back_chunk, give_back_chunks};
use crate::resource::{effective_alignment, MemoryResource};
use crate::stream::CudaStreamView;
use crate::PoolState;
use parking_lot::Mutex;
use rmm_algorithms::arena::{is_large, search_size, GlobalArena, SmallArena, MIN_SUPERBLOCK};
use rmm_algorithms::{
    current_thread_number, rounded_size, SpinMutex, StreamIdentity, StreamKey, StreamOrder, GRANULE, MAX_BLOCK_BYTES,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

mod slow_path;
mod thread_cache;

/// A wait's outcome, with "no driver" counted as done: without a driver no device work exists
/// (a device-accessible upstream may be host memory standing in for device memory in tests).
fn without_driver_ok(waited: Result<()>) -> Result<()> {
    match waited {
        Err(Error::NoDriver(_)) => Ok(()),
        other => other,
    }
}

/// One thread's arena for one stream. It only ever hands blocks to that stream, so blocks freed on
/// the stream are reused at once; a block freed on another stream comes back after that stream was
/// synchronised.
pub(crate) struct Arena {
    /// Number in the global arena's map of superblock owners.
    number: usize,
    key: StreamKey,
    /// On a cache line of its own: threads lock only their own arenas.
    state: SpinMutex<ArenaState>,
}

/// What an arena's lock guards.
#[repr(align(128))]
struct ArenaState {
    arena: SmallArena,
    /// Which stream filled the arena (see `StreamOrder::identity`).
    identity: StreamIdentity,
}

/// The arenas of a resource, by thread and stream, and their numbers.
#[derive(Default)]
struct Registry {
    by_key: HashMap<(usize, StreamKey), Arc<Arena>>,
    by_number: HashMap<usize, (usize, StreamKey)>,
    next_number: usize,
}

/// What the resource shares with the stream registry's tenant.
struct Shared {
    global: Mutex<GlobalArena>,
    registry: Mutex<Registry>,
}

/// RMM's arena allocator: a global arena of `arena_size` bytes taken from `U` at construction,
/// handing superblocks to per-thread, per-stream arenas and serving requests of more than 1 MiB
/// itself.
///
/// Stream safety: a thread's arena for a stream serves only that stream. A block freed on a stream
/// other than its arena's goes back to its arena after that stream is synchronised (as RMM does);
/// a large block freed on a stream this library can trust (one it made, or a default stream) stays
/// on that stream's own free lists in the global arena, reused by that stream at once and by others
/// after a synchronisation of everything, or of the stream as it is destroyed; a large block freed
/// on any other stream goes back to the global arena after that stream is synchronised (as RMM);
/// superblocks go back to the global arena only after a synchronisation of the device, when a
/// request finds the arena out of memory: all of them, as in RMM, those with blocks still handed
/// out too, which then serve other arenas from their free part and take those blocks' frees
/// wherever they are. A stream destroyed while an arena holds its blocks is
/// synchronised while still alive (streams of this library), or found replaced by the driver's
/// stream id, and then everything is synchronised before its arena serves the new stream.
pub struct ArenaMemoryResource<U: MemoryResource> {
    shared: Arc<Shared>,
    /// Unique among all arena resources ever made: the key of the thread-local caches.
    id: u64,
    upstream: U,
    base: usize,
    size: usize,
    order: Arc<dyn StreamOrder>,
    ordered: bool,
    dump_log_on_failure: bool,
    /// One defragmentation at a time.
    defrag_lock: Mutex<()>,
    _tenancy: Option<crate::stream_registry::Tenancy>,
    /// Blocks a suballocator over this arena claimed as its chunks.
    claims: ClaimTable,
}

impl<U: MemoryResource> ArenaMemoryResource<U> {
    /// An arena of `arena_size` bytes (rounded down to 256; by default half the current device's
    /// free memory) taken from `upstream` now. With `dump_log_on_failure` a failed allocation
    /// appends the arenas' state to `rmm_arena_memory_dump.log`.
    pub fn new(upstream: U, arena_size: Option<usize>, dump_log_on_failure: bool) -> Result<Self> {
        let order = default_order(&upstream);
        // SAFETY: `default_order` orders device-accessible memory with CUDA events.
        unsafe { Self::with_stream_order(upstream, arena_size, dump_log_on_failure, order) }
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
        arena_size: Option<usize>,
        dump_log_on_failure: bool,
        order: Box<dyn StreamOrder>,
    ) -> Result<Self> {
        let size = match arena_size {
            Some(size) => size,
            None => crate::device::available_device_memory()?.0 / 2,
        } & !(GRANULE - 1);
        if size < MIN_SUPERBLOCK {
            // RMM's text (its logic_error's what()).
            return Err(Error::InvalidArgument("Arena size smaller than minimum superblock size.".into()));
        }
        if size > MAX_BLOCK_BYTES {
            return Err(Error::InvalidArgument(format!("arena size {size} is above the largest ({MAX_BLOCK_BYTES})")));
        }
        let ordered = order.is_needed();
        let order: Arc<dyn StreamOrder> = Arc::from(order);
        let base = allocate_chunk(&upstream, size, GRANULE, CudaStreamView::DEFAULT)? as usize;
        // The upstream may allocate in stream order: once nothing is pending, every stream may
        // take the memory (this also ties the order to the current device).
        if let Err(e) = without_driver_ok(order.synchronize_all()) {
            let _ = give_back_chunk(&upstream, base as *mut u8, size, GRANULE, CudaStreamView::DEFAULT);
            return Err(e);
        }
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let shared = Arc::new(Shared {
            global: Mutex::new(GlobalArena::new(base, size)),
            registry: Mutex::new(Registry::default()),
        });
        let tenancy = ordered.then(|| slow_path::announce_retiring_streams(&shared));
        Ok(ArenaMemoryResource {
            claims: ClaimTable::new(),
            shared,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            upstream,
            base,
            size,
            order,
            ordered,
            dump_log_on_failure,
            defrag_lock: Mutex::new(()),
            _tenancy: tenancy,
        })
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }

    /// Bytes of the global arena (taken from the upstream at construction).
    pub fn arena_size(&self) -> usize {
        self.size
    }

    /// The global arena's first byte and size: every block lies in this range.
    pub fn arena_range(&self) -> (usize, usize) {
        (self.base, self.size)
    }

    /// Whether a failed allocation dumps the arenas' state to the log file.
    pub fn dump_log_on_failure(&self) -> bool {
        self.dump_log_on_failure
    }

    /// Number of per-thread, per-stream arenas.
    pub fn arena_count(&self) -> usize {
        self.shared.registry.lock().by_key.len()
    }

    /// Arena size, free bytes (in the global arena and in every small arena) and the largest free
    /// block anywhere.
    pub fn state(&self) -> PoolState {
        let mut state = self.shared.global.lock().state();
        let arenas: Vec<Arc<Arena>> = self.shared.registry.lock().by_key.values().cloned().collect();
        for arena in arenas {
            let s = arena.state.lock().arena.state();
            state.free_bytes += s.free_bytes;
            state.largest_free_block = state.largest_free_block.max(s.largest_free_block);
        }
        state
    }

    /// Runs `f` on the calling thread's arena for `key`, made on first use.
    /// `f` has one call site, so that it is inlined here (a second one, for a cache miss, kept it
    /// out of line, at a cost of a tenth of the arena's instructions on one thread).
    #[inline(always)]
    fn with_arena<R>(&self, key: StreamKey, f: impl FnOnce(&Arena) -> R) -> R {
        let mut made = None;
        let arena = match thread_cache::lookup(self.id, key) {
            Some(arena) => arena,
            None => Arc::as_ptr(made.insert(self.cached_arena_of(key))),
        };
        // SAFETY: a cached arena stays alive while the thread's cache holds its `Arc`, until the
        // thread next calls `thread_cache::insert`, which `f` never does (no path under an arena's
        // lock reaches `with_arena`); an arena just made is held by `made` until `f` returns.
        f(unsafe { &*arena })
    }

    /// The calling thread's arena for `key`, made if there is none, and now cached.
    #[cold]
    #[inline(never)]
    fn cached_arena_of(&self, key: StreamKey) -> Arc<Arena> {
        let arena = self.arena_of(key);
        thread_cache::insert(self.id, key, &arena);
        arena
    }

    /// The calling thread's arena for `key` from the registry, made if there is none.
    #[cold]
    #[inline(never)]
    fn arena_of(&self, key: StreamKey) -> Arc<Arena> {
        let thread = current_thread_number();
        let mut registry = self.shared.registry.lock();
        if let Some(arena) = registry.by_key.get(&(thread, key)) {
            return arena.clone();
        }
        registry.next_number += 1;
        let number = registry.next_number;
        let identity = self.order.identity(key, StreamIdentity::Unknown);
        let arena =
            Arc::new(Arena { number, key, state: SpinMutex::new(ArenaState { arena: SmallArena::new(), identity }) });
        registry.by_key.insert((thread, key), arena.clone());
        registry.by_number.insert(number, (thread, key));
        arena
    }

    /// A small request from the calling thread's arena for `stream`, taking a superblock from the
    /// global arena when the arena has no fitting block. `Ok(None)` when the global arena has
    /// none either.
    #[inline(always)]
    fn allocate_small(&self, key: StreamKey, requested: usize, size: usize, align: usize) -> Result<Option<usize>> {
        self.with_arena(key, |arena| {
            let mut state = arena.state.lock();
            if state.identity != StreamIdentity::Trusted {
                self.check_identity(arena, &mut state)?;
            }
            if let Some(addr) = state.arena.allocate(requested, size, align) {
                return Ok(Some(addr));
            }
            Ok(self.grow(arena, &mut state, requested, size, align))
        })
    }

    /// A large request from the global arena: the stream's own large free blocks first, when its
    /// arena trusts the stream (see `large_blocks.rs` of the algorithm), then the common ones.
    /// `Ok(None)` when neither fits.
    #[inline(always)]
    fn allocate_large(&self, key: StreamKey, requested: usize, size: usize, align: usize) -> Result<Option<usize>> {
        let trusted = self.with_arena(key, |arena| {
            let mut state = arena.state.lock();
            if state.identity != StreamIdentity::Trusted {
                self.check_identity(arena, &mut state)?;
            }
            Ok::<_, Error>(state.identity == StreamIdentity::Trusted)
        })?;
        Ok(self.shared.global.lock().allocate_large(requested, size, align, trusted.then_some(key)))
    }

    /// Takes a superblock for `arena` (locked as `state`) and serves the request from it.
    #[cold]
    #[inline(never)]
    fn grow(
        &self,
        arena: &Arena,
        state: &mut ArenaState,
        requested: usize,
        size: usize,
        align: usize,
    ) -> Option<usize> {
        let search = search_size(size, align)?;
        let (superblock, live) = self.shared.global.lock().acquire(search, state.arena.held_bytes(), arena.number)?;
        if live.is_empty() {
            state.arena.adopt(superblock);
        } else {
            // A superblock a defragmentation took back: its free part was free then, after a
            // synchronisation of everything, or was freed to the global arena after its stream's.
            state.arena.adopt_with_live(superblock, &live);
        }
        state.arena.allocate(requested, size, align)
    }

    /// Makes sure the blocks of `arena` may serve its stream as it is now: a handle reused by a
    /// new stream, or a stream destroyed unsynchronised, costs a synchronisation of everything.
    #[cold]
    #[inline(never)]
    fn check_identity(&self, arena: &Arena, state: &mut ArenaState) -> Result<()> {
        let now = self.order.identity(arena.key, state.identity);
        // `Unknown`: the stream that had the handle was retired with its work done.
        if now != state.identity && state.identity != StreamIdentity::Unknown {
            without_driver_ok(self.order.synchronize_all())?;
        }
        state.identity = now;
        Ok(())
    }
}

// SAFETY: blocks are disjoint ranges of superblocks the upstream handed out and the arena keeps
// until it is dropped (or returns whole and free); a block is reused only after its free, in stream
// order; the accessibility answers are the upstream's.
unsafe impl<U: MemoryResource> MemoryResource for ArenaMemoryResource<U> {
    #[inline]
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        let align = effective_alignment(alignment)?;
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        let Some((size, search)) = rounded_size(bytes).and_then(|size| Some((size, search_size(size, align)?))) else {
            return Err(self.out_of_memory(bytes, "larger than any arena can hold"));
        };
        let found = if is_large(search) {
            self.allocate_large(stream.key(), bytes, size, align)?
        } else {
            self.allocate_small(stream.key(), bytes, size, align)?
        };
        match found {
            Some(addr) => Ok(addr as *mut u8),
            None => self.allocate_slow(bytes, size, align, search, stream),
        }
    }

    #[inline]
    fn deallocate(&self, ptr: *mut u8, bytes: usize, _alignment: usize, stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        self.claims.refuse_claimed(ptr)?;
        let key = stream.key();
        // No small arena holds a block larger than a superblock's smallest size.
        let small = bytes <= MIN_SUPERBLOCK;
        let (freed, trusted) = self.with_arena(key, |arena| {
            let mut state = arena.state.lock();
            let freed = if small { state.arena.try_deallocate(ptr as usize, bytes) } else { None };
            (freed, state.identity == StreamIdentity::Trusted)
        });
        match freed {
            Some(freed) => freed.map_err(Error::Misuse),
            None => self.deallocate_elsewhere(ptr as usize, bytes, key, trusted, stream),
        }
    }

    crate::resource::accessibility!(upstream);

    crate::resource::forward_claims!(claims);
}

impl<U: MemoryResource> Drop for ArenaMemoryResource<U> {
    fn drop(&mut self) {
        // The arenas stay in threads' caches until those notice the resource is gone; they hold
        // no memory of their own.
        self.shared.registry.lock().by_key.clear();
        // Work still queued may use blocks of the arena: the upstream gets it back after that.
        give_back_chunks(&self.upstream, &*self.order, GRANULE, || [(self.base, self.size)]);
    }
}
