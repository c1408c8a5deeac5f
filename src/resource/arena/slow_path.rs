//! The arena resource's rare paths: large requests, frees through another stream's arena,
//! defragmentation before out-of-memory, the dump of the arenas' state, and retiring streams.

use super::{without_driver_ok, Arena, ArenaMemoryResource, Shared};
use crate::error::{Error, Misuse, Result};
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use crate::stream_registry::{add_tenant, StreamTenant, Tenancy};
use rmm_algorithms::arena::{is_large, Lookup};
use rmm_algorithms::{StreamIdentity, StreamKey};
use std::sync::{Arc, Weak};

/// Where a failed allocation's dump goes (RMM's file name).
pub const DUMP_FILE: &str = "rmm_arena_memory_dump.log";

impl<U: MemoryResource> ArenaMemoryResource<U> {
    /// An allocation the calling thread's arena could not serve (or a large one): from the global
    /// arena, then once more after a defragmentation, else out-of-memory.
    #[cold]
    #[inline(never)]
    pub(super) fn allocate_slow(
        &self,
        requested: usize,
        size: usize,
        align: usize,
        search: usize,
        stream: CudaStreamView,
    ) -> Result<*mut u8> {
        let key = stream.key();
        let large = is_large(search);
        let attempt = |this: &Self| -> Result<Option<usize>> {
            if large {
                this.allocate_large(key, requested, size, align)
            } else {
                this.allocate_small(key, requested, size, align)
            }
        };
        // The request was just tried (a small one: its arena's blocks, then a superblock).
        if self.defragment() {
            if let Some(addr) = attempt(self)? {
                return Ok(addr as *mut u8);
            }
        }
        if self.dump_log_on_failure {
            self.dump_memory_log(requested);
        }
        Err(self.out_of_memory(requested, "No room in arena"))
    }

    /// RMM's out-of-memory error, with the arena's sizes.
    pub(super) fn out_of_memory(&self, requested: usize, reason: &str) -> Error {
        Error::OutOfMemory {
            requested,
            pool: Some(self.state()),
            reason: format!("Maximum pool size exceeded (failed to allocate {requested} bytes): {reason}"),
            verbatim: false,
        }
    }

    /// After a synchronisation of everything, gives every arena's superblocks back to the global
    /// arena (as RMM's defragmentation does): empty ones merge with their free neighbours there,
    /// the others are parked with the blocks still handed out in them until an arena adopts them.
    /// Arenas that hold nothing and that no thread caches are forgotten. False (nothing moved)
    /// when the synchronisation failed.
    ///
    /// Every arena stays locked from before the synchronisation until its superblocks are back:
    /// a block freed into an arena meanwhile, on its own stream, would otherwise reach another
    /// stream with that stream's work still queued.
    pub(super) fn defragment(&self) -> bool {
        let _one_at_a_time = self.defrag_lock.lock();
        let mut arenas: Vec<Arc<Arena>> = self.shared.registry.lock().by_key.values().cloned().collect();
        // One order for taking many arena locks; only a defragmentation takes more than one.
        arenas.sort_unstable_by_key(|a| a.number);
        let mut locked: Vec<_> = arenas.iter().map(|a| a.state.lock()).collect();
        // Held across the synchronisation too: a large block freed to its stream's own lists
        // meanwhile must not reach the common ones with that stream's later work queued.
        let mut global = self.shared.global.lock();
        if without_driver_ok(self.order.synchronize_all()).is_err() {
            return false;
        }
        global.merge_streams();
        for state in &mut locked {
            for (superblock, live) in state.arena.release_all() {
                let released = global.give_back(superblock, live);
                debug_assert!(released.is_ok(), "an arena held a superblock the global arena did not give it");
            }
        }
        drop(global);
        drop(locked);
        drop(arenas);
        let mut registry = self.shared.registry.lock();
        let idle: Vec<(usize, StreamKey)> = registry
            .by_key
            .iter()
            .filter(|(_, a)| Arc::strong_count(a) == 1 && a.state.lock().arena.held_bytes() == 0)
            .map(|(&k, _)| k)
            .collect();
        for k in idle {
            if let Some(arena) = registry.by_key.remove(&k) {
                registry.by_number.remove(&arena.number);
            }
        }
        true
    }

    /// Frees a block the calling thread's arena for `key` did not hand out: a large block, a block
    /// of a parked superblock, or a block of another arena. A large block freed on a stream its
    /// arena `trusted` goes to that stream's own free lists in the global arena, without a wait.
    /// Otherwise, unless the block's arena serves the same stream, `stream` is synchronised first
    /// (RMM does the same): the block then serves another stream at once. A superblock may move
    /// while this runs (a defragmentation parks it, an arena adopts it): the block is then looked
    /// for again where it went.
    #[cold]
    #[inline(never)]
    pub(super) fn deallocate_elsewhere(
        &self,
        ptr: usize,
        bytes: usize,
        key: StreamKey,
        trusted: bool,
        stream: CudaStreamView,
    ) -> Result<()> {
        if trusted {
            if let Some(freed) = self.shared.global.lock().deallocate_on(ptr, bytes, key) {
                return freed.map_err(Error::Misuse);
            }
        }
        let mut synced = false;
        loop {
            let lookup = self.shared.global.lock().lookup(ptr);
            match lookup {
                Lookup::Outside => return Err(Error::Misuse(Misuse::UnknownPointer { ptr })),
                Lookup::Global => {
                    if !synced {
                        self.synchronize(stream)?;
                        synced = true;
                    }
                    let mut global = self.shared.global.lock();
                    if global.lookup(ptr) == Lookup::Global {
                        return global.deallocate(ptr, bytes).map_err(Error::Misuse);
                    }
                }
                Lookup::Held { owner } => {
                    let arena = {
                        let registry = self.shared.registry.lock();
                        registry.by_number.get(&owner).and_then(|k| registry.by_key.get(k)).cloned()
                    };
                    let Some(arena) = arena else {
                        return Err(Error::Misuse(Misuse::UnknownPointer { ptr }));
                    };
                    if arena.key != key && !synced {
                        self.synchronize(stream)?;
                        synced = true;
                    }
                    let mut state = arena.state.lock();
                    if let Some(freed) = state.arena.try_deallocate(ptr, bytes) {
                        return freed.map_err(Error::Misuse);
                    }
                    // While the arena is locked its superblocks stay: if `ptr` is still in one of
                    // them, it is no block handed out there, and the arena says why.
                    if self.shared.global.lock().lookup(ptr) == lookup {
                        return state.arena.deallocate(ptr, bytes).map_err(Error::Misuse);
                    }
                }
            }
        }
    }

    /// Waits for the work queued on `stream` (named in the current call, so alive).
    fn synchronize(&self, stream: CudaStreamView) -> Result<()> {
        if self.ordered {
            without_driver_ok(stream.synchronize())
        } else {
            Ok(())
        }
    }

    /// The arenas' state, as RMM's dump lists it.
    pub fn memory_log(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let global = self.shared.global.lock();
        let state = global.state();
        let held: Vec<_> = global.held().collect();
        let parked: Vec<_> = global.parked().collect();
        drop(global);
        let _ = writeln!(out, "  Arena size: {} bytes", self.size);
        let _ = writeln!(out, "  # superblocks: {}", held.len());
        let _ = writeln!(
            out,
            "  Global free memory: {} bytes, largest free range {} bytes",
            state.free_bytes, state.largest_free_block
        );
        let arenas: Vec<Arc<Arena>> = self.shared.registry.lock().by_key.values().cloned().collect();
        let (mut free, mut largest) = (0usize, 0usize);
        for arena in &arenas {
            let s = arena.state.lock().arena.state();
            free += s.free_bytes;
            largest = largest.max(s.largest_free_block);
        }
        let fragmentation = if free == 0 { 0.0 } else { (1.0 - largest as f64 / free as f64) * 100.0 };
        let _ = writeln!(out, "  Total free memory in superblocks: {free} bytes");
        let _ = writeln!(out, "  Largest block of free memory in superblocks: {largest} bytes");
        let _ = writeln!(out, "  Fragmentation: {fragmentation:.2}");
        for (i, (superblock, owner)) in held.iter().enumerate() {
            let _ = writeln!(
                out,
                "    Superblock {i}: start={:#x}, end={:#x}, size={} bytes, arena={owner}",
                superblock.addr,
                superblock.end(),
                superblock.size
            );
        }
        for (i, (superblock, blocks)) in parked.iter().enumerate() {
            let _ = writeln!(
                out,
                "    Parked superblock {i}: start={:#x}, end={:#x}, size={} bytes, blocks in use={blocks}",
                superblock.addr,
                superblock.end(),
                superblock.size
            );
        }
        out
    }

    /// Appends the arenas' state after a failed request of `bytes` to [`DUMP_FILE`].
    fn dump_memory_log(&self, bytes: usize) {
        use std::io::Write;
        let text = format!(
            "**************************************************\nFailed to allocate {bytes} bytes\n{}",
            self.memory_log()
        );
        // The allocation fails either way; a dump that cannot be written is said on the logger.
        match crate::logger::open_log_file(std::path::Path::new(DUMP_FILE), crate::logger::LogFileMode::Append) {
            Ok(mut file) => {
                let _ = file.write_all(text.as_bytes());
            }
            Err(e) => crate::log_warn!("arena memory dump not written: {e}"),
        }
    }

    /// Checks the invariants of the global arena and of every arena, and that the superblocks the
    /// arenas hold are those the global arena handed them; for tests.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let arenas: Vec<Arc<Arena>> = self.shared.registry.lock().by_key.values().cloned().collect();
        let mut from_arenas = Vec::new();
        for arena in &arenas {
            let state = arena.state.lock();
            state.arena.check_invariants().map_err(|e| format!("arena {}: {e}", arena.number))?;
            from_arenas.extend(state.arena.superblocks().map(|s| (s.addr, s.size, arena.number)));
        }
        let global = self.shared.global.lock();
        global.check_invariants().map_err(|e| format!("global arena: {e}"))?;
        let mut from_global: Vec<_> = global.held().map(|(s, owner)| (s.addr, s.size, owner)).collect();
        from_arenas.sort_unstable();
        from_global.sort_unstable();
        if from_arenas != from_global {
            return Err(format!("arenas hold superblocks {from_arenas:x?}, the global arena gave {from_global:x?}"));
        }
        Ok(())
    }
}

/// Registers the arenas to hear of streams of this library about to be destroyed.
pub(super) fn announce_retiring_streams(shared: &Arc<Shared>) -> Tenancy {
    add_tenant(Arc::new(ArenaTenant { shared: Arc::downgrade(shared) }))
}

/// What the stream registry holds of an arena resource: nothing that keeps it alive.
struct ArenaTenant {
    shared: Weak<Shared>,
}

impl StreamTenant for ArenaTenant {
    /// The stream's arenas may hold blocks its queued work still uses, and the next stream with
    /// its handle would take them: wait for that work now, while the stream is alive. Should that
    /// fail, the arenas synchronise everything before they serve again.
    fn stream_retiring(&self, key: StreamKey) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let arenas: Vec<Arc<Arena>> =
            shared.registry.lock().by_key.iter().filter(|((_, k), _)| *k == key).map(|(_, a)| a.clone()).collect();
        // SAFETY: a retiring stream is still alive (the registry's contract), for this call; the
        // registry retires only streams named by a handle.
        let Some(stream) = (unsafe { CudaStreamView::of_key(key) }) else {
            return;
        };
        let idle = arenas.is_empty() && !shared.global.lock().stream_has_blocks(key);
        let synced = idle || without_driver_ok(stream.synchronize()).is_ok();
        retire_arenas(&shared, key, &arenas, synced);
    }
}

/// Forgets what the arenas knew of the stream `key` names, about to be destroyed: its large free
/// blocks join everyone's where its work is done (`synced`), else wait for a synchronisation of
/// everything; and its arenas ask who the next stream with that handle is before they serve it
/// (`Unknown`), or synchronise everything first (`Stale`). An arena that kept trusting the handle
/// would keep a later stream's large frees on its own lists without a wait, and a third stream
/// with the handle could take them while that one's work still ran.
fn retire_arenas(shared: &Shared, key: StreamKey, arenas: &[Arc<Arena>], synced: bool) {
    shared.global.lock().retire_stream(key, synced);
    let identity = if synced { StreamIdentity::Unknown } else { StreamIdentity::Stale };
    for arena in arenas {
        arena.state.lock().identity = identity;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::HostMemoryResource;
    use rmm_algorithms::StreamOrder;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

    /// Streams of this library until `foreign` is set, then each named by a driver id; counts
    /// synchronisations of everything. Not "needed": the handles are made up, no driver sees them.
    struct SwitchingOrder {
        foreign: Arc<AtomicBool>,
        syncs: Arc<AtomicUsize>,
    }

    impl StreamOrder for SwitchingOrder {
        fn record(&self, _: StreamKey, _: StreamIdentity) -> Result<()> {
            Ok(())
        }
        fn wait(&self, _: StreamKey, _: StreamIdentity, _: StreamKey) -> Result<()> {
            Ok(())
        }
        fn synchronize_all(&self) -> Result<()> {
            self.syncs.fetch_add(1, SeqCst);
            Ok(())
        }
        fn identity(&self, key: StreamKey, _: StreamIdentity) -> StreamIdentity {
            match key.handle() {
                Some(h) if self.foreign.load(SeqCst) => StreamIdentity::Driver(h as u64),
                _ => StreamIdentity::Trusted,
            }
        }
        fn is_needed(&self) -> bool {
            false
        }
    }

    #[test]
    fn the_next_stream_with_a_retired_handle_is_not_trusted() {
        const SIZE: usize = 8 << 20;
        let (foreign, syncs) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let order = Box::new(SwitchingOrder { foreign: foreign.clone(), syncs: syncs.clone() });
        // SAFETY: host memory that no device work touches; the order only counts.
        let r = unsafe { ArenaMemoryResource::with_stream_order(HostMemoryResource::new(), Some(SIZE), false, order) }
            .unwrap();
        // SAFETY: names for resources over host memory: no driver call sees them.
        let (s, other) = unsafe { (CudaStreamView::from_handle(1 << 12), CudaStreamView::from_handle(2 << 12)) };
        let x = r.allocate(6 << 20, 256, s).unwrap();
        r.deallocate(x, 6 << 20, 256, s).unwrap();
        // The library destroys the stream, its work done; a stream made elsewhere gets the handle.
        let arenas: Vec<Arc<Arena>> = r
            .shared
            .registry
            .lock()
            .by_key
            .iter()
            .filter(|((_, k), _)| *k == s.key())
            .map(|(_, a)| a.clone())
            .collect();
        assert!(!arenas.is_empty());
        retire_arenas(&r.shared, s.key(), &arenas, true);
        foreign.store(true, SeqCst);
        let before = syncs.load(SeqCst);
        // Its first allocation needs no wait (the old stream's work is done) ...
        let y = r.allocate(6 << 20, 256, s).unwrap();
        assert_eq!(syncs.load(SeqCst), before);
        // ... and its free is not kept on the handle's own lists: any stream takes the block at
        // once, as after any free on a stream the arena cannot trust.
        r.deallocate(y, 6 << 20, 256, s).unwrap();
        assert_eq!(r.allocate(6 << 20, 256, other).unwrap(), y);
        assert_eq!(syncs.load(SeqCst), before);
        r.deallocate(y, 6 << 20, 256, other).unwrap();
        r.check_invariants().unwrap();
    }
}
