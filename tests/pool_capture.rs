//! Allocation on a stream being captured into a CUDA graph, on the host: the capture's memory is
//! private to it, nothing illegal during a capture is asked of the stream order, upstream calls
//! are made in relaxed capture mode, and the release hands the memory back.

mod common;

use common::capture_order::{Asked, CaptureOrder};
use rmm::pool::{HostPhysicalMemory, StreamKey};
use rmm::resource::{HostMemoryResource, PoolMemoryResource, VirtualPoolMemoryResource};
use rmm::{CudaStreamView, Error, MemoryResource, Misuse, Result};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const MIB: usize = 1 << 20;
const A: usize = 0x1000;
const B: usize = 0x2000;

fn s(handle: usize) -> CudaStreamView<'static> {
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    unsafe { CudaStreamView::from_handle(handle) }
}

/// Host memory that notes upstream calls that would break a capture, and refuses on demand.
struct WatchedHost {
    inner: HostMemoryResource,
    order: CaptureOrder,
    breaking_calls: AtomicUsize,
    calls: AtomicUsize,
    refuse: std::sync::atomic::AtomicBool,
}

// SAFETY: blocks come from a `HostMemoryResource` unchanged and go back to it.
unsafe impl MemoryResource for WatchedHost {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.order.upstream_call_breaks_capture() {
            self.breaking_calls.fetch_add(1, Ordering::SeqCst);
        }
        if self.refuse.load(Ordering::SeqCst) {
            return Err(Error::out_of_memory(bytes, "refused"));
        }
        self.inner.allocate(bytes, alignment, stream)
    }
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        self.inner.deallocate(ptr, bytes, alignment, stream)
    }
    fn is_device_accessible(&self) -> bool {
        false
    }
    fn is_host_accessible(&self) -> bool {
        true
    }
}

type Pool = PoolMemoryResource<Arc<WatchedHost>>;

fn pool(initial: usize, max: Option<usize>) -> (Pool, CaptureOrder, Arc<WatchedHost>) {
    let order = CaptureOrder::default();
    let up = Arc::new(WatchedHost {
        inner: HostMemoryResource::new(),
        order: order.clone(),
        breaking_calls: AtomicUsize::new(0),
        calls: AtomicUsize::new(0),
        refuse: Default::default(),
    });
    // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
    let p =
        unsafe { PoolMemoryResource::with_stream_order(up.clone(), initial, max, Box::new(order.clone())) }.unwrap();
    (p, order, up)
}

fn alloc(p: &impl MemoryResource, bytes: usize, stream: usize) -> usize {
    p.allocate(bytes, 256, s(stream)).unwrap() as usize
}

fn free(p: &impl MemoryResource, ptr: usize, bytes: usize, stream: usize) {
    p.deallocate(ptr as *mut u8, bytes, 256, s(stream)).unwrap()
}

/// Starts capture `id` on `stream`, as the program would: the driver's side, then the pool's.
fn begin(p: &Pool, order: &CaptureOrder, stream: usize, id: u64) {
    order.set_capturing(stream, Some(id));
    assert_eq!(p.begin_capture(s(stream)).unwrap(), id);
}

fn end(p: &Pool, order: &CaptureOrder, stream: usize) {
    order.set_capturing(stream, None);
    p.end_capture(s(stream));
}

fn no_ordering_of(log: &[Asked], stream: usize) -> bool {
    let stream = StreamKey::of_handle(stream);
    !log.iter().any(|a| {
        matches!(*a, Asked::Record(x) if x == stream)
            || matches!(*a, Asked::Wait(o, w) if o == stream || w == stream)
            || *a == Asked::SyncAll
    })
}

#[test]
fn a_capture_allocates_and_reuses_only_its_own_memory() {
    let (p, order, up) = pool(8 * MIB, None);
    // Eager work on A leaves a free block in A's own set.
    let eager = alloc(&p, MIB, A);
    free(&p, eager, MIB, A);
    let before = order.log().len();
    begin(&p, &order, A, 7);
    let mut seen = Vec::new();
    for round in 0..50 {
        let x = alloc(&p, MIB, A);
        let y = alloc(&p, 3000, A);
        assert_ne!(x, eager, "a capture never gets the eager free block");
        // Eager allocations on another stream in between never get capture blocks.
        let e = alloc(&p, MIB, B);
        assert!(e != x && e != y);
        if round > 0 {
            assert!(seen.contains(&x) && seen.contains(&y), "the capture reuses its own freed blocks");
        }
        seen.extend([x, y]);
        free(&p, y, 3000, A);
        free(&p, x, MIB, A);
        free(&p, e, MIB, B);
        p.check_invariants().unwrap();
    }
    let during = order.log()[before..].to_vec();
    assert!(no_ordering_of(&during, A), "nothing ordered on the capturing stream: {during:?}");
    assert!(order.illegal().is_empty(), "{:?}", order.illegal());
    assert_eq!(p.captures(), vec![7]);
    assert!(p.capture_pool_size(7) >= MIB);
    // Its growth was made in relaxed mode, and the mode restored.
    assert!(during.contains(&Asked::Relax) && during.contains(&Asked::Restore(0)));
    assert_eq!(up.breaking_calls.load(Ordering::SeqCst), 0);
    assert_eq!(CaptureOrder::thread_mode(), 0);
    end(&p, &order, A);
    // After the capture, A is eager again and gets its old block back, not the capture's.
    let again = alloc(&p, MIB, A);
    assert_eq!(again, eager);
    assert!(!seen.contains(&again));
    free(&p, again, MIB, A);
    p.check_invariants().unwrap();
}

#[test]
fn the_release_gives_a_capture_s_memory_back_after_a_synchronisation() {
    let (p, order, _up) = pool(0, None);
    begin(&p, &order, A, 3);
    let x = alloc(&p, 2 * MIB, A);
    free(&p, x, 2 * MIB, A);
    end(&p, &order, A);
    let size = p.pool_size();
    assert_eq!(p.capture_pool_size(3), 2 * MIB);
    // A new capture does not get capture 3's memory.
    begin(&p, &order, A, 4);
    let y = alloc(&p, 2 * MIB, A);
    assert_ne!(y, x);
    free(&p, y, 2 * MIB, A);
    end(&p, &order, A);
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    unsafe { p.release_capture(3) }.unwrap();
    assert_eq!(p.captures(), vec![4]);
    assert_eq!(p.capture_pool_size(3), 0);
    assert_eq!(p.pool_size(), size + 2 * MIB, "the release keeps the memory in the pool");
    p.check_invariants().unwrap();
    // Another stream takes it once everything is synchronised, rather than growing.
    let grown = p.pool_size();
    let log = order.log().len();
    let z = alloc(&p, 2 * MIB, B);
    assert_eq!(z, x);
    assert_eq!(p.pool_size(), grown);
    assert!(order.log()[log..].contains(&Asked::SyncAll));
    free(&p, z, 2 * MIB, B);
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    unsafe { p.release_capture(4) }.unwrap();
    assert!(p.captures().is_empty());
    p.check_invariants().unwrap();
    assert!(order.illegal().is_empty(), "{:?}", order.illegal());
}

#[test]
fn blocks_crossing_the_capture_boundary_stay_with_the_capture_until_the_release() {
    let (p, order, _up) = pool(16 * MIB, None);
    // Allocated before the capture, freed during it: the graph may use it at every replay.
    let before = alloc(&p, MIB, A);
    begin(&p, &order, A, 9);
    free(&p, before, MIB, A);
    assert!(matches!(p.deallocate(before as *mut u8, MIB, 256, s(A)), Err(Error::Misuse(Misuse::DoubleFree { .. }))));
    let during = alloc(&p, MIB, A);
    assert_ne!(during, before);
    end(&p, &order, A);
    // Allocated during the capture, freed after it on another stream: back to the capture.
    free(&p, during, MIB, B);
    for _ in 0..20 {
        let e = alloc(&p, MIB, B);
        let f = alloc(&p, MIB, A);
        assert!(![before, during].contains(&e) && ![before, during].contains(&f));
        free(&p, e, MIB, B);
        free(&p, f, MIB, A);
    }
    // Another capture does not get them either.
    begin(&p, &order, B, 10);
    let other = alloc(&p, MIB, B);
    assert!(![before, during].contains(&other));
    free(&p, other, MIB, B);
    end(&p, &order, B);
    p.check_invariants().unwrap();
    // The release hands both back, to every stream after a synchronisation.
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    unsafe { p.release_capture(9) }.unwrap();
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    unsafe { p.release_capture(10) }.unwrap();
    p.check_invariants().unwrap();
    let all: Vec<usize> = (0..16).map(|_| alloc(&p, MIB, B)).collect();
    assert!(all.contains(&before), "the block freed during the capture is usable again");
    for a in all {
        free(&p, a, MIB, B);
    }
    p.check_invariants().unwrap();
    assert!(order.illegal().is_empty(), "{:?}", order.illegal());
}

#[test]
fn eager_streams_synchronise_nothing_while_a_capture_is_in_progress() {
    let (p, order, _up) = pool(0, None);
    begin(&p, &order, A, 1);
    let x = alloc(&p, 2 * MIB, A);
    free(&p, x, 2 * MIB, A);
    end(&p, &order, A);
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    unsafe { p.release_capture(1) }.unwrap();
    // The released memory waits for a synchronisation, which a capture on A forbids: B grows.
    begin(&p, &order, A, 2);
    let size = p.pool_size();
    let y = alloc(&p, 2 * MIB, B);
    assert_ne!(y, x);
    assert!(p.pool_size() > size);
    assert!(order.illegal().is_empty(), "{:?}", order.illegal());
    free(&p, y, 2 * MIB, B);
    end(&p, &order, A);
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    unsafe { p.release_capture(2) }.unwrap();
    p.check_invariants().unwrap();
}

#[test]
fn errors_leave_the_pool_and_the_capture_mode_consistent() {
    let (p, order, up) = pool(0, Some(8 * MIB));
    // Not capturing.
    assert!(matches!(p.begin_capture(s(A)), Err(Error::InvalidArgument(_))));
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    assert!(matches!(unsafe { p.release_capture(42) }, Err(Error::InvalidArgument(_))));
    begin(&p, &order, A, 1);
    let x = alloc(&p, MIB, A);
    // Still marked, then still live: refused with nothing changed.
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    assert!(matches!(unsafe { p.release_capture(1) }, Err(Error::InvalidArgument(_))));
    order.set_capturing(A, None);
    p.end_capture(s(A));
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    assert!(matches!(unsafe { p.release_capture(1) }, Err(Error::InvalidArgument(_))));
    assert_eq!(p.captures(), vec![1]);
    free(&p, x, MIB, A);
    // The capture mode cannot be relaxed: the growth fails, nothing is taken.
    begin(&p, &order, A, 2);
    order.0.lock().unwrap().refuse_relax = true;
    let size = p.pool_size();
    let calls = up.calls.load(Ordering::SeqCst);
    assert!(p.allocate(4 * MIB, 256, s(A)).is_err());
    assert_eq!((p.pool_size(), up.calls.load(Ordering::SeqCst)), (size, calls));
    order.0.lock().unwrap().refuse_relax = false;
    // The upstream refuses: the mode is restored, the pool size too.
    up.refuse.store(true, Ordering::SeqCst);
    assert!(p.allocate(4 * MIB, 256, s(A)).unwrap_err().is_out_of_memory());
    assert_eq!(CaptureOrder::thread_mode(), 0);
    assert_eq!(order.log().last(), Some(&Asked::Restore(0)));
    assert_eq!(p.pool_size(), size);
    up.refuse.store(false, Ordering::SeqCst);
    // Past the maximum: out of memory, nothing taken.
    assert!(p.allocate(16 * MIB, 256, s(A)).unwrap_err().is_out_of_memory());
    assert_eq!(p.pool_size(), size);
    // An eager stream still grows where the mode cannot be relaxed (no capture is at stake).
    order.0.lock().unwrap().refuse_relax = true;
    let e = alloc(&p, 4 * MIB, B);
    assert!(p.pool_size() > size);
    free(&p, e, 4 * MIB, B);
    order.0.lock().unwrap().refuse_relax = false;
    // A pointer the pool never handed out.
    assert!(matches!(p.deallocate(0x10 as *mut u8, 256, 256, s(A)), Err(Error::Misuse(Misuse::UnknownPointer { .. }))));
    let y = alloc(&p, 2 * MIB, A);
    free(&p, y, 2 * MIB, A);
    end(&p, &order, A);
    p.check_invariants().unwrap();
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    unsafe { p.release_capture(1) }.unwrap();
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    unsafe { p.release_capture(2) }.unwrap();
    p.check_invariants().unwrap();
    assert!(order.illegal().is_empty(), "{:?}", order.illegal());
}

#[test]
fn a_capture_not_announced_is_found_on_the_cold_path_and_an_ended_one_is_dropped() {
    let (p, order, up) = pool(0, None);
    // A stream new to the pool misses the fast path: the pool asks, and serves the capture.
    order.set_capturing(A, Some(5));
    let x = alloc(&p, MIB, A);
    assert_eq!(p.captures(), vec![5]);
    assert!(p.capture_pool_size(5) >= MIB);
    free(&p, x, MIB, A);
    assert!(order.illegal().is_empty(), "{:?}", order.illegal());
    assert_eq!(up.breaking_calls.load(Ordering::SeqCst), 0);
    // The capture ended without the pool being told: the next call finds out and goes eager.
    order.set_capturing(A, None);
    let y = alloc(&p, MIB, A);
    assert_ne!(y, x);
    free(&p, y, MIB, A);
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    unsafe { p.release_capture(5) }.unwrap();
    p.check_invariants().unwrap();
}

#[test]
fn eager_fast_paths_never_ask_about_captures() {
    let (p, order, _up) = pool(8 * MIB, None);
    let warm = alloc(&p, 4096, A);
    free(&p, warm, 4096, A);
    let asked = order.0.lock().unwrap().capture_queries;
    for _ in 0..1000 {
        let x = alloc(&p, 4096, A);
        free(&p, x, 4096, A);
    }
    assert_eq!(order.0.lock().unwrap().capture_queries, asked);
}

#[test]
fn the_virtual_pool_keeps_capture_memory_private_too() {
    let order = CaptureOrder::default();
    // SAFETY: no code reads or writes the host stand-in's addresses.
    let p = unsafe {
        VirtualPoolMemoryResource::with_physical(
            HostPhysicalMemory::new(1 << 40, 1 << 30, 2 * MIB),
            4 * MIB,
            Box::new(order.clone()),
            4,
        )
    }
    .unwrap();
    let eager = alloc(&p, MIB, A);
    free(&p, eager, MIB, A);
    order.set_capturing(A, Some(11));
    assert_eq!(p.begin_capture(s(A)).unwrap(), 11);
    let x = alloc(&p, MIB, A);
    assert_ne!(x, eager);
    free(&p, x, MIB, A);
    assert_eq!(alloc(&p, MIB, A), x);
    free(&p, x, MIB, A);
    let e = alloc(&p, MIB, B);
    assert_ne!(e, x);
    free(&p, e, MIB, B);
    order.set_capturing(A, None);
    p.end_capture(s(A));
    assert!(order.illegal().is_empty(), "{:?}", order.illegal());
    assert_eq!(p.captures(), vec![11]);
    assert!(p.capture_pool_size(11) >= MIB, "the capture keeps its memory until the release");
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    unsafe { p.release_capture(11) }.unwrap();
    assert_eq!(p.capture_pool_size(11), 0);
    p.check_invariants().unwrap();
}

#[test]
fn captures_on_threads_never_share_memory_with_eager_threads() {
    let (p, order, up) = pool(32 * MIB, None);
    let p = Arc::new(p);
    // The pool learns of a capture when it is announced: in global mode, keeping other threads'
    // calls out of the gap between `cuStreamBeginCapture` and `begin_capture` is the program's
    // part (the stand-in order would report their identity queries in that gap as illegal).
    let announced = Arc::new(std::sync::Barrier::new(4));
    let threads: Vec<_> = (0..4usize)
        .map(|t| {
            let (p, order, announced) = (p.clone(), order.clone(), announced.clone());
            std::thread::spawn(move || {
                let stream = 0x10_000 * (t + 1);
                let capturing = t % 2 == 0;
                if capturing {
                    begin(&p, &order, stream, 100 + t as u64);
                }
                announced.wait();
                let mut rng = common::Rng::new(t as u64);
                let mut live: Vec<(usize, usize)> = Vec::new();
                let mut seen = Vec::new();
                for _ in 0..2000 {
                    if live.len() < 20 && !rng.next_u64().is_multiple_of(3) {
                        let bytes = 256 + (rng.next_u64() as usize % (512 << 10));
                        let a = alloc(&*p, bytes, stream);
                        live.push((a, bytes));
                        seen.push((a, bytes));
                    } else if !live.is_empty() {
                        let (a, bytes) = live.swap_remove(rng.next_u64() as usize % live.len());
                        free(&*p, a, bytes, stream);
                    }
                }
                for (a, bytes) in live {
                    free(&*p, a, bytes, stream);
                }
                if capturing {
                    end(&p, &order, stream);
                }
                (capturing, seen)
            })
        })
        .collect();
    let results: Vec<(bool, Vec<(usize, usize)>)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let captured: Vec<(usize, usize)> = results.iter().filter(|r| r.0).flat_map(|r| r.1.clone()).collect();
    let eager: Vec<(usize, usize)> = results.iter().filter(|r| !r.0).flat_map(|r| r.1.clone()).collect();
    for &(c, cn) in &captured {
        for &(e, en) in &eager {
            assert!(c + cn <= e || e + en <= c, "capture block {c:#x} overlaps eager block {e:#x}");
        }
    }
    // Two captures never share a block either.
    let of = |t: usize| results[t].1.clone();
    for &(a, an) in &of(0) {
        for &(b, bn) in &of(2) {
            assert!(a + an <= b || b + bn <= a);
        }
    }
    assert!(order.illegal().is_empty(), "{:?}", order.illegal());
    assert_eq!(up.breaking_calls.load(Ordering::SeqCst), 0);
    p.check_invariants().unwrap();
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    unsafe { p.release_capture(100) }.unwrap();
    // SAFETY: the capture is simulated by the test's stream order: no graph exists.
    unsafe { p.release_capture(102) }.unwrap();
    p.check_invariants().unwrap();
}
