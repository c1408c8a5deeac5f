//! `ArenaMemoryResource` on a host upstream: a shadow model over a million operations, threads
//! hammering their own and each other's arenas, defragmentation before out-of-memory, bad input,
//! and a microbenchmark (ignored; run with `--ignored --nocapture`).

mod common;

use common::{Model, Rng};
use rmm::resource::{ArenaMemoryResource, HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, Error, MemoryResource, Misuse};
use std::sync::{Arc, Mutex};

type Arena = ArenaMemoryResource<HostMemoryResource>;

fn arena(bytes: usize) -> Arena {
    ArenaMemoryResource::new(HostMemoryResource::new(), Some(bytes), false).unwrap()
}

/// Host streams need no ordering: any handle names one.
fn stream(i: usize) -> CudaStreamView<'static> {
    if i == 0 {
        CudaStreamView::DEFAULT
    } else {
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        unsafe { CudaStreamView::from_handle(i << 12) }
    }
}

fn rounded(bytes: usize) -> usize {
    bytes.next_multiple_of(256)
}

#[test]
fn a_million_operations_match_the_model() {
    const SIZE: usize = 64 << 20;
    let r = arena(SIZE);
    let (base, size) = r.arena_range();
    assert_eq!(size, SIZE);
    let mut rng = Rng::new(common::seed("arena_model", 0xa7e4a));
    let mut model = Model::default();
    let mut live: Vec<(usize, usize, usize)> = Vec::new();
    let mut ooms = 0;
    for op in 0..1_000_000 {
        if live.is_empty() || (rng.below(100) < 52 && live.len() < 1000) {
            let bytes = match rng.below(100) {
                0 => 1 + rng.below(3 << 20),
                1..=9 => 1 + rng.below(256 << 10),
                _ => 1 + rng.below(8 << 10),
            };
            let align = if rng.below(10) == 0 { 4096 } else { 256 };
            let s = rng.below(4);
            match r.allocate(bytes, align, stream(s)) {
                Ok(p) => {
                    let a = p as usize;
                    assert!(base <= a && a + bytes <= base + size, "block {a:#x}+{bytes} outside the arena");
                    model.insert(p, bytes, align);
                    live.push((a, bytes, s));
                }
                Err(e) => {
                    assert!(e.is_out_of_memory(), "{e}");
                    ooms += 1;
                }
            }
        } else {
            let i = rng.below(live.len());
            let (a, bytes, s) = live.swap_remove(i);
            // One free in eight goes through another stream's arena.
            let s = if rng.below(8) == 0 { (s + 1) % 4 } else { s };
            r.deallocate(a as *mut u8, bytes, 256, stream(s)).unwrap();
            model.remove(a as *mut u8);
        }
        if op % 50_000 == 0 {
            r.check_invariants().unwrap();
            let used: usize = live.iter().map(|&(_, b, _)| rounded(b)).sum();
            assert_eq!(r.state().free_bytes, SIZE - used, "free bytes after {op} operations");
        }
    }
    for (a, bytes, s) in live.drain(..) {
        r.deallocate(a as *mut u8, bytes, 256, stream(s)).unwrap();
    }
    r.check_invariants().unwrap();
    let state = r.state();
    assert_eq!((state.pool_size, state.free_bytes), (SIZE, SIZE));
    assert!(ooms < 20_000, "{ooms} allocations ran out of memory");
}

#[test]
fn eight_threads_hammer_then_everything_is_free() {
    const SIZE: usize = 256 << 20;
    let r = Arc::new(arena(SIZE));
    let handed: Arc<Mutex<Vec<(usize, usize)>>> = Arc::default();
    // Every thread holds a block while the arenas are counted (a defragmentation later may retire
    // arenas that hold nothing).
    let counted = Arc::new(std::sync::Barrier::new(9));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let (r, handed, counted) = (r.clone(), handed.clone(), counted.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::new(0x5eed + t as u64);
                let s = if t % 4 == 0 { CudaStreamView::DEFAULT } else { stream(t) };
                let first = r.allocate(64, 256, s).unwrap();
                counted.wait();
                counted.wait();
                r.deallocate(first, 64, 256, s).unwrap();
                let mut mine: Vec<(usize, usize)> = Vec::new();
                for _ in 0..100_000 {
                    if mine.is_empty() || rng.below(2) == 0 {
                        let max = if rng.below(50) == 0 { 2 << 20 } else { 16 << 10 };
                        let bytes = 1 + rng.below(max);
                        let p = r.allocate(bytes, 256, s).unwrap();
                        // SAFETY: host memory of `bytes` bytes, just handed out to this thread.
                        unsafe { p.write_bytes(t as u8, bytes.min(64)) };
                        mine.push((p as usize, bytes));
                    } else {
                        let (p, bytes) = mine.swap_remove(rng.below(mine.len()));
                        // SAFETY: as above; the block is still live and only this thread wrote it.
                        assert_eq!(unsafe { *(p as *const u8) }, t as u8, "another thread wrote into {p:#x}");
                        if rng.below(10) == 0 {
                            handed.lock().unwrap().push((p, bytes));
                        } else {
                            r.deallocate(p as *mut u8, bytes, 256, s).unwrap();
                        }
                    }
                    if rng.below(1000) == 0 {
                        // Free what other threads handed over, on this thread's stream.
                        let taken: Vec<_> = std::mem::take(&mut *handed.lock().unwrap());
                        for (p, bytes) in taken {
                            r.deallocate(p as *mut u8, bytes, 256, s).unwrap();
                        }
                    }
                }
                for (p, bytes) in mine {
                    r.deallocate(p as *mut u8, bytes, 256, s).unwrap();
                }
            })
        })
        .collect();
    counted.wait();
    let arenas = r.arena_count();
    counted.wait();
    for t in threads {
        t.join().unwrap();
    }
    for (p, bytes) in std::mem::take(&mut *handed.lock().unwrap()) {
        r.deallocate(p as *mut u8, bytes, 256, CudaStreamView::DEFAULT).unwrap();
    }
    r.check_invariants().unwrap();
    assert_eq!(r.state().free_bytes, SIZE, "every byte is free again");
    assert!(arenas >= 6, "threads on their own streams get arenas of their own ({arenas})");
}

#[test]
fn an_exhausted_arena_defragments_before_reporting_out_of_memory() {
    const SIZE: usize = 4 << 20;
    let r = arena(SIZE);
    // Stream 1 fills every superblock with small blocks, then frees them: its arena keeps them.
    let blocks: Vec<_> = std::iter::from_fn(|| r.allocate(64 << 10, 256, stream(1)).ok()).take(1000).collect();
    assert_eq!(blocks.len(), SIZE / (64 << 10), "small blocks use the whole arena");
    let err = r.allocate(256, 256, stream(2)).unwrap_err();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
    for &p in &blocks {
        r.deallocate(p, 64 << 10, 256, stream(1)).unwrap();
    }
    // Another stream's large request gets the superblocks back through a defragmentation.
    let big = r.allocate(3 << 20, 256, stream(2)).unwrap();
    r.check_invariants().unwrap();
    let err = r.allocate(2 << 20, 256, stream(3)).unwrap_err();
    assert!(err.to_string().contains("No room in arena"), "{err}");
    assert!(r.memory_log().contains("Arena size: 4194304"), "{}", r.memory_log());
    r.deallocate(big, 3 << 20, 256, stream(3)).unwrap();
    r.check_invariants().unwrap();
    assert_eq!(r.state().free_bytes, SIZE);
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    const SIZE: usize = 8 << 20;
    let too_small = ArenaMemoryResource::new(HostMemoryResource::new(), Some((1 << 20) - 1), false);
    assert!(matches!(too_small, Err(Error::InvalidArgument(_))));
    let r = arena(SIZE);
    assert!(matches!(r.allocate(256, 3, stream(1)), Err(Error::BadAlignment { .. })));
    assert!(r.allocate(usize::MAX - 10, 256, stream(1)).unwrap_err().is_out_of_memory());
    assert!(r.allocate(SIZE + 256, 256, stream(1)).unwrap_err().is_out_of_memory());
    let small = r.allocate(1000, 256, stream(1)).unwrap();
    let large = r.allocate(2 << 20, 256, stream(1)).unwrap();
    let before = r.state();
    let misuse = |e: Error| match e {
        Error::Misuse(m) => m,
        other => panic!("not a misuse: {other}"),
    };
    assert!(matches!(misuse(r.deallocate(small, 999, 256, stream(1)).unwrap_err()), Misuse::WrongSize { .. }));
    assert!(matches!(misuse(r.deallocate(large, 1 << 20, 256, stream(1)).unwrap_err()), Misuse::WrongSize { .. }));
    // SAFETY: only the address is used; the arena must refuse it.
    let inside = unsafe { small.add(256) };
    assert!(r.deallocate(inside, 256, 256, stream(1)).is_err());
    assert!(r.deallocate(inside, 256, 256, stream(2)).is_err(), "through another stream's arena too");
    let outside = 0x10usize as *mut u8;
    assert!(matches!(misuse(r.deallocate(outside, 256, 256, stream(1)).unwrap_err()), Misuse::UnknownPointer { .. }));
    assert_eq!(r.state(), before, "refused calls change nothing");
    r.check_invariants().unwrap();
    r.deallocate(small, 1000, 256, stream(1)).unwrap();
    r.deallocate(large, 2 << 20, 256, stream(2)).unwrap();
    assert!(r.deallocate(small, 1000, 256, stream(1)).is_err(), "double free");
    assert!(r.deallocate(large, 2 << 20, 256, stream(1)).is_err(), "double free of a large block");
    r.check_invariants().unwrap();
    assert_eq!(r.state().free_bytes, SIZE);
}

/// Nanoseconds per allocate-or-free, all threads together, each thread on its own stream or on
/// the default stream.
fn ns_per_op(r: &dyn MemoryResource, threads: usize, own_streams: bool) -> f64 {
    common::threads_bench::ns_per_op(r, threads, 400_000, |t| {
        if own_streams {
            stream(t + 1)
        } else {
            CudaStreamView::DEFAULT
        }
    })
}

#[test]
#[ignore = "a benchmark: cargo test --release --test arena -- --ignored --nocapture"]
fn microbenchmark_threads_on_their_own_streams() {
    let arena = arena(1 << 30);
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 1 << 30, None).unwrap();
    for threads in [1, 2, 4, 8, 16] {
        for own in [true, false] {
            let a = ns_per_op(&arena, threads, own);
            let p = ns_per_op(&pool, threads, own);
            let streams = if own { "own streams" } else { "default stream" };
            println!("{threads:2} threads, {streams:14}: arena {a:6.1} ns/op, pool {p:6.1} ns/op (aggregate)");
        }
    }
    arena.check_invariants().unwrap();
}

/// RMM's own scenario: a block of the per-thread default stream's arena stays live while its
/// superblock goes back to the global arena in a defragmentation and on to another stream's
/// arena, which serves from the superblock's free part; the block is then freed through the
/// arena, and all memory comes back.
#[test]
fn a_live_block_follows_its_superblock_to_another_streams_arena() {
    const MIB: usize = 1 << 20;
    let r = arena(2 * MIB);
    // The calling thread's per-thread default stream takes the first superblock.
    let thread_block = r.allocate(256, 256, CudaStreamView::PER_THREAD).unwrap();
    // Another stream takes the second and keeps it, empty.
    let p = r.allocate(32 << 10, 256, stream(1)).unwrap();
    r.deallocate(p, 32 << 10, 256, stream(1)).unwrap();
    // The global arena has nothing left: a defragmentation gives both superblocks back, and the
    // legacy default stream's arena takes a whole one...
    let whole = r.allocate(MIB, 256, CudaStreamView::DEFAULT).unwrap();
    // ... and then the one that still holds the live block, for the free part of it.
    let part = r.allocate(32 << 10, 256, CudaStreamView::DEFAULT).unwrap();
    r.check_invariants().unwrap();
    let (base, _) = r.arena_range();
    assert_eq!(part as usize & !(MIB - 1), thread_block as usize & !(MIB - 1), "one superblock");
    assert!(base <= part as usize);
    assert_eq!(r.state().free_bytes, MIB - 256 - (32 << 10));
    // The block freed on the stream it was allocated on goes back to the arena that holds it now.
    r.deallocate(thread_block, 256, 256, CudaStreamView::PER_THREAD).unwrap();
    r.check_invariants().unwrap();
    assert_eq!(r.state().free_bytes, MIB - (32 << 10));
    assert!(matches!(
        r.deallocate(thread_block, 256, 256, CudaStreamView::PER_THREAD),
        Err(Error::Misuse(Misuse::DoubleFree { .. }))
    ));
    r.deallocate(whole, MIB, 256, CudaStreamView::DEFAULT).unwrap();
    r.deallocate(part, 32 << 10, 256, CudaStreamView::DEFAULT).unwrap();
    r.check_invariants().unwrap();
    assert_eq!(r.state().free_bytes, 2 * MIB);
    // Every byte merges again: the whole arena serves one request.
    let all = r.allocate(2 * MIB, 256, stream(2)).unwrap();
    r.deallocate(all, 2 * MIB, 256, stream(2)).unwrap();
}

/// A defragmentation parks a superblock with its live block in the global arena; the block, freed
/// there from another thread's per-thread default stream, merges the superblock back.
#[test]
fn a_block_of_a_parked_superblock_is_freed_through_the_global_arena() {
    const MIB: usize = 1 << 20;
    let r = Arc::new(arena(2 * MIB));
    let block = r.allocate(4096, 256, CudaStreamView::PER_THREAD).unwrap();
    let err = r.allocate(2 * MIB, 256, CudaStreamView::DEFAULT).unwrap_err();
    assert!(err.is_out_of_memory(), "{err}");
    r.check_invariants().unwrap();
    assert_eq!(r.state().free_bytes, 2 * MIB - 4096);
    assert!(r.memory_log().contains("Parked superblock 0"), "{}", r.memory_log());
    let addr = block as usize;
    let r2 = r.clone();
    std::thread::spawn(move || {
        let ptds = CudaStreamView::PER_THREAD;
        assert!(matches!(
            r2.deallocate((addr + 256) as *mut u8, 4096, 256, ptds),
            Err(Error::Misuse(Misuse::InteriorPointer { .. }))
        ));
        assert!(matches!(
            r2.deallocate(addr as *mut u8, 4000, 256, ptds),
            Err(Error::Misuse(Misuse::WrongSize { .. }))
        ));
        r2.deallocate(addr as *mut u8, 4096, 256, ptds).unwrap();
        assert!(matches!(r2.deallocate(addr as *mut u8, 4096, 256, ptds), Err(Error::Misuse(_))));
    })
    .join()
    .unwrap();
    r.check_invariants().unwrap();
    assert_eq!(r.state().free_bytes, 2 * MIB);
    let all = r.allocate(2 * MIB, 256, CudaStreamView::DEFAULT).unwrap();
    r.deallocate(all, 2 * MIB, 256, CudaStreamView::DEFAULT).unwrap();
}

/// Random requests on four streams (one the per-thread default stream) in an arena small enough
/// that defragmentations move superblocks with live blocks often; frees go through any stream.
/// The free bytes match the model after every operation.
#[test]
fn defragmentations_with_live_blocks_keep_the_accounting_exact() {
    const SIZE: usize = 8 << 20;
    let r = arena(SIZE);
    let streams = [stream(0), stream(1), stream(2), CudaStreamView::PER_THREAD];
    let mut rng = Rng::new(common::seed("arena_defragment_model", 0xdef4a));
    let mut model = Model::default();
    let mut live: Vec<(usize, usize)> = Vec::new();
    let (mut used, mut ooms, mut parked_seen) = (0usize, 0, 0);
    for op in 0..20_000 {
        if live.is_empty() || rng.below(100) < 55 {
            let bytes = if rng.below(20) == 0 { 1 + rng.below(3 << 20) } else { 1 + rng.below(192 << 10) };
            match r.allocate(bytes, 256, streams[rng.below(4)]) {
                Ok(p) => {
                    model.insert(p, bytes, 256);
                    live.push((p as usize, bytes));
                    used += rounded(bytes);
                }
                Err(e) => {
                    assert!(e.is_out_of_memory(), "{e}");
                    ooms += 1;
                    parked_seen += r.memory_log().contains("Parked superblock") as usize;
                }
            }
        } else {
            let (a, bytes) = live.swap_remove(rng.below(live.len()));
            r.deallocate(a as *mut u8, bytes, 256, streams[rng.below(4)]).unwrap();
            model.remove(a as *mut u8);
            used -= rounded(bytes);
        }
        assert_eq!(r.state().free_bytes, SIZE - used, "free bytes after operation {op}");
        if op % 1000 == 0 {
            r.check_invariants().unwrap();
        }
    }
    assert!(ooms > 100 && parked_seen > 10, "the arena ran full {ooms} times, {parked_seen} with parked superblocks");
    for (a, bytes) in live.drain(..) {
        r.deallocate(a as *mut u8, bytes, 256, stream(3)).unwrap();
    }
    r.check_invariants().unwrap();
    assert_eq!(r.state().free_bytes, SIZE);
    let all = r.allocate(SIZE, 256, stream(1)).unwrap();
    r.deallocate(all, SIZE, 256, stream(1)).unwrap();
}

/// Threads on their own streams and on their per-thread default streams run a small arena out of
/// room again and again, so defragmentations move superblocks with live blocks while other
/// threads allocate, free their own blocks and free blocks other threads handed them: no block
/// is handed out twice, no free of a live block fails, and every byte comes back.
#[test]
fn threads_free_blocks_whose_superblocks_defragmentations_move() {
    const SIZE: usize = 8 << 20;
    let r = Arc::new(arena(SIZE));
    let handed: Arc<Mutex<Vec<(usize, usize, u8)>>> = Arc::default();
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let (r, handed) = (r.clone(), handed.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::new(common::seed("arena_moving_superblocks", 0xa11 + t as u64));
                let s = if t % 2 == 0 { CudaStreamView::PER_THREAD } else { stream(t as usize) };
                let mut mine: Vec<(usize, usize)> = Vec::new();
                let mut ooms = 0;
                for _ in 0..20_000 {
                    if mine.is_empty() || rng.below(100) < 55 {
                        let max = if rng.below(30) == 0 { 2 << 20 } else { 128 << 10 };
                        let bytes = 1 + rng.below(max);
                        match r.allocate(bytes, 256, s) {
                            Ok(p) => {
                                // SAFETY: host memory of `bytes` bytes, just handed out to this thread.
                                unsafe { p.write_bytes(t, bytes.min(256)) };
                                mine.push((p as usize, bytes));
                            }
                            Err(e) => {
                                assert!(e.is_out_of_memory(), "{e}");
                                ooms += 1;
                            }
                        }
                    } else {
                        let (p, bytes) = mine.swap_remove(rng.below(mine.len()));
                        // SAFETY: the block is live and only this thread wrote it.
                        let first = unsafe { *(p as *const u8) };
                        assert_eq!(first, t, "another thread was handed {p:#x}");
                        if rng.below(4) == 0 {
                            handed.lock().unwrap().push((p, bytes, t));
                        } else {
                            r.deallocate(p as *mut u8, bytes, 256, s).unwrap();
                        }
                    }
                    if rng.below(50) == 0 {
                        let taken: Vec<_> = std::mem::take(&mut *handed.lock().unwrap());
                        for (p, bytes, owner) in taken {
                            // SAFETY: handed over live; its owner wrote it and no longer touches it.
                            assert_eq!(unsafe { *(p as *const u8) }, owner, "{p:#x} was handed out again");
                            r.deallocate(p as *mut u8, bytes, 256, s).unwrap();
                        }
                    }
                }
                for (p, bytes) in mine {
                    r.deallocate(p as *mut u8, bytes, 256, s).unwrap();
                }
                ooms
            })
        })
        .collect();
    let ooms: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    for (p, bytes, _) in std::mem::take(&mut *handed.lock().unwrap()) {
        r.deallocate(p as *mut u8, bytes, 256, stream(9)).unwrap();
    }
    assert!(ooms > 100, "the arena ran out of room {ooms} times");
    r.check_invariants().unwrap();
    assert_eq!(r.state().free_bytes, SIZE, "every byte is free again");
    let all = r.allocate(SIZE, 256, stream(9)).unwrap();
    r.deallocate(all, SIZE, 256, stream(9)).unwrap();
}

/// Counts synchronisations of everything; `trusted` streams (else each named by a driver id that
/// never changes) as a device order would see streams of this library or foreign ones. Not
/// "needed": the streams are made-up handles no driver call may see (a stream synchronised before
/// a free is then skipped).
struct CountingOrder {
    syncs: Arc<std::sync::atomic::AtomicUsize>,
    trusted: bool,
}

impl rmm::pool::StreamOrder for CountingOrder {
    fn record(&self, _: rmm::pool::StreamKey, _: rmm::pool::StreamIdentity) -> rmm::Result<()> {
        Ok(())
    }
    fn wait(&self, _: rmm::pool::StreamKey, _: rmm::pool::StreamIdentity, _: rmm::pool::StreamKey) -> rmm::Result<()> {
        Ok(())
    }
    fn synchronize_all(&self) -> rmm::Result<()> {
        self.syncs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
    fn identity(&self, key: rmm::pool::StreamKey, _: rmm::pool::StreamIdentity) -> rmm::pool::StreamIdentity {
        match key.handle() {
            Some(h) if !self.trusted => rmm::pool::StreamIdentity::Driver(h as u64),
            _ => rmm::pool::StreamIdentity::Trusted,
        }
    }
    fn is_needed(&self) -> bool {
        false
    }
}

fn counted_arena(bytes: usize, trusted: bool) -> (Arena, Arc<std::sync::atomic::AtomicUsize>) {
    let syncs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let order = Box::new(CountingOrder { syncs: syncs.clone(), trusted });
    // SAFETY: host memory that no device work touches; the order only counts.
    let r = unsafe { ArenaMemoryResource::with_stream_order(HostMemoryResource::new(), Some(bytes), false, order) };
    // Counted from here: construction synchronises once.
    syncs.store(0, std::sync::atomic::Ordering::SeqCst);
    (r.unwrap(), syncs)
}

#[test]
fn a_large_block_serves_its_own_stream_at_once_and_another_only_after_a_synchronisation() {
    use std::sync::atomic::Ordering::SeqCst;
    const SIZE: usize = 8 << 20;
    let (r, syncs) = counted_arena(SIZE, true);
    let x = r.allocate(6 << 20, 256, stream(1)).unwrap();
    r.deallocate(x, 6 << 20, 256, stream(1)).unwrap();
    // The freeing stream takes it back without waiting for anything.
    assert_eq!(r.allocate(5 << 20, 256, stream(1)).unwrap(), x);
    r.deallocate(x, 5 << 20, 256, stream(1)).unwrap();
    assert_eq!(syncs.load(SeqCst), 0);
    // Another stream gets it only after a synchronisation of everything.
    let y = r.allocate(6 << 20, 256, stream(2)).unwrap();
    assert_eq!((y, syncs.load(SeqCst)), (x, 1));
    r.check_invariants().unwrap();
    // Small blocks of stream 2 and a large one of stream 1 meet again once all are free.
    r.deallocate(y, 6 << 20, 256, stream(2)).unwrap();
    let small = r.allocate(4096, 256, stream(2)).unwrap();
    r.deallocate(small, 4096, 256, stream(1)).unwrap();
    r.check_invariants().unwrap();
    let whole = r.allocate(SIZE - (1 << 20), 256, stream(3)).unwrap();
    r.deallocate(whole, SIZE - (1 << 20), 256, stream(3)).unwrap();
    assert_eq!(r.state().free_bytes, SIZE);
}

#[test]
fn a_large_block_of_a_stream_the_arena_cannot_trust_goes_to_every_stream_after_its_free() {
    use std::sync::atomic::Ordering::SeqCst;
    let (r, syncs) = counted_arena(8 << 20, false);
    let x = r.allocate(6 << 20, 256, stream(1)).unwrap();
    // Freed after a synchronisation of its stream (as in RMM): any stream takes it at once.
    r.deallocate(x, 6 << 20, 256, stream(1)).unwrap();
    assert_eq!(r.allocate(6 << 20, 256, stream(2)).unwrap(), x);
    assert_eq!(syncs.load(SeqCst), 0);
    assert!(matches!(r.deallocate(x, 6 << 20, 256, stream(1)), Ok(())));
    assert!(matches!(r.deallocate(x, 6 << 20, 256, stream(2)), Err(Error::Misuse(Misuse::DoubleFree { .. }))));
    r.check_invariants().unwrap();
}
