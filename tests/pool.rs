//! The pool on a host-memory upstream: model-based random traces, threads, stream ordering,
//! growth, and every bad input.

mod common;

use common::recording_order::{Asked, RecordingOrder};
use common::{run_trace, seed, Rng, Trace};
use rmm::pool::{StreamIdentity, StreamKey, StreamOrder};

/// The pool's key of the stream with handle `handle`, as the orders' logs name streams.
fn key(handle: usize) -> StreamKey {
    StreamKey::of_handle(handle)
}
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, Error, MemoryResource, Misuse, Result};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const MIB: usize = 1 << 20;

fn streams(n: usize) -> Vec<CudaStreamView<'static>> {
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    (0..n).map(|i| unsafe { CudaStreamView::from_handle(0x1000 * (i + 1)) }).collect()
}

fn host_pool(initial: usize, max: Option<usize>) -> PoolMemoryResource<Arc<HostMemoryResource>> {
    PoolMemoryResource::new(Arc::new(HostMemoryResource::new()), initial, max).unwrap()
}

use Asked::*;

/// A pool over host memory that records what it asks of its stream order, and that record.
fn recorded_pool(initial: usize, max: Option<usize>) -> (PoolMemoryResource<HostMemoryResource>, RecordingOrder) {
    let order = RecordingOrder::default();
    // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
    let pool = unsafe {
        PoolMemoryResource::with_stream_order(HostMemoryResource::new(), initial, max, Box::new(order.clone()))
    }
    .unwrap();
    (pool, order)
}

/// Host memory that refuses to hand out more than `cap` bytes in total.
struct CappedHost {
    inner: HostMemoryResource,
    cap: usize,
    used: AtomicUsize,
}

impl CappedHost {
    fn new(cap: usize) -> Self {
        CappedHost { inner: HostMemoryResource::new(), cap, used: AtomicUsize::new(0) }
    }
}

// SAFETY: blocks come from a `HostMemoryResource` unchanged and go back to it; host memory, as
// the answer below says.
unsafe impl MemoryResource for CappedHost {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        if self.used.load(Ordering::SeqCst) + bytes > self.cap {
            return Err(Error::out_of_memory(bytes, "cap"));
        }
        let p = self.inner.allocate(bytes, alignment, stream)?;
        self.used.fetch_add(bytes, Ordering::SeqCst);
        Ok(p)
    }
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        self.inner.deallocate(ptr, bytes, alignment, stream)?;
        self.used.fetch_sub(bytes, Ordering::SeqCst);
        Ok(())
    }
    fn is_device_accessible(&self) -> bool {
        false
    }
}

#[test]
fn random_trace_matches_model_and_returns_everything() {
    let upstream = Arc::new(HostMemoryResource::new());
    let mut rng = Rng::new(seed("pool random trace", 1));
    {
        let pool = PoolMemoryResource::new(upstream.clone(), 4 * MIB, None).unwrap();
        let t = Trace {
            ops: 1_000_000,
            max_live: 1000,
            min_size: 1,
            max_size: 256 << 10,
            streams: streams(4),
            big_alignments: true,
            ..Trace::default()
        };
        let mut step = 0usize;
        run_trace(&pool, &t, &mut rng, false, |model| {
            step += 1;
            if step.is_multiple_of(20_000) {
                pool.check_invariants().unwrap();
                let s = pool.state();
                assert!(s.pool_size - s.free_bytes >= model.live_bytes, "pool lost track of live bytes");
            }
        });
        pool.check_invariants().unwrap();
        let s = pool.state();
        assert_eq!(s.free_bytes, s.pool_size, "all blocks are free after the trace");
    }
    assert_eq!(upstream.outstanding(), (0, 0), "the upstream got every byte back");
}

#[test]
fn allocated_bytes_are_exact_on_a_single_stream() {
    let pool = host_pool(0, None);
    let mut rng = Rng::new(seed("pool exact bytes", 2));
    let t = Trace { ops: 200_000, max_size: 1 << 20, min_size: 8, ..Trace::default() };
    let mut step = 0;
    run_trace(&pool, &t, &mut rng, false, |model| {
        step += 1;
        if step % 5000 == 0 {
            // One stream and 256-aligned requests: no alignment gaps, so the pool's used bytes are
            // exactly the live requests rounded up to 256.
            let s = pool.state();
            assert_eq!(s.pool_size - s.free_bytes, model.rounded_live_bytes());
        }
    });
    let s = pool.state();
    assert_eq!(s.free_bytes, s.pool_size);
    pool.check_invariants().unwrap();
}

#[test]
fn eight_threads_share_one_pool_without_overlap() {
    let upstream = Arc::new(HostMemoryResource::new());
    let pool = Arc::new(PoolMemoryResource::new(upstream.clone(), 8 * MIB, None).unwrap());
    let global = Arc::new(Mutex::new(common::Model::default()));
    let base = seed("pool threads", 3);
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let pool = pool.clone();
            let global = global.clone();
            std::thread::spawn(move || {
                let mut rng = Rng::new(base + t as u64);
                // SAFETY: a stream name for resources over host memory: no driver call sees it.
                let stream = unsafe { CudaStreamView::from_handle(0x1_0000 * (t + 1)) };
                let mut live: Vec<(*mut u8, usize)> = Vec::new();
                for _ in 0..100_000 {
                    if live.len() < 200 && (live.is_empty() || rng.below(2) == 0) {
                        let bytes = rng.log_uniform(1, 64 << 10);
                        let p = pool.allocate(bytes, 256, stream).unwrap();
                        global.lock().unwrap().insert(p, bytes, 256);
                        live.push((p, bytes));
                    } else {
                        let (p, bytes) = live.swap_remove(rng.below(live.len()));
                        global.lock().unwrap().remove(p);
                        pool.deallocate(p, bytes, 256, stream).unwrap();
                    }
                }
                for (p, bytes) in live {
                    global.lock().unwrap().remove(p);
                    pool.deallocate(p, bytes, 256, stream).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    pool.check_invariants().unwrap();
    let s = pool.state();
    assert_eq!(s.free_bytes, s.pool_size);
    drop(pool);
    assert_eq!(upstream.outstanding(), (0, 0));
}

#[test]
fn freed_block_is_reused_on_its_stream_without_ordering() {
    let (pool, order) = recorded_pool(MIB, None);
    // The initial chunk becomes fresh memory once everything is synchronised.
    assert_eq!(order.log(), vec![SyncAll]);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let a = unsafe { CudaStreamView::from_handle(0x1000) };
    let p = pool.allocate(1000, 256, a).unwrap();
    pool.deallocate(p, 1000, 256, a).unwrap();
    let q = pool.allocate(1000, 256, a).unwrap();
    assert_eq!(p, q);
    assert_eq!(order.log(), vec![SyncAll], "fresh memory and same-stream reuse need no ordering");
    pool.deallocate(q, 1000, 256, a).unwrap();
}

#[test]
fn small_blocks_kept_for_reuse_merge_before_a_larger_request() {
    // A stream that has the pool alone keeps its freed small blocks whole, for requests of their
    // size; a request they cannot serve one by one must find them merged, not grow the pool.
    let pool = host_pool(8192, Some(8192));
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let a = unsafe { CudaStreamView::from_handle(0x1000) };
    let blocks: Vec<*mut u8> = (0..32).map(|_| pool.allocate(256, 256, a).unwrap()).collect();
    for &p in &blocks {
        pool.deallocate(p, 256, 256, a).unwrap();
    }
    assert_eq!(pool.state().free_bytes, 8192, "kept blocks are free memory");
    pool.check_invariants().unwrap();
    // The block freed last comes back first; a second free of it is still a double free.
    let p = pool.allocate(100, 256, a).unwrap();
    assert_eq!(p, blocks[31]);
    pool.deallocate(p, 100, 256, a).unwrap();
    assert!(matches!(pool.deallocate(p, 100, 256, a), Err(Error::Misuse(Misuse::DoubleFree { .. }))));
    let whole = pool.allocate(8192, 256, a).unwrap();
    assert_eq!(whole, blocks[0]);
    assert_eq!(pool.pool_size(), 8192);
    pool.deallocate(whole, 8192, 256, a).unwrap();
    pool.check_invariants().unwrap();
}

#[test]
fn another_stream_takes_free_blocks_only_after_the_owner_published_them() {
    let (pool, order) = recorded_pool(2 * MIB, None);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let (a, b) = (unsafe { CudaStreamView::from_handle(0x1000) }, unsafe { CudaStreamView::from_handle(0x2000) });
    let x1 = pool.allocate(MIB, 256, a).unwrap();
    let x2 = pool.allocate(MIB / 2, 256, a).unwrap();
    pool.deallocate(x1, MIB, 256, a).unwrap();
    // a's free block is not published yet: b asks for it and grows meanwhile, then offers the
    // rest of its new chunk to the other streams (a capture of b's work).
    let y = pool.allocate(MIB, 256, b).unwrap();
    assert!(y as usize >= x1 as usize + 2 * MIB || (y as usize) + MIB <= x1 as usize, "b got a's unpublished block");
    assert_eq!(order.log(), vec![SyncAll, Record(key(0x2000))]);
    // a's next call captures its work...
    pool.deallocate(x2, MIB / 2, 256, a).unwrap();
    assert_eq!(order.log(), vec![SyncAll, Record(key(0x2000)), Record(key(0x1000))]);
    // ...and b takes a's (now coalesced) block after waiting for that capture.
    let w = pool.allocate(3 * MIB / 2, 256, b).unwrap();
    assert_eq!(w, x1);
    assert_eq!(order.log(), vec![SyncAll, Record(key(0x2000)), Record(key(0x1000)), Wait(key(0x1000), key(0x2000))]);
    pool.deallocate(w, 3 * MIB / 2, 256, b).unwrap();
    pool.deallocate(y, MIB, 256, b).unwrap();
    pool.check_invariants().unwrap();
}

/// While streams take turns, the rest of a chunk one stream grew the pool by is offered to the
/// others at once: the next stream short of memory waits for the grower instead of growing again
/// (RMM's free lists are open to every stream after an event wait; a grown chunk's rest is too).
#[test]
fn rest_of_a_grown_chunk_serves_the_next_stream_without_growth() {
    let (pool, order) = recorded_pool(0, None);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let (a, b) = (unsafe { CudaStreamView::from_handle(0x1000) }, unsafe { CudaStreamView::from_handle(0x2000) });
    let x = pool.allocate(4096, 256, a).unwrap();
    // b grows by the pool's size (as RMM does), more than its block needs.
    let y = pool.allocate(1000, 256, b).unwrap();
    let grown = pool.pool_size();
    assert_eq!(grown, 8192, "b's chunk has room left after its block");
    assert_eq!(order.log(), vec![Record(key(0x2000))], "b captured its work when it grew");
    // a's own lists are empty; b's published rest fits: a waits for b and takes it.
    let z = pool.allocate(1000, 256, a).unwrap();
    assert_eq!(pool.pool_size(), grown, "no growth for a");
    assert_eq!(order.log(), vec![Record(key(0x2000)), Wait(key(0x2000), key(0x1000))]);
    for (p, n, s) in [(x, 4096, a), (y, 1000, b), (z, 1000, a)] {
        pool.deallocate(p, n, 256, s).unwrap();
    }
    pool.check_invariants().unwrap();
}

/// A stream alone on the pool grows without capturing anything: no CUDA call for others' sake.
#[test]
fn a_stream_alone_grows_without_capturing_its_work() {
    let (pool, order) = recorded_pool(0, None);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let a = unsafe { CudaStreamView::from_handle(0x1000) };
    let blocks: Vec<_> = (1..=64).map(|i| (pool.allocate(i * 4096, 256, a).unwrap(), i * 4096)).collect();
    assert!(order.log().is_empty(), "{:?}", order.log());
    for (p, n) in blocks {
        pool.deallocate(p, n, 256, a).unwrap();
    }
    pool.check_invariants().unwrap();
}

#[test]
fn free_lists_of_all_streams_merge_before_out_of_memory() {
    let (pool, order) = recorded_pool(2 * MIB, Some(2 * MIB));
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let (a, b, c) =
        (unsafe { CudaStreamView::from_handle(0x1000) }, unsafe { CudaStreamView::from_handle(0x2000) }, unsafe {
            CudaStreamView::from_handle(0x3000)
        });
    // Both take their block from the fresh chunk: no ordering needed.
    let x = pool.allocate(MIB, 256, a).unwrap();
    let y = pool.allocate(MIB, 256, b).unwrap();
    assert_eq!(order.log(), vec![SyncAll]);
    pool.deallocate(x, MIB, 256, a).unwrap();
    pool.deallocate(y, MIB, 256, b).unwrap();
    // Neither a nor b alone has 2 MiB free and the pool is at its maximum; together, coalesced,
    // they have. Several streams share the pool, so a and b published on every free (as RMM
    // records on every free): c waits for both and merges, with no full synchronisation.
    let z = pool.allocate(2 * MIB, 256, c).unwrap();
    assert_eq!(z, x);
    assert_eq!(pool.state().free_bytes, 0);
    assert_eq!(
        order.log(),
        vec![
            SyncAll,
            Record(key(0x1000)),
            Record(key(0x2000)),
            Wait(key(0x1000), key(0x3000)),
            Wait(key(0x2000), key(0x3000))
        ]
    );
    pool.deallocate(z, 2 * MIB, 256, c).unwrap();
    pool.check_invariants().unwrap();
}

#[test]
fn growth_backs_off_toward_the_request() {
    let upstream = Arc::new(CappedHost::new(3 * MIB));
    let pool = PoolMemoryResource::new(upstream.clone(), 0, None).unwrap();
    let s = CudaStreamView::DEFAULT;
    let a = pool.allocate(MIB, 256, s).unwrap(); // grows by 1 MiB
    let b = pool.allocate(3 * MIB / 2, 256, s).unwrap(); // grows by 1.5 MiB
                                                         // Doubling would ask for 2.5 MiB; only 0.5 MiB is left upstream, and the pool must find it.
    let c = pool.allocate(MIB / 2, 256, s).unwrap();
    assert_eq!(upstream.used.load(Ordering::SeqCst), 3 * MIB);
    let err = pool.allocate(256, 256, s).unwrap_err();
    match err {
        Error::OutOfMemory { requested: 256, pool: Some(state), .. } => {
            assert_eq!(state.pool_size, 3 * MIB);
            assert_eq!(state.free_bytes, 0);
        }
        other => panic!("expected out of memory, got {other}"),
    }
    for (p, n) in [(a, MIB), (b, 3 * MIB / 2), (c, MIB / 2)] {
        pool.deallocate(p, n, 256, s).unwrap();
    }
    drop(pool);
    assert_eq!(upstream.used.load(Ordering::SeqCst), 0);
}

#[test]
fn out_of_memory_at_maximum_reports_numbers_and_pool_keeps_working() {
    let pool = host_pool(MIB, Some(MIB));
    let s = CudaStreamView::DEFAULT;
    let p = pool.allocate(MIB / 2, 256, s).unwrap();
    let err = pool.allocate(MIB, 256, s).unwrap_err();
    assert_eq!(
        err,
        Error::out_of_memory_verbatim(
            MIB,
            Some(rmm::PoolState { pool_size: MIB, free_bytes: MIB / 2, largest_free_block: MIB / 2 }),
            "Maximum pool size exceeded (failed to allocate 1024.000000 KiB): Not enough room to grow, \
             current/max/try size = 1024.000000 KiB, 1024.000000 KiB, 1024.000000 KiB",
        )
    );
    let q = pool.allocate(MIB / 2, 256, s).unwrap();
    pool.deallocate(p, MIB / 2, 256, s).unwrap();
    pool.deallocate(q, MIB / 2, 256, s).unwrap();
    pool.check_invariants().unwrap();
}

#[test]
fn zero_bytes_is_null_and_touches_nothing() {
    let upstream = Arc::new(HostMemoryResource::new());
    let pool = PoolMemoryResource::new(upstream.clone(), 0, None).unwrap();
    let p = pool.allocate(0, 256, CudaStreamView::DEFAULT).unwrap();
    assert!(p.is_null());
    assert_eq!(pool.pool_size(), 0);
    assert_eq!(upstream.outstanding(), (0, 0));
    pool.deallocate(p, 0, 256, CudaStreamView::DEFAULT).unwrap();
}

#[test]
fn huge_requests_are_out_of_memory() {
    let pool = host_pool(MIB, None);
    for bytes in [usize::MAX, usize::MAX - 255, 1 << 62] {
        let err = pool.allocate(bytes, 256, CudaStreamView::DEFAULT).unwrap_err();
        assert!(matches!(err, Error::OutOfMemory { requested, .. } if requested == bytes), "{bytes}: {err}");
    }
    assert_eq!(pool.pool_size(), MIB);
    pool.check_invariants().unwrap();
}

#[test]
fn bad_alignments_are_rejected() {
    let pool = host_pool(MIB, None);
    for alignment in [0, 3, 100, 1 << 31] {
        let err = pool.allocate(64, alignment, CudaStreamView::DEFAULT).unwrap_err();
        assert_eq!(err, Error::BadAlignment { alignment, max: rmm::resource::MAX_ALIGNMENT });
    }
    for alignment in [1, 8, 256, 4096, 1 << 20] {
        let p = pool.allocate(100, alignment, CudaStreamView::DEFAULT).unwrap();
        assert_eq!(p as usize % alignment.max(256), 0);
        pool.deallocate(p, 100, alignment, CudaStreamView::DEFAULT).unwrap();
    }
    pool.check_invariants().unwrap();
}

#[test]
fn bad_pool_sizes_are_rejected() {
    let make = |i, m| PoolMemoryResource::new(HostMemoryResource::new(), i, m).err().unwrap();
    assert!(matches!(make(1000, None), Error::InvalidArgument(m) if m.contains("initial pool size 1000")));
    assert!(matches!(make(0, Some(1000)), Error::InvalidArgument(m) if m.contains("maximum pool size 1000")));
    assert!(matches!(make(2048, Some(1024)), Error::InvalidArgument(m) if m.contains("below the initial size")));
}

/// Each misuse returns its exact error and leaves the pool exactly as it was.
#[test]
fn misuse_is_detected_and_changes_nothing() {
    let pool = host_pool(MIB, None);
    let s = CudaStreamView::DEFAULT;
    let p = pool.allocate(1000, 256, s).unwrap();
    let q = pool.allocate(5000, 256, s).unwrap();
    pool.deallocate(q, 5000, 256, s).unwrap();
    let before = pool.state();
    let addr = p as usize;

    let cases: Vec<(*mut u8, usize, Misuse)> = vec![
        (q, 5000, Misuse::DoubleFree { ptr: q as usize }),
        (p, 999, Misuse::WrongSize { ptr: addr, allocated: 1000, given: 999 }),
        // SAFETY: `p` is a live host block of 1000 bytes, so 256 bytes in lies inside it.
        (unsafe { p.add(256) }, 744, Misuse::InteriorPointer { ptr: addr + 256, block_start: addr }),
        (0x10 as *mut u8, 8, Misuse::UnknownPointer { ptr: 0x10 }),
    ];
    for (ptr, bytes, expected) in cases {
        let err = pool.deallocate(ptr, bytes, 256, s).unwrap_err();
        assert_eq!(err, Error::Misuse(expected), "{err}");
        assert_eq!(pool.state(), before);
        pool.check_invariants().unwrap();
    }
    let other = HostMemoryResource::new();
    let foreign = other.allocate(512, 256, s).unwrap();
    assert_eq!(
        pool.deallocate(foreign, 512, 256, s).unwrap_err(),
        Error::Misuse(Misuse::UnknownPointer { ptr: foreign as usize })
    );
    other.deallocate(foreign, 512, 256, s).unwrap();

    // Still fully working.
    pool.deallocate(p, 1000, 256, s).unwrap();
    let r = pool.allocate(MIB, 256, s).unwrap();
    pool.deallocate(r, MIB, 256, s).unwrap();
    assert_eq!(pool.state().free_bytes, pool.pool_size());
}

#[test]
fn dropping_the_pool_returns_chunks_even_with_live_blocks() {
    let upstream = Arc::new(HostMemoryResource::new());
    let pool = PoolMemoryResource::new(upstream.clone(), MIB, None).unwrap();
    for _ in 0..10 {
        pool.allocate(300 << 10, 256, CudaStreamView::DEFAULT).unwrap();
    }
    assert!(upstream.outstanding().0 > 1);
    drop(pool);
    assert_eq!(upstream.outstanding(), (0, 0));
}

#[test]
fn per_thread_default_streams_are_distinct_streams() {
    let (pool, order) = recorded_pool(MIB, Some(MIB));
    let pool = Arc::new(pool);
    let p = pool.allocate(MIB, 256, CudaStreamView::PER_THREAD).unwrap();
    pool.deallocate(p, MIB, 256, CudaStreamView::PER_THREAD).unwrap();
    let pool2 = pool.clone();
    let q = std::thread::spawn(move || {
        let q = pool2.allocate(MIB, 256, CudaStreamView::PER_THREAD).unwrap();
        pool2.deallocate(q, MIB, 256, CudaStreamView::PER_THREAD).unwrap();
        q as usize
    })
    .join()
    .unwrap();
    assert_eq!(q, p as usize);
    // The other thread's per-thread stream is another stream: it could only take the block after
    // everything was synchronised (the first SyncAll is the pool's construction; the first
    // thread's free was the only stream's and published nothing).
    let log = order.log();
    assert_eq!(log[..2], [SyncAll, SyncAll]);
    // Its own free then published at once: two streams share the pool now.
    assert!(matches!(log[2..], [Record(k)] if k.per_thread_owner().is_some()), "{log:?}");
}

/// The random trace again, but with streams that need ordering: blocks move between streams only
/// through publish/wait or a full synchronise, and the model still holds.
#[test]
fn random_trace_with_ordered_streams_matches_model() {
    ordered_random_trace(false, 4);
}

/// The same with every stream on a shard of its own: ranges move between shards, frees cross
/// shards, and the maximum forces a full synchronisation now and then.
#[test]
fn random_trace_with_ordered_streams_on_their_own_shards_matches_model() {
    ordered_random_trace(true, 5);
}

fn ordered_random_trace(spread: bool, default_seed: u64) {
    let order = RecordingOrder::default();
    let upstream = Arc::new(HostMemoryResource::new());
    let mut rng = Rng::new(seed(&format!("pool ordered random trace (spread: {spread})"), default_seed));
    {
        let max = 64 * MIB;
        // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
        let pool = unsafe {
            PoolMemoryResource::with_stream_order(upstream.clone(), 4 * MIB, Some(max), Box::new(order.clone()))
        }
        .unwrap();
        let t = Trace { ops: 1_000_000, max_size: 256 << 10, streams: streams(4), ..Trace::default() };
        if spread {
            t.streams.iter().for_each(|&s| pool.spread_stream(s));
        }
        let mut step = 0usize;
        run_trace(&pool, &t, &mut rng, false, |_| {
            step += 1;
            if step.is_multiple_of(50_000) {
                pool.check_invariants().unwrap();
            }
        });
        pool.check_invariants().unwrap();
    }
    let log = order.log();
    let count = |f: fn(&Asked) -> bool| log.iter().filter(|e| f(e)).count();
    let (records, waits) = (count(|e| matches!(e, Record(_))), count(|e| matches!(e, Wait(..))));
    println!("records {records}, waits {waits}, full synchronisations {}", count(|e| *e == SyncAll));
    assert!(records > 0 && waits > 0, "the hand-over between streams was exercised");
    // Every wait follows a record of the same owner.
    for (i, e) in log.iter().enumerate() {
        if let Wait(owner, _) = e {
            assert!(log[..i].contains(&Record(*owner)), "wait on {owner:#x} before any record");
        }
    }
    assert_eq!(upstream.outstanding(), (0, 0));
}

/// Without a way to order streams (here: a synchronise that fails), the initial chunk belongs to
/// the default stream and other streams get it through publish/wait; construction still succeeds.
#[test]
fn initial_chunk_stays_on_the_default_stream_when_synchronising_fails() {
    struct NoSync(RecordingOrder);
    impl StreamOrder for NoSync {
        fn record(&self, owner: StreamKey, _identity: StreamIdentity) -> Result<()> {
            self.0.record(owner, _identity)
        }
        fn wait(&self, owner: StreamKey, _identity: StreamIdentity, waiter: StreamKey) -> Result<()> {
            self.0.wait(owner, _identity, waiter)
        }
        fn synchronize_all(&self) -> Result<()> {
            Err(Error::NoDriver("test".into()))
        }
    }
    let order = RecordingOrder::default();
    let pool =
        // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
        unsafe { PoolMemoryResource::with_stream_order(HostMemoryResource::new(), MIB, None, Box::new(NoSync(order.clone()))) }
            .unwrap();
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let (d, b) = (CudaStreamView::DEFAULT, unsafe { CudaStreamView::from_handle(0x2000) });
    // The default stream uses it at once.
    let p = pool.allocate(1024, 256, d).unwrap();
    // b finds the default stream's block unpublished, asks for it, and grows meanwhile (and
    // offers the rest of its new chunk at once).
    let q = pool.allocate(1024, 256, b).unwrap();
    assert_eq!(pool.pool_size(), 2 * MIB);
    assert_eq!(order.log(), vec![Record(key(0x2000))]);
    // The default stream's next call publishes; b's next request waits and takes from it.
    pool.deallocate(p, 1024, 256, d).unwrap();
    assert_eq!(order.log(), vec![Record(key(0x2000)), Record(key(0))]);
    let r = pool.allocate(MIB, 256, b).unwrap();
    assert_eq!(r, p, "b got the initial chunk, now published by the default stream");
    assert_eq!(order.log(), vec![Record(key(0x2000)), Record(key(0)), Wait(key(0), key(0x2000))]);
    assert_eq!(pool.pool_size(), 2 * MIB);
    pool.deallocate(r, MIB, 256, b).unwrap();
    pool.deallocate(q, 1024, 256, b).unwrap();
}

/// Streams on different shards carve the initial chunk into ranges of their own; once they free
/// everything, a request for the whole pool still succeeds without growing: after a full
/// synchronisation the ranges rejoin.
#[test]
fn ranges_split_between_shards_rejoin_before_out_of_memory() {
    let order = RecordingOrder::default();
    let upstream = Arc::new(HostMemoryResource::new());
    {
        let pool =
            // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
            unsafe { PoolMemoryResource::with_shards(upstream.clone(), 8 * MIB, Some(8 * MIB), Box::new(order.clone()), 4) }
                .unwrap();
        let s = streams(4);
        for &st in &s {
            pool.spread_stream(st);
        }
        let blocks: Vec<_> = s.iter().map(|&st| (pool.allocate(MIB, 256, st).unwrap(), st)).collect();
        pool.check_invariants().unwrap();
        assert_eq!(pool.pool_size(), 8 * MIB, "shards took ranges of the pool instead of growing");
        for &(p, st) in &blocks {
            pool.deallocate(p, MIB, 256, st).unwrap();
        }
        let whole = pool.allocate(8 * MIB, 256, s[1]).unwrap();
        pool.check_invariants().unwrap();
        assert_eq!(pool.pool_size(), 8 * MIB);
        assert!(order.log().contains(&SyncAll));
        // One more byte does not fit, and the error says why; the pool is intact afterwards.
        let e = pool.allocate(1, 256, s[2]).unwrap_err();
        assert!(e.is_out_of_memory(), "{e}");
        pool.deallocate(whole, 8 * MIB, 256, s[1]).unwrap();
        pool.check_invariants().unwrap();
        let again = pool.allocate(8 * MIB, 256, s[3]).unwrap();
        pool.deallocate(again, 8 * MIB, 256, s[3]).unwrap();
    }
    assert_eq!(upstream.outstanding(), (0, 0));
}

/// A block allocated on one shard's stream and freed on another's goes back to the shard that owns
/// it, is published there at once (the freeing stream is alive only during its call), and the
/// first stream reuses it after waiting for the second.
#[test]
fn a_block_freed_on_another_shards_stream_returns_to_its_owner() {
    let order = RecordingOrder::default();
    let pool =
        // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
        unsafe { PoolMemoryResource::with_shards(HostMemoryResource::new(), 2 * MIB, None, Box::new(order.clone()), 2) }.unwrap();
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let (a, b) = (unsafe { CudaStreamView::from_handle(0x1000) }, unsafe { CudaStreamView::from_handle(0x2000) });
    pool.spread_stream(b);
    let p = pool.allocate(MIB, 256, a).unwrap(); // a: shard 0
    let q = pool.allocate(256, 256, b).unwrap(); // b: shard 1, takes shard 0's other MiB
    assert_eq!(pool.pool_size(), 2 * MIB);
    pool.deallocate(p, MIB, 256, b).unwrap();
    assert_eq!(order.log(), vec![SyncAll, Record(key(0x2000))]);
    // Misuse across shards is still diagnosed exactly.
    let e = pool.deallocate(p, MIB, 256, b).unwrap_err();
    assert!(matches!(e, Error::Misuse(Misuse::DoubleFree { .. })), "{e}");
    let e = pool.deallocate((p as usize + 256) as *mut u8, 256, 256, a).unwrap_err();
    assert!(matches!(e, Error::Misuse(Misuse::DoubleFree { .. } | Misuse::InteriorPointer { .. })), "{e}");
    let e = pool.deallocate(0x10 as *mut u8, 256, 256, b).unwrap_err();
    assert!(matches!(e, Error::Misuse(Misuse::UnknownPointer { .. })), "{e}");
    pool.check_invariants().unwrap();
    let r = pool.allocate(MIB, 256, a).unwrap();
    assert_eq!(r, p, "a reused the block b published");
    assert_eq!(order.log(), vec![SyncAll, Record(key(0x2000)), Wait(key(0x2000), key(0x1000))]);
    pool.deallocate(r, MIB, 256, a).unwrap();
    pool.deallocate(q, 256, 256, b).unwrap();
    pool.check_invariants().unwrap();
}

/// Streams taking turns publish on every free (so each can reuse the other's blocks at once, as in
/// RMM); a stream that then has the pool to itself stops paying for it.
#[test]
fn frees_publish_only_while_streams_take_turns() {
    let (pool, order) = recorded_pool(4 * MIB, None);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let (a, b) = (unsafe { CudaStreamView::from_handle(0x1000) }, unsafe { CudaStreamView::from_handle(0x2000) });
    let records = || order.log().iter().filter(|e| matches!(e, Record(_))).count();
    for _ in 0..10 {
        for s in [a, b] {
            let p = pool.allocate(4096, 256, s).unwrap();
            pool.deallocate(p, 4096, 256, s).unwrap();
        }
    }
    assert_eq!(records(), 19, "every free but a's first (b had not called yet) published");
    for _ in 0..rmm::pool::coalescing_pool::RECENT_CALLS {
        let p = pool.allocate(4096, 256, a).unwrap();
        pool.deallocate(p, 4096, 256, a).unwrap();
    }
    let before = records();
    for _ in 0..100 {
        let p = pool.allocate(4096, 256, a).unwrap();
        pool.deallocate(p, 4096, 256, a).unwrap();
    }
    assert_eq!(records(), before, "a alone publishes nothing");
    pool.check_invariants().unwrap();
}
