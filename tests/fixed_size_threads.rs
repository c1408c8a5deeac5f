//! The fixed-size and binning resources under many threads: each thread keeps a magazine of free
//! blocks per stream, and these tests check that no block reaches another stream without the
//! stream order's wait (vector clocks, as in `fixed_binning.rs`), that a retired stream's cached
//! blocks reach the next stream with its handle only after a wait, that a thread that exits or
//! keeps blocks cached strands no memory (out-of-memory and growth take them back), and that the
//! counts stay exact.

mod common;

use common::clock_order::{name_of, ClockOrder};
use common::{run_trace, Rng, Trace};
use rmm::adaptor::LimitingResourceAdaptor;
use rmm::pool::{current_thread_number, StreamKey};
use rmm::resource::{BinningMemoryResource, FixedSizeMemoryResource, HostMemoryResource};
use rmm::stream_registry::{register_stream, retire_stream};
use rmm::{CudaStreamView, Error, MemoryResource};
use std::collections::HashMap;
use std::sync::{Arc, Barrier, Mutex};

const KIB: usize = 1 << 10;

/// Which streams the threads use.
#[derive(Clone, Copy, Debug)]
enum Streams {
    /// Each thread its own stream.
    Own,
    /// All threads one stream.
    Shared,
    /// Each thread the per-thread default stream.
    PerThreadDefault,
    /// Each call one of three streams, at random.
    Mixed,
}

/// `threads` threads run random allocations and frees of up to 40 live blocks each on `r`,
/// checking each hand-out against the model: never two holders, and a block freed on one stream
/// reaches another only after the order made it wait (or synchronised).
fn run_threads(r: &Fixed, order: &ClockOrder, threads: usize, streams: Streams, ops: usize) {
    let freed: Arc<Mutex<HashMap<usize, (usize, u64)>>> = Arc::default();
    let held: Arc<Mutex<HashMap<usize, usize>>> = Arc::default();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (r, order, freed, held) = (r.clone(), order.clone(), freed.clone(), held.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::new(1000 + t as u64);
                let mut mine: Vec<(usize, usize, CudaStreamView, usize)> = Vec::new();
                for step in 0..ops {
                    let (view, key) = match streams {
                        Streams::Own => {
                            // SAFETY: a stream name for resources over host memory: no driver call sees it.
                            (unsafe { CudaStreamView::from_handle(0x10_000 * (t + 1)) }, 0x10_000 * (t + 1))
                        }
                        // SAFETY: a stream name for resources over host memory: no driver call sees it.
                        Streams::Shared => (unsafe { CudaStreamView::from_handle(0x7_0000) }, 0x7_0000),
                        Streams::PerThreadDefault => {
                            (CudaStreamView::PER_THREAD, name_of(StreamKey::per_thread(current_thread_number())))
                        }
                        Streams::Mixed => {
                            let h = 0x10_0000 * (1 + rng.below(3));
                            // SAFETY: a stream name for resources over host memory: no driver call sees it.
                            (unsafe { CudaStreamView::from_handle(h) }, h)
                        }
                    };
                    let time = order.tick(key);
                    if mine.len() < 40 && (mine.is_empty() || rng.below(100) < 55) {
                        let bytes = 1 + rng.below(4 * KIB);
                        let p = r.allocate(bytes, 256, view).unwrap_or_else(|e| panic!("step {step}: {e}")) as usize;
                        assert!(held.lock().unwrap().insert(p, t).is_none(), "{p:#x} handed out twice");
                        if let Some((from, at)) = freed.lock().unwrap().remove(&p) {
                            assert!(
                                order.sees(key, from, at),
                                "{p:#x} freed on {from:#x} at {at} reached {key:#x} unordered"
                            );
                        }
                        mine.push((p, bytes, view, key));
                    } else {
                        let (p, bytes, _, _) = mine.swap_remove(rng.below(mine.len()));
                        held.lock().unwrap().remove(&p);
                        // Noted before the free: once freed, another thread may get the block.
                        freed.lock().unwrap().insert(p, (key, time));
                        r.deallocate(p as *mut u8, bytes, 256, view).unwrap();
                    }
                }
                // What is still held goes back on the stream it was allocated on.
                for (p, bytes, view, key) in mine {
                    let time = order.tick(key);
                    held.lock().unwrap().remove(&p);
                    freed.lock().unwrap().insert(p, (key, time));
                    r.deallocate(p as *mut u8, bytes, 256, view).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

type Fixed = Arc<FixedSizeMemoryResource<Arc<HostMemoryResource>>>;

/// A resource of 4 KiB blocks over host memory, ordered by a fresh clock order.
fn ordered(blocks_per_chunk: usize) -> (Fixed, ClockOrder, Arc<HostMemoryResource>) {
    let host = Arc::new(HostMemoryResource::new());
    let order = ClockOrder::default();
    let r =
        // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
        unsafe { FixedSizeMemoryResource::with_stream_order(host.clone(), 4 * KIB, blocks_per_chunk, Box::new(order.clone())) }
            .unwrap();
    (Arc::new(r), order, host)
}

fn ops() -> usize {
    if cfg!(debug_assertions) {
        3_000
    } else {
        50_000
    }
}

#[test]
fn threads_on_own_shared_and_per_thread_default_streams_keep_stream_order() {
    for streams in [Streams::Own, Streams::Shared, Streams::PerThreadDefault, Streams::Mixed] {
        for threads in [2, 8, 16] {
            let (r, order, host) = ordered(64);
            run_threads(&r, &order, threads, streams, ops());
            r.check_invariants().unwrap_or_else(|e| panic!("{streams:?}, {threads} threads: {e}"));
            assert_eq!(r.free_blocks(), r.pool_size() / (4 * KIB), "{streams:?}: every block is free again");
            let (records, waits, syncs) = order.counts();
            println!(
                "{streams:?} x{threads}: {} chunks, records {records}, waits {waits}, syncs {syncs}",
                r.chunks().len()
            );
            drop(r);
            assert_eq!(host.outstanding(), (0, 0));
        }
    }
}

#[test]
fn cached_blocks_count_as_free_and_a_second_free_is_still_refused() {
    let (r, _order, _host) = ordered(64);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let s = unsafe { CudaStreamView::from_handle(0x5000) };
    let blocks: Vec<_> = (0..10).map(|_| r.allocate(100, 256, s).unwrap()).collect();
    let total = r.pool_size() / (4 * KIB);
    assert_eq!(r.free_blocks(), total - 10);
    for &b in &blocks {
        r.deallocate(b, 100, 256, s).unwrap();
    }
    assert_eq!(r.free_blocks(), total, "blocks in this thread's magazine are free");
    r.check_invariants().unwrap();
    // A block in the magazine is free: freeing it again is refused, here and from another thread.
    assert_eq!(
        r.deallocate(blocks[3], 100, 256, s),
        Err(Error::Misuse(rmm::Misuse::DoubleFree { ptr: blocks[3] as usize }))
    );
    let r2 = r.clone();
    let b = blocks[4] as usize;
    let other = std::thread::spawn(move || r2.deallocate(b as *mut u8, 100, 256, s)).join().unwrap();
    assert_eq!(other, Err(Error::Misuse(rmm::Misuse::DoubleFree { ptr: b })));
    assert_eq!(r.free_blocks(), total);
}

/// One chunk only: a thread fills its magazine and exits; the blocks serve the next thread on the
/// same stream at once, and (unordered memory) any stream, without growing.
#[test]
fn a_thread_that_exits_leaves_its_cached_blocks_to_the_others() {
    for unordered in [false, true] {
        let host = Arc::new(HostMemoryResource::new());
        let up = Arc::new(LimitingResourceAdaptor::new(host.clone(), 32 * 4 * KIB));
        let order = ClockOrder::default();
        let r = Arc::new(if unordered {
            FixedSizeMemoryResource::new(up.clone(), 4 * KIB, 32).unwrap()
        } else {
            // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
            unsafe { FixedSizeMemoryResource::with_stream_order(up.clone(), 4 * KIB, 32, Box::new(order.clone())) }
                .unwrap()
        });
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        let s = unsafe { CudaStreamView::from_handle(0x9000) };
        let syncs = order.counts().2; // the constructor's
        let r2 = r.clone();
        std::thread::spawn(move || {
            let blocks: Vec<_> = (0..32).map(|_| r2.allocate(64, 256, s).unwrap()).collect();
            for b in blocks {
                r2.deallocate(b, 64, 256, s).unwrap();
            }
        })
        .join()
        .unwrap();
        assert_eq!(r.free_blocks(), 32);
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        let t = if unordered { unsafe { CudaStreamView::from_handle(0xa000) } } else { s };
        let blocks: Vec<_> =
            (0..32).map(|i| r.allocate(64, 256, t).unwrap_or_else(|e| panic!("block {i}: {e}"))).collect();
        assert_eq!(r.chunks().len(), 1, "no growth: the exited thread's blocks came back");
        assert_eq!(order.counts().2, syncs, "and without a synchronisation");
        for b in blocks {
            r.deallocate(b, 64, 256, t).unwrap();
        }
        r.check_invariants().unwrap();
    }
}

/// One chunk only: blocks freed on stream S sit in a live thread's magazine; a thread on stream T
/// needs all of them. The resource takes them back, and T gets them only after a wait for S's
/// capture or a synchronisation, never unordered.
#[test]
fn out_of_memory_takes_back_blocks_cached_in_other_threads() {
    let host = Arc::new(HostMemoryResource::new());
    let up = Arc::new(LimitingResourceAdaptor::new(host.clone(), 16 * 4 * KIB));
    let order = ClockOrder::default();
    // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
    let r = unsafe { FixedSizeMemoryResource::with_stream_order(up, 4 * KIB, 16, Box::new(order.clone())) };
    let r = Arc::new(r.unwrap());
    let (sk, tk) = (0x1_1000, 0x2_2000);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let (s, t) = (unsafe { CudaStreamView::from_handle(sk) }, unsafe { CudaStreamView::from_handle(tk) });
    let cached = Arc::new(Barrier::new(2));
    let done = Arc::new(Barrier::new(2));
    let (r2, c2, d2, o2) = (r.clone(), cached.clone(), done.clone(), order.clone());
    let holder = std::thread::spawn(move || {
        let blocks: Vec<usize> = (0..16).map(|_| r2.allocate(64, 256, s).unwrap() as usize).collect();
        let time = o2.tick(sk);
        for &b in &blocks {
            r2.deallocate(b as *mut u8, 64, 256, s).unwrap();
        }
        c2.wait();
        d2.wait();
        (blocks, time)
    });
    cached.wait();
    order.tick(tk);
    let got: Vec<usize> =
        (0..16).map(|i| r.allocate(64, 256, t).unwrap_or_else(|e| panic!("block {i}: {e}")) as usize).collect();
    done.wait();
    let (blocks, freed_at) = holder.join().unwrap();
    let mut a = got.clone();
    let mut b = blocks;
    a.sort();
    b.sort();
    assert_eq!(a, b, "all of S's blocks reached T");
    assert!(order.sees(tk, sk, freed_at), "T took S's blocks without waiting for them");
    assert_eq!(r.chunks().len(), 1);
    for p in got {
        r.deallocate(p as *mut u8, 64, 256, t).unwrap();
    }
    r.check_invariants().unwrap();
}

/// A stream of ours caches blocks in this thread's magazine and retires: the next stream with its
/// handle gets them only after waiting for the retiring stream's capture.
#[test]
fn a_retired_streams_cached_blocks_reach_the_next_owner_only_after_a_wait() {
    let (r, order, _host) = ordered(64);
    let h = 0x33_0000;
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let s = unsafe { CudaStreamView::from_handle(h) };
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    unsafe { register_stream(h) };
    let blocks: Vec<_> = (0..8).map(|_| r.allocate(64, 256, s).unwrap()).collect();
    order.tick(h);
    for &b in &blocks {
        r.deallocate(b, 64, 256, s).unwrap();
    }
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    unsafe { retire_stream(h) };
    let retired = {
        let c = order.0.lock().unwrap();
        let [(owner, retired)] = c.retires[..] else { panic!("expected one retirement, got {:?}", c.retires) };
        assert_eq!(owner, StreamKey::of_handle(h));
        retired
    };
    // A new stream gets the handle; its clock starts afresh under the same key.
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    unsafe { register_stream(h) };
    order.0.lock().unwrap().clock.remove(&h);
    let mut got = Vec::new();
    for _ in 0..64 {
        let p = r.allocate(64, 256, s).unwrap();
        if blocks.contains(&p) {
            assert!(
                order.0.lock().unwrap().waits.contains(&(retired, StreamKey::of_handle(h))) || order.counts().2 > 0,
                "{p:p} of the retired stream reached its successor without a wait"
            );
        }
        got.push(p);
    }
    for p in got {
        r.deallocate(p, 64, 256, s).unwrap();
    }
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    unsafe { retire_stream(h) };
    r.check_invariants().unwrap();
    assert_eq!(r.free_blocks(), r.pool_size() / (4 * KIB));
}

/// Streams of ours, shared by threads or one a thread, retire and their handles go to new streams
/// while blocks freed on them sit in the threads' magazines: a block reaches a later lifetime of
/// its handle only after a wait for the retiring stream's capture or a synchronisation.
#[test]
fn retired_and_replaced_streams_with_cached_blocks_keep_stream_order() {
    for shared in [true, false] {
        let (r, order, _host) = ordered(32);
        let threads = 4;
        let handle = move |t: usize| if shared { 0x44_0000 } else { 0x45_0000 + 0x1000 * t };
        let handles: Vec<usize> = if shared { vec![handle(0)] } else { (0..threads).map(handle).collect() };
        for &h in &handles {
            // SAFETY: a stream name for resources over host memory: no driver call sees it.
            unsafe { register_stream(h) };
        }
        let freed: Arc<Mutex<HashMap<usize, (usize, u64)>>> = Arc::default();
        let bad: Arc<Mutex<Vec<String>>> = Arc::default();
        let start = Arc::new(Barrier::new(threads + 1));
        let end = Arc::new(Barrier::new(threads + 1));
        let rounds = 20;
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (r, order, freed, start, end) =
                    (r.clone(), order.clone(), freed.clone(), start.clone(), end.clone());
                let bad = bad.clone();
                std::thread::spawn(move || {
                    let mut rng = Rng::new(500 + t as u64);
                    let h = handle(t);
                    // SAFETY: a stream name for resources over host memory: no driver call sees it.
                    let view = unsafe { CudaStreamView::from_handle(h) };
                    for _ in 0..rounds {
                        start.wait();
                        let me = order.model(h);
                        let mut mine = Vec::new();
                        for _ in 0..200 {
                            let time = order.tick(me);
                            if mine.len() < 20 && (mine.is_empty() || rng.below(2) == 0) {
                                let p = r.allocate(64, 256, view).unwrap() as usize;
                                if let Some((from, at)) = freed.lock().unwrap().remove(&p) {
                                    if !order.sees(me, from, at) {
                                        // Noted, not asserted: a panic would leave the others waiting.
                                        let seen = format!("{p:#x} freed on {from:#x} at {at} reached {me:#x}");
                                        bad.lock().unwrap().push(seen);
                                    }
                                }
                                mine.push(p);
                            } else {
                                let p = mine.swap_remove(rng.below(mine.len()));
                                freed.lock().unwrap().insert(p, (me, time));
                                r.deallocate(p as *mut u8, 64, 256, view).unwrap();
                            }
                        }
                        for p in mine {
                            let time = order.tick(me);
                            freed.lock().unwrap().insert(p, (me, time));
                            r.deallocate(p as *mut u8, 64, 256, view).unwrap();
                        }
                        end.wait();
                    }
                })
            })
            .collect();
        for _ in 0..rounds {
            start.wait();
            end.wait();
            // Every block is free, many in the threads' magazines: the streams retire and their
            // handles go to new streams.
            for &h in &handles {
                // SAFETY: a stream name for resources over host memory: no driver call sees it.
                unsafe { retire_stream(h) };
                order.new_lifetime(h);
                // SAFETY: a stream name for resources over host memory: no driver call sees it.
                unsafe { register_stream(h) };
            }
        }
        for w in workers {
            w.join().unwrap();
        }
        for &h in &handles {
            // SAFETY: a stream name for resources over host memory: no driver call sees it.
            unsafe { retire_stream(h) };
        }
        let bad = bad.lock().unwrap().clone();
        assert!(bad.is_empty(), "shared {shared}: {} unordered hand-overs, first {:?}", bad.len(), bad.first());
        r.check_invariants().unwrap();
        assert_eq!(r.free_blocks(), r.pool_size() / (4 * KIB));
        let (records, waits, syncs) = order.counts();
        println!("shared {shared}: {} chunks, records {records}, waits {waits}, syncs {syncs}", r.chunks().len());
    }
}

#[test]
fn binning_under_threads_on_own_and_shared_streams() {
    let host = Arc::new(HostMemoryResource::new());
    {
        let b = Arc::new(BinningMemoryResource::with_bins(host.clone(), 8, 14).unwrap());
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let b = b.clone();
                std::thread::spawn(move || {
                    // SAFETY: a stream name for resources over host memory: no driver call sees it.
                    let own = unsafe { CudaStreamView::from_handle(0x1000 * (i + 1)) };
                    // SAFETY: a stream name for resources over host memory: no driver call sees it.
                    let shared = unsafe { CudaStreamView::from_handle(0x77_0000) };
                    let streams = if i % 2 == 0 { vec![own] } else { vec![shared, CudaStreamView::PER_THREAD] };
                    let t = Trace { ops: ops(), max_live: 100, max_size: 32 * KIB, streams, ..Trace::default() };
                    run_trace(&*b, &t, &mut Rng::new(77 + i as u64), false, |_| {});
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }
    assert_eq!(host.outstanding(), (0, 0));
}
