//! Free memory of one stream split between shards (the stream's threads each on a shard of its
//! own): gathered before the pool maps more, so a run of pieces serves a request that none of
//! them holds, and a free tail in another shard joins the growth; free granules in pieces between
//! blocks handed out are unmapped before a large growth, where threads have shards of their own.

use super::*;
use rmm_algorithms::{HostMappings, HostPhysicalMemory};
use std::sync::mpsc;

const MIB: usize = 1 << 20;
const G: usize = 2 * MIB;
const BASE: usize = 1 << 40;
// SAFETY: a stream name for resources over host memory: no driver call sees it.
const S: CudaStreamView = unsafe { CudaStreamView::from_handle(0x1000) };

type Pool = VirtualPoolMemoryResource<HostPhysicalMemory>;

fn pool(ordered: bool) -> (Pool, HostMappings) {
    let phys = HostPhysicalMemory::new(BASE, 4 << 30, G);
    let view = phys.mappings();
    let order: Box<dyn StreamOrder> =
        if ordered { Box::new(rmm_algorithms::SimulatedDeviceOrder) } else { Box::new(rmm_algorithms::HostOrder) };
    // SAFETY: no test reads or writes the blocks of the stand-in.
    (unsafe { Pool::with_physical(phys, 0, order, 8) }.unwrap(), view)
}

/// Work sent to the other thread.
type Job<'a> = Box<dyn FnOnce(&Pool) + Send + 'a>;

/// A second thread of stream `S`, on a shard of its own, that runs what it is sent.
struct OtherThread<'a> {
    send: mpsc::Sender<Job<'a>>,
}

impl<'a> OtherThread<'a> {
    fn run<T: Send + 'static>(&self, f: impl FnOnce(&Pool) -> T + Send + 'a) -> T {
        let (tx, rx) = mpsc::channel();
        self.send.send(Box::new(move |p| tx.send(f(p)).unwrap())).unwrap();
        rx.recv().unwrap()
    }
}

/// Runs `body` with the pool and a second thread of its stream on another shard.
fn with_two_threads(ordered: bool, body: impl FnOnce(&Pool, &HostMappings, &OtherThread<'_>)) {
    let (p, view) = pool(ordered);
    std::thread::scope(|scope| {
        let (send, recv) = mpsc::channel::<Job<'_>>();
        let pool = &p;
        scope.spawn(move || {
            pool.pool.spread_calling_thread(S);
            for job in recv {
                job(pool);
            }
        });
        let other = OtherThread { send };
        other.run(|_| ());
        body(&p, &view, &other);
    });
    p.check_invariants().unwrap();
}

fn alloc(p: &Pool, bytes: usize) -> usize {
    p.allocate(bytes, 256, S).unwrap() as usize
}

fn free(p: &Pool, addr: usize, bytes: usize) {
    p.deallocate(addr as *mut u8, bytes, 256, S).unwrap();
}

/// This thread frees 4 MiB at the base; the other thread's 2 MiB after it are free in its shard.
fn split_six_mib(p: &Pool, other: &OtherThread<'_>) {
    let a = alloc(p, 4 * MIB);
    assert_eq!(a, BASE);
    let b = other.run(|p| alloc(p, MIB));
    assert_eq!(b, BASE + 4 * MIB, "the other shard grew after this one");
    free(p, a, 4 * MIB);
    other.run(move |p| free(p, b, MIB));
    assert_eq!(p.mapped_bytes(), 6 * MIB);
}

#[test]
fn pieces_in_two_shards_serve_a_request_that_neither_holds() {
    for ordered in [true, false] {
        with_two_threads(ordered, |p, view, other| {
            split_six_mib(p, other);
            let c = alloc(p, 6 * MIB);
            assert_eq!(c, BASE, "the two pieces are one block again");
            assert_eq!(p.mapped_bytes(), 6 * MIB, "nothing more mapped");
            assert_eq!(view.mapped_bytes(), 6 * MIB);
            free(p, c, 6 * MIB);
            // The other thread gets it back whole from this thread's shard.
            assert_eq!(other.run(|p| alloc(p, 6 * MIB)), BASE);
        });
    }
}

#[test]
fn a_free_tail_in_another_shard_joins_the_growth() {
    for ordered in [true, false] {
        with_two_threads(ordered, |p, view, other| {
            split_six_mib(p, other);
            let c = alloc(p, 7 * MIB);
            assert_eq!(c, BASE, "the block spans both pieces and the new granule");
            assert_eq!(p.mapped_bytes(), 8 * MIB, "one granule mapped for the 1 MiB lacking");
            assert_eq!(view.mapped_bytes(), 8 * MIB);
            free(p, c, 7 * MIB);
        });
    }
}

#[test]
fn free_granules_between_blocks_are_unmapped_before_a_large_growth() {
    with_two_threads(true, |p, view, other| {
        let a = alloc(p, 64 * MIB);
        let b = other.run(|p| alloc(p, 64 * MIB));
        let c = alloc(p, 64 * MIB);
        assert_eq!((a, b, c), (BASE, BASE + 64 * MIB, BASE + 128 * MIB));
        free(p, a, 64 * MIB);
        free(p, c, 64 * MIB);
        // 128 MiB free, not in one run: the growth of 32 MiB joins the free tail, and as much of
        // the free memory below the other thread's block is given back first.
        let d = alloc(p, 96 * MIB);
        assert_eq!(d, BASE + 128 * MIB, "the free tail joins the growth");
        assert_eq!(p.mapped_bytes(), 192 * MIB, "as much unmapped below as mapped at the end");
        assert!(!view.is_mapped(BASE, 32 * MIB), "the lowest granules went");
        assert!(view.is_mapped(BASE + 32 * MIB, 192 * MIB));
        // The addresses given back are mapped again when a request fits there.
        assert_eq!(alloc(p, 64 * MIB), BASE);
        assert_eq!(p.mapped_bytes(), 224 * MIB);
        free(p, BASE, 64 * MIB);
        free(p, d, 96 * MIB);
        other.run(move |p| free(p, b, 64 * MIB));
    });
}

#[test]
fn one_shard_unmaps_nothing_before_a_large_growth() {
    // The blocks of the test above, from one thread: shard 0 placed them all.
    let (p, view) = pool(true);
    let (a, b, c) = (alloc(&p, 64 * MIB), alloc(&p, 64 * MIB), alloc(&p, 64 * MIB));
    free(&p, a, 64 * MIB);
    free(&p, c, 64 * MIB);
    let d = alloc(&p, 96 * MIB);
    assert_eq!(d, BASE + 128 * MIB, "the free tail joins the growth");
    assert_eq!(p.mapped_bytes(), 224 * MIB, "nothing unmapped below");
    assert!(view.is_mapped(BASE, 224 * MIB));
    for (addr, bytes) in [(b, 64 * MIB), (d, 96 * MIB)] {
        free(&p, addr, bytes);
    }
    p.check_invariants().unwrap();
}

#[test]
fn small_pieces_unmap_nothing() {
    with_two_threads(true, |p, view, _other| {
        // 1 GiB mapped; 2 MiB free below a block handed out is under a sixteenth of it.
        let big = alloc(p, 1020 * MIB);
        let a = alloc(p, 2 * MIB);
        let keep = alloc(p, 2 * MIB);
        free(p, a, 2 * MIB);
        let d = alloc(p, 40 * MIB);
        assert_eq!(d, BASE + 1024 * MIB);
        assert_eq!(p.mapped_bytes(), 1064 * MIB, "nothing unmapped for so little");
        assert!(view.is_mapped(BASE + 1020 * MIB, 2 * MIB));
        for (addr, bytes) in [(big, 1020 * MIB), (keep, 2 * MIB), (d, 40 * MIB)] {
            free(p, addr, bytes);
        }
    });
}

#[test]
fn a_small_growth_unmaps_nothing() {
    with_two_threads(true, |p, _view, _other| {
        // 512 MiB in blocks of 2 MiB, every other one freed: 256 MiB free in pieces.
        let blocks: Vec<usize> = (0..256).map(|_| alloc(p, 2 * MIB)).collect();
        for &b in blocks.iter().step_by(2) {
            free(p, b, 2 * MIB);
        }
        // A growth of 4 MiB is under a sixteenth of the pool (and under 16 granules): no
        // synchronisation for it.
        let d = alloc(p, 3 * MIB);
        assert_eq!(d, BASE + 512 * MIB);
        assert_eq!(p.mapped_bytes(), 516 * MIB);
        free(p, d, 3 * MIB);
        for &b in blocks.iter().skip(1).step_by(2) {
            free(p, b, 2 * MIB);
        }
    });
}

#[test]
fn another_streams_pieces_are_not_gathered() {
    with_two_threads(true, |p, _view, other| {
        split_six_mib(p, other);
        // Stream T may not use S's blocks without a wait: it maps memory of its own.
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        let t = unsafe { CudaStreamView::from_handle(0x2000) };
        let c = p.allocate(6 * MIB, 256, t).unwrap() as usize;
        assert!(c >= BASE + 6 * MIB, "S's free pieces stay with S");
        p.deallocate(c as *mut u8, 6 * MIB, 256, t).unwrap();
    });
}
