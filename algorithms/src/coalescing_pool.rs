//! The pool algorithm: address ranges carved into blocks, per-stream free lists indexed by size
//! class, O(1) allocate and free with immediate coalescing.
//!
//! Invariants, kept after every call (including ones that return an error):
//! - the blocks of a chunk tile it exactly, linked in address order;
//! - a block is either allocated (in `allocated`) or free (in exactly one stream's free lists or
//!   cache); a cached block keeps its entry in `allocated`, so the address map holds exactly the
//!   blocks handed out and the cached ones;
//! - no two physically adjacent blocks are both free on the same stream (they would have merged).
//!   Adjacent free blocks of different streams stay apart until one stream's lists are merged into
//!   the other's, because each may still be in use by work on its own stream. Cached blocks (see
//!   below) are the exception: they merge when the cache is flushed.
//!
//! A stream that has a pool to itself keeps its recently freed small blocks whole, by exact size,
//! in a bounded cache, and serves requests of the same size from there first: most requests of a
//! typical trace are small, and for them this skips the split on allocation and the merge on free.
//! A request the stream's own lists cannot serve first tries memory that needs no merging (fresh
//! memory, published sets: [`CoalescingPool::find_donor`]); then the caches are flushed (merging
//! as a free would have) before anything else, so a hand-over to another stream, a merge of sets
//! or growth sees the memory as if it had never been cached.

use super::address_map::AddressMap;
pub use super::block::SetId;
use super::block::{BlockId, BlockTable, Owner, MAX_BLOCK_BYTES, NIL};
use super::free_list::{absorb_next, split, FreeLists};
use super::size_class::{map_ceil, map_floor, Class};
use super::stream_identity::PackedIdentity;
use super::stream_order::{StreamIdentity, StreamKey};
use crate::error::{Misuse, PoolState};
use std::ops::{Index, IndexMut};

mod cache;
mod chunks;
mod contiguous;
mod invariants;
mod retirement;
mod search;
mod walk;

pub use chunks::LiveBlock;
pub use walk::BlockView;

/// Granularity of every block size and address.
pub const GRANULE: usize = 256;
const GRANULE_SHIFT: u32 = 8;

/// Block sizes (in granules) below this are cached on free while a stream has its pool alone.
const CACHE_CLASSES: usize = 32;
/// Cached blocks per size and stream, at most: bounds what a cache keeps from coalescing.
const CACHE_DEPTH: u8 = 32;
/// The largest request a stream's cache may serve: one that rounds to the largest cached size.
pub const CACHED_BYTES_MAX: usize = (CACHE_CLASSES - 1) << GRANULE_SHIFT;

/// Free lists of one stream. A stream has a private set (blocks it freed since it last published;
/// only it may use them) and, once it has published, a published set (blocks covered by its last
/// recorded event; any stream may take them after waiting for that event).
struct StreamSet {
    key: StreamKey,
    free: FreeLists,
    /// Bytes of the blocks in `free` and in `cache`.
    free_bytes: usize,
    /// For a published set: its stream's private set.
    published_by: Option<SetId>,
    /// For a private set: its published set, once it has one.
    publishes_to: Option<SetId>,
    /// Another stream asked for this private set's blocks; the owner's next call publishes them.
    wanted: bool,
    /// Cached blocks of each size in granules (`1..CACHE_CLASSES`), linked by `next_free`; their
    /// bytes count in `free_bytes`.
    cache: [BlockId; CACHE_CLASSES],
    cache_len: [u8; CACHE_CLASSES],
    /// Which stream filled this set (see `StreamOrder::identity`): checked before the stream
    /// takes from it without waiting, since a handle outlives its stream.
    identity: PackedIdentity,
    /// For blocks sealed for a synchronisation: the set they came from and its key, where they go
    /// back should the synchronisation fail.
    sealed_from: Option<(SetId, StreamKey)>,
}

impl StreamSet {
    fn new(key: StreamKey, published_by: Option<SetId>) -> Self {
        StreamSet {
            identity: PackedIdentity::UNKNOWN,
            sealed_from: None,
            key,
            free: FreeLists::new(),
            free_bytes: 0,
            published_by,
            publishes_to: None,
            wanted: false,
            cache: [NIL; CACHE_CLASSES],
            cache_len: [0; CACHE_CLASSES],
        }
    }
}

impl Index<SetId> for Vec<StreamSet> {
    type Output = StreamSet;
    #[inline(always)]
    fn index(&self, set: SetId) -> &StreamSet {
        &self[set.index()]
    }
}

impl IndexMut<SetId> for Vec<StreamSet> {
    #[inline(always)]
    fn index_mut(&mut self, set: SetId) -> &mut StreamSet {
        &mut self[set.index()]
    }
}

/// The allocator state of a pool, independent of where its memory comes from.
#[derive(Default)]
pub struct CoalescingPool {
    blocks: BlockTable,
    allocated: AddressMap,
    sets: Vec<StreamSet>,
    chunks: Vec<(usize, usize)>,
    pool_size: usize,
    /// The set the last call used: found without a look into `sets`.
    last: LastSet,
    /// Private free-list sets of real streams (not FRESH, not published sets).
    stream_count: usize,
    /// Calls (through `set_of`) since the stream changed, up to [`RECENT_CALLS`].
    calls_since_switch: u32,
    /// Blocks in all streams' caches: 0 makes a flush free.
    cached_blocks: usize,
    /// False while no set has ever been asked to publish (`StreamSet::wanted`): then a call needs
    /// no look into its set for the flag. Set with the first such request and kept (a pool whose
    /// streams hand blocks to each other pays one test more, a stream alone saves the look).
    maybe_wanted: bool,
}

/// The set of free lists the last call used, and its identity, cached in the pool's header. A key
/// no stream has (`UNUSED`) when no set is cached.
#[derive(Clone, Copy)]
struct LastSet {
    key: StreamKey,
    set: SetId,
    identity: PackedIdentity,
}

impl Default for LastSet {
    fn default() -> Self {
        LastSet { key: StreamKey::UNUSED, set: SetId::default(), identity: PackedIdentity::UNKNOWN }
    }
}

/// See [`CoalescingPool::shared_by_streams`].
pub const RECENT_CALLS: u32 = 256;

/// The bytes a request occupies before alignment: rounded up to the granule; `None` if that
/// overflows or exceeds what the size classes can index.
#[inline]
pub fn rounded_size(bytes: usize) -> Option<usize> {
    let size = bytes.checked_add(GRANULE - 1)? & !(GRANULE - 1);
    (size <= MAX_BLOCK_BYTES).then_some(size)
}

/// The bytes to search for so that an `align`-aligned block of `size` can be cut out of it.
#[inline]
fn search_size(size: usize, align: usize) -> usize {
    size + (align - GRANULE)
}

impl CoalescingPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// The ids of every set in the table, in table order.
    fn set_ids(&self) -> impl Iterator<Item = SetId> {
        (0..self.sets.len()).map(SetId::at)
    }

    /// The set of free lists of `key`, created on first use.
    #[inline]
    pub fn set_of(&mut self, key: StreamKey) -> SetId {
        self.set_and_identity_of(key).0
    }

    /// `key`'s set of free lists, as [`set_of`](Self::set_of), and its identity (see
    /// `StreamOrder::identity`), read beside the key on the fast path.
    #[inline]
    pub fn set_and_identity_of(&mut self, key: StreamKey) -> (SetId, StreamIdentity) {
        if self.last.key == key {
            self.count_call();
            return (self.last.set, self.last.identity.unpack());
        }
        if key != StreamKey::FRESH {
            self.calls_since_switch = 0;
        }
        let set = self.set_of_slow(key);
        (set, self.sets[set].identity.unpack())
    }

    /// `key`'s set and identity if the last call used it, else `None`; unlike
    /// [`set_and_identity_of`](Self::set_and_identity_of) this counts no call: a caller that goes
    /// on with the call counts it with [`count_call`](Self::count_call).
    #[inline(always)]
    pub fn last_set_of(&self, key: StreamKey) -> Option<(SetId, StreamIdentity)> {
        (self.last.key == key).then(|| (self.last.set, self.last.identity.unpack()))
    }

    /// Counts a call on the stream of the last call, as
    /// [`set_and_identity_of`](Self::set_and_identity_of) does (see
    /// [`shared_by_streams`](Self::shared_by_streams)).
    #[inline(always)]
    pub fn count_call(&mut self) {
        // Only `< RECENT_CALLS` is ever asked, so the count stops there: past it (a stream alone
        // for a while) the call reads the count and stores nothing.
        if self.calls_since_switch < RECENT_CALLS {
            self.calls_since_switch += 1;
        }
    }

    #[cold]
    fn set_of_slow(&mut self, key: StreamKey) -> SetId {
        let set = match self.private_set(key) {
            Some(i) => i,
            None => {
                // Only real streams count: not fresh memory, nor a retired key given memory directly.
                if key.is_stream() {
                    self.stream_count += 1;
                }
                self.new_set(key, None)
            }
        };
        // Fresh memory is no stream: looking it up must not count as another stream's call.
        if key != StreamKey::FRESH {
            self.last = LastSet { key, set, identity: self.sets[set].identity };
        }
        set
    }

    /// `key`'s private set, if it has one.
    fn private_set(&self, key: StreamKey) -> Option<SetId> {
        self.sets.iter().position(|s| s.key == key && s.published_by.is_none()).map(SetId::at)
    }

    /// A new set of free lists for `key`, in the place of a set no stream uses any more if there
    /// is one (streams come and go; their ids do not pile up).
    fn new_set(&mut self, key: StreamKey, published_by: Option<SetId>) -> SetId {
        // The set reused may be the cached one.
        self.last = LastSet::default();
        let lists = StreamSet::new(key, published_by);
        let reusable = |s: &StreamSet| s.key == StreamKey::UNUSED || (s.key.is_retired() && s.free_bytes == 0);
        // (A sealed set is never reused: its synchronisation will look for it.)
        match self.sets.iter().position(reusable) {
            Some(i) => {
                self.sets[i] = lists;
                SetId::at(i)
            }
            None => {
                self.sets.push(lists);
                SetId::at(self.sets.len() - 1)
            }
        }
    }

    /// Which stream filled `set` (see `StreamOrder::identity`).
    #[inline(always)]
    pub fn identity(&self, set: SetId) -> StreamIdentity {
        self.sets[set].identity.unpack()
    }

    /// Records which stream `set` belongs to, once the first call on it has asked.
    #[inline]
    pub fn set_identity(&mut self, set: SetId, identity: StreamIdentity) {
        let identity = PackedIdentity::pack(identity);
        self.sets[set].identity = identity;
        if self.last.set == set {
            self.last.identity = identity;
        }
        if let Some(p) = self.sets[set].publishes_to {
            self.sets[p].identity = identity;
        }
    }

    /// True while streams take turns on this pool (another stream called within the last
    /// [`RECENT_CALLS`] calls): then a stream's free blocks may be wanted by another stream at any
    /// time. A stream that has had the pool to itself for a while is not slowed by others that
    /// came and went.
    #[inline]
    pub fn shared_by_streams(&self) -> bool {
        self.stream_count > 1 && self.calls_since_switch < RECENT_CALLS
    }

    /// The stream key of a set (a published set has its owner's key).
    #[inline]
    pub fn key_of(&self, set: SetId) -> StreamKey {
        self.sets[set].key
    }

    /// Takes `size` bytes (rounded, see [`rounded_size`]) aligned to `align` (a power of two ≥ 256)
    /// from the free lists of `set`, recording `requested` for the misuse check on free. `None` when
    /// this stream has no fitting block. Always inlined: a call costs the pool's and the arena's
    /// fast paths a tenth of their instructions (cachegrind, `benches/cpp/host_pool_trace.cu`).
    #[inline(always)]
    pub fn allocate(&mut self, set: SetId, requested: usize, size: usize, align: usize) -> Option<usize> {
        if align == GRANULE {
            if let Some(a) = self.allocate_cached(set, requested, size) {
                return Some(a);
            }
        }
        let search = search_size(size, align);
        let id = match self.sets[set].free.class_at_or_above(map_ceil(search >> GRANULE_SHIFT)) {
            Some(c) => self.pop_head(set, c),
            None => {
                let floor = map_floor(search >> GRANULE_SHIFT);
                let id = self.sets[set].free.scan_class(&self.blocks, floor, search)?;
                self.unlink_free(id);
                id
            }
        };
        Some(self.take(set, id, requested, size, align))
    }

    /// Removes and returns the first block of class `c` (which must be non-empty) of `set`.
    #[inline(always)]
    fn pop_head(&mut self, set: SetId, c: Class) -> BlockId {
        let lists = &mut self.sets[set];
        let id = lists.free.pop(&mut self.blocks, c);
        lists.free_bytes -= self.blocks.get(id).size();
        id
    }

    /// Cuts an aligned block of `size` out of free block `id` (already unlinked from the free lists
    /// of `set`) and marks it allocated.
    #[inline(always)]
    fn take(&mut self, set: SetId, id: BlockId, requested: usize, size: usize, align: usize) -> usize {
        let mut id = id;
        let addr = self.blocks.get(id).addr;
        // Every block starts on a granule (a misaligned chunk is refused), so the granule needs
        // no cut: with `align` a constant, as on the pool's fast path, the test folds away.
        debug_assert!(addr.is_multiple_of(GRANULE));
        let aligned = if align == GRANULE { addr } else { (addr + align - 1) & !(align - 1) };
        if aligned != addr {
            // The front stays free on this stream; its previous neighbour is not free here (the
            // block was coalesced), so it needs no merge.
            let front = id;
            id = split(&mut self.blocks, front, aligned - addr);
            self.link_free(set, front);
        }
        if self.blocks.get(id).size() - size >= GRANULE {
            let rest = split(&mut self.blocks, id, size);
            self.link_free(set, rest);
        }
        self.hand_out(id, requested, size)
    }

    /// Marks block `id`, exactly `size` bytes (`requested` rounded up to 256) and in no free list
    /// or cache, as handed out, and returns its address.
    #[inline(always)]
    fn hand_out(&mut self, id: BlockId, requested: usize, size: usize) -> usize {
        let addr = self.hand_out_cached(id, requested, size);
        self.allocated.insert_at(id, addr, &self.blocks);
        addr
    }

    /// [`hand_out`](Self::hand_out) of a block just taken from a cache: its entry in the address
    /// map stayed while it was cached, so only the record changes.
    #[inline(always)]
    fn hand_out_cached(&mut self, id: BlockId, requested: usize, size: usize) -> usize {
        let b = self.blocks.get_mut(id);
        b.set_owner(Owner::HandedOut);
        b.set_slack((size - requested) as u32);
        b.addr
    }

    /// Returns the block at `addr` to the free lists of `set`. On misuse nothing changes.
    #[inline]
    pub fn deallocate(&mut self, addr: usize, bytes: usize, set: SetId) -> Result<(), Misuse> {
        match self.try_deallocate(addr, bytes, set) {
            Some(result) => result,
            None => Err(self.classify(addr)),
        }
    }

    /// Like [`deallocate`](Self::deallocate), but `None` (and nothing changed) when `addr` is not
    /// the start of a block handed out here: a sharded pool then asks the shard that owns `addr`,
    /// without paying for the misuse diagnosis. Always inlined, as [`allocate`](Self::allocate).
    #[inline(always)]
    pub fn try_deallocate(&mut self, addr: usize, bytes: usize, set: SetId) -> Option<Result<(), Misuse>> {
        let shared = self.shared_by_streams();
        self.try_deallocate_shared(addr, bytes, set, shared)
    }

    /// [`try_deallocate`](Self::try_deallocate) for a caller that has just asked
    /// [`shared_by_streams`](Self::shared_by_streams) (`shared`), which a free does not change:
    /// asked again after the free, it would be read again from memory the free wrote through.
    #[inline(always)]
    pub fn try_deallocate_shared(
        &mut self,
        addr: usize,
        bytes: usize,
        set: SetId,
        shared: bool,
    ) -> Option<Result<(), Misuse>> {
        debug_assert_eq!(shared, self.shared_by_streams());
        let found = self.allocated.find(addr, &self.blocks)?;
        let id = self.allocated.id_at(found);
        let b = self.blocks.get(id);
        // A cached block keeps its entry in the address map: freed already, as if not found.
        if !b.is_handed_out() {
            return None;
        }
        let allocated = b.size() - b.slack() as usize;
        if allocated != bytes {
            return Some(Err(Misuse::WrongSize { ptr: addr, allocated, given: bytes }));
        }
        let units = b.units as usize;
        // Only while one stream has the pool: a shared pool hands its free blocks to other
        // streams, which then want them merged.
        let alone = !shared;
        let lists = &mut self.sets[set];
        if units < CACHE_CLASSES && lists.cache_len[units] < CACHE_DEPTH && alone {
            let b = self.blocks.get_mut(id);
            b.set_owner(Owner::Cached);
            b.next_free = lists.cache[units];
            lists.cache[units] = id;
            lists.cache_len[units] += 1;
            lists.free_bytes += units << GRANULE_SHIFT;
            self.cached_blocks += 1;
        } else {
            self.allocated.remove_at(found, &self.blocks);
            self.release(set, id);
        }
        Some(Ok(()))
    }

    /// True when another stream asked for this stream's blocks (checked on every call: one flag,
    /// looked up only once any set has been asked).
    #[inline]
    pub fn is_wanted(&self, set: SetId) -> bool {
        // `get`: no panic, for the cache's path (see `allocate_cached`); every set asked is there.
        self.maybe_wanted && self.sets.get(set.index()).is_some_and(|s| s.wanted)
    }

    /// Moves the private free blocks of `set` to its published set: the caller has just captured
    /// the stream's work (`StreamOrder::record`), which covers every one of them.
    pub fn publish(&mut self, set: SetId) {
        self.flush_caches();
        let target = match self.sets[set].publishes_to {
            Some(p) => p,
            None => {
                let key = self.sets[set].key;
                let p = self.new_set(key, Some(set));
                self.sets[p].identity = self.sets[set].identity;
                self.sets[set].publishes_to = Some(p);
                p
            }
        };
        self.merge_into(set, target);
        self.sets[set].wanted = false;
    }

    /// True when `set`'s free blocks may go to another stream after a wait (or at once, if fresh):
    /// fresh memory, a published set, or the set of a retired stream.
    #[inline]
    pub fn is_published(&self, set: SetId) -> bool {
        let s = &self.sets[set];
        s.key == StreamKey::FRESH || s.published_by.is_some() || s.key.is_retired()
    }

    /// True while some stream has been asked to publish and has not yet: free memory that will
    /// soon be usable by others.
    pub fn has_wanted(&self) -> bool {
        self.maybe_wanted && self.sets.iter().any(|s| s.wanted)
    }

    /// Stops asking `set`'s stream to publish (its capture failed; it will be asked again).
    pub fn clear_wanted(&mut self, set: SetId) {
        self.sets[set].wanted = false;
    }

    /// Makes `id` (not in any free list) free on `set`, merging with free neighbours of that set.
    #[inline(always)]
    fn release(&mut self, set: SetId, mut id: BlockId) {
        let (prev, next) = {
            let b = self.blocks.get(id);
            (b.prev_phys, b.next_phys)
        };
        // The sentinel at NIL is never free: no test for NIL needed.
        if self.free_on(next, set) {
            self.unlink_free(next);
            absorb_next(&mut self.blocks, id);
        }
        if self.free_on(prev, set) {
            self.unlink_free(prev);
            absorb_next(&mut self.blocks, prev);
            id = prev;
        }
        self.link_free(set, id);
    }

    #[inline(always)]
    fn free_on(&self, id: BlockId, set: SetId) -> bool {
        let b = self.blocks.get(id);
        b.is_free_in(set)
    }

    #[inline(always)]
    fn link_free(&mut self, set: SetId, id: BlockId) {
        let lists = &mut self.sets[set];
        lists.free.push(&mut self.blocks, id);
        let b = self.blocks.get_mut(id);
        b.set_owner(Owner::Set(set));
        lists.free_bytes += b.size();
    }

    #[inline(always)]
    fn unlink_free(&mut self, id: BlockId) {
        let (set, size) = {
            let b = self.blocks.get(id);
            (b.set_id(), b.size())
        };
        let lists = &mut self.sets[set];
        lists.free_bytes -= size;
        lists.free.unlink(&mut self.blocks, id);
    }

    /// Why `addr` is not an allocated block start (cold: scans the records).
    #[cold]
    fn classify(&self, addr: usize) -> Misuse {
        for (_, b) in self.blocks.iter_live() {
            if b.addr <= addr && addr < b.end() {
                return if b.is_free() {
                    Misuse::DoubleFree { ptr: addr }
                } else {
                    Misuse::InteriorPointer { ptr: addr, block_start: b.addr }
                };
            }
        }
        Misuse::UnknownPointer { ptr: addr }
    }

    /// The other streams that hold any free memory.
    pub fn streams_with_free_memory(&mut self, set: SetId) -> Vec<SetId> {
        self.flush_caches();
        (0..self.sets.len()).map(SetId::at).filter(|&s| s != set && self.sets[s].free_bytes > 0).collect()
    }

    /// Moves every free block of `from` to `to`, coalescing where blocks meet. The caller must
    /// first have ordered `to` after `from` (see `StreamOrder`).
    pub fn merge_into(&mut self, from: SetId, to: SetId) {
        self.flush_caches();
        while let Some(c) = self.sets[from].free.largest_class() {
            let id = self.sets[from].free.first(c);
            self.unlink_free(id);
            self.release(to, id);
        }
    }

    /// Sizes for error messages and monitoring.
    pub fn state(&self) -> PoolState {
        let mut largest = 0;
        for s in &self.sets {
            if let Some(c) = s.free.largest_class() {
                let mut id = s.free.first(c);
                while id != NIL {
                    let b = self.blocks.get(id);
                    largest = largest.max(b.size());
                    id = b.next_free;
                }
            }
        }
        PoolState {
            pool_size: self.pool_size,
            free_bytes: self.sets.iter().map(|s| s.free_bytes).sum(),
            largest_free_block: largest,
        }
    }

    /// Bytes taken from the upstream.
    pub fn pool_size(&self) -> usize {
        self.pool_size
    }

    /// Number of blocks handed out and not yet freed.
    pub fn allocated_count(&self) -> usize {
        // Cached blocks keep their entries in the address map.
        self.allocated.len() - self.cached_blocks
    }
}
