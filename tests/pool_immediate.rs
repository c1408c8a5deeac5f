//! The pool's calls that never wait (`try_allocate_immediately`, `try_deallocate_immediately`,
//! and `allocate_from_cache`, which the C++ bridge tries first): what they serve, what they leave
//! to the full calls, that they never ask the stream order for anything, and that a caller mixing
//! them with the full calls keeps the pool consistent.

mod common;

use common::{run_trace, seed, Rng, Trace};
use rmm::pool::{StreamIdentity, StreamKey, StreamOrder, CACHED_BYTES_MAX};
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, MemoryResource, Result, SharedResource};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const MIB: usize = 1 << 20;

/// Counts what the pool asks of its stream order.
#[derive(Default, Clone)]
struct CountingOrder(Arc<Mutex<usize>>);

impl CountingOrder {
    fn calls(&self) -> usize {
        *self.0.lock().unwrap()
    }
    fn count(&self) -> Result<()> {
        *self.0.lock().unwrap() += 1;
        Ok(())
    }
}

impl StreamOrder for CountingOrder {
    fn record(&self, _owner: StreamKey, _identity: StreamIdentity) -> Result<()> {
        self.count()
    }
    fn wait(&self, _owner: StreamKey, _identity: StreamIdentity, _waiter: StreamKey) -> Result<()> {
        self.count()
    }
    fn synchronize_all(&self) -> Result<()> {
        self.count()
    }
}

fn ordered_pool(initial: usize) -> (PoolMemoryResource<HostMemoryResource>, CountingOrder) {
    let order = CountingOrder::default();
    // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
    let pool = unsafe {
        PoolMemoryResource::with_stream_order(HostMemoryResource::new(), initial, None, Box::new(order.clone()))
    }
    .unwrap();
    (pool, order)
}

#[test]
fn a_block_freed_on_its_stream_comes_back_immediately() {
    let (pool, order) = ordered_pool(MIB);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let a = unsafe { CudaStreamView::from_handle(0x1000) };
    // Fresh memory is not the stream's own yet: that takes the full call.
    assert_eq!(pool.try_allocate_immediately(1000, 256, a), None);
    let p = pool.allocate(1000, 256, a).unwrap();
    assert!(pool.try_deallocate_immediately(p, 1000, 256, a));
    let calls = order.calls();
    let q = pool.try_allocate_immediately(1000, 256, a).expect("the stream's own free block");
    assert_eq!(p, q);
    assert!(pool.try_deallocate_immediately(q, 1000, 256, a));
    assert_eq!(order.calls(), calls, "the immediate calls asked the stream order for something");
    pool.check_invariants().unwrap();
    let s = pool.state();
    assert_eq!(s.free_bytes, s.pool_size);
}

#[test]
fn bad_and_empty_requests_are_left_to_the_full_calls() {
    let (pool, _) = ordered_pool(MIB);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let a = unsafe { CudaStreamView::from_handle(0x1000) };
    let p = pool.allocate(4096, 256, a).unwrap();
    pool.deallocate(p, 4096, 256, a).unwrap();
    assert_eq!(pool.try_allocate_immediately(0, 256, a), None);
    assert_eq!(pool.try_allocate_immediately(100, 3, a), None, "bad alignment");
    assert_eq!(pool.try_allocate_immediately(usize::MAX, 256, a), None);
    assert!(!pool.try_deallocate_immediately(std::ptr::null_mut(), 0, 256, a));
    let p = pool.allocate(4096, 256, a).unwrap();
    // A wrong size or an unknown pointer changes nothing; the full call then reports it.
    assert!(!pool.try_deallocate_immediately(p, 4000, 256, a));
    assert!(!pool.try_deallocate_immediately(p.wrapping_add(256), 4096, 256, a));
    assert!(pool.deallocate(p, 4000, 256, a).is_err());
    pool.check_invariants().unwrap();
    assert!(pool.try_deallocate_immediately(p, 4096, 256, a));
    assert!(!pool.try_deallocate_immediately(p, 4096, 256, a), "a double free is not freed again");
    assert!(pool.deallocate(p, 4096, 256, a).is_err());
    pool.check_invariants().unwrap();
}

#[test]
fn frees_that_must_publish_take_the_full_call() {
    // Two streams taking turns on one shard publish on every free (an event on a GPU): the
    // immediate free declines, and the full free publishes.
    let (pool, order) = ordered_pool(4 * MIB);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let (a, b) = (unsafe { CudaStreamView::from_handle(0x1000) }, unsafe { CudaStreamView::from_handle(0x2000) });
    let x = pool.allocate(1000, 256, a).unwrap();
    let y = pool.allocate(1000, 256, b).unwrap();
    assert!(!pool.try_deallocate_immediately(x, 1000, 256, a));
    let before = order.calls();
    pool.deallocate(x, 1000, 256, a).unwrap();
    assert!(order.calls() > before, "the full free published");
    pool.deallocate(y, 1000, 256, b).unwrap();
    pool.check_invariants().unwrap();
}

#[test]
fn a_busy_shard_is_never_waited_for() {
    let pool = Arc::new(PoolMemoryResource::new(HostMemoryResource::new(), 4 * MIB, None).unwrap());
    let s = CudaStreamView::DEFAULT;
    let p = pool.allocate(512, 256, s).unwrap();
    pool.deallocate(p, 512, 256, s).unwrap();
    // Another thread hammers the same stream's shard; every immediate call either succeeds at
    // once or declines, and the block count stays right.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let other = {
        let (pool, stop) = (pool.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let q = pool.allocate(256, 256, s).unwrap();
                pool.deallocate(q, 256, 256, s).unwrap();
            }
        })
    };
    let (mut hits, mut declined) = (0usize, 0usize);
    for _ in 0..100_000 {
        let q = match pool.try_allocate_immediately(512, 256, s) {
            Some(q) => {
                hits += 1;
                q
            }
            None => {
                declined += 1;
                pool.allocate(512, 256, s).unwrap()
            }
        };
        if !pool.try_deallocate_immediately(q, 512, 256, s) {
            pool.deallocate(q, 512, 256, s).unwrap();
        }
    }
    stop.store(true, Ordering::Relaxed);
    other.join().unwrap();
    println!("immediate: {hits} served, {declined} declined");
    assert!(hits > 0);
    pool.check_invariants().unwrap();
    let st = pool.state();
    assert_eq!(st.free_bytes, st.pool_size);
}

/// Tries the immediate call first and falls back to the full one, as the Python hooks do; counts
/// how often the immediate call served.
struct ImmediateFirst {
    inner: SharedResource,
    served: AtomicUsize,
}

// SAFETY: blocks come from `inner` unchanged, by either of its calls, and go back to it. It
// keeps the default answers (device memory), which are wrong for the host pool inside: the
// tests only allocate and free through it, never build a buffer over it.
unsafe impl MemoryResource for ImmediateFirst {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        if let Some(p) = self.inner.try_allocate_immediately(bytes, alignment, stream) {
            self.served.fetch_add(1, Ordering::Relaxed);
            return Ok(p);
        }
        self.inner.allocate(bytes, alignment, stream)
    }
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if self.inner.try_deallocate_immediately(ptr, bytes, alignment, stream) {
            self.served.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        self.inner.deallocate(ptr, bytes, alignment, stream)
    }
}

#[test]
fn random_traces_mixing_both_calls_match_the_model() {
    let mut rng = Rng::new(seed("random_traces_mixing_both_calls_match_the_model", 0x1a2b));
    for streams in [1, 3] {
        let pool = Arc::new(ordered_pool(0).0);
        let shared: SharedResource = pool.clone();
        let first = ImmediateFirst { inner: shared, served: AtomicUsize::new(0) };
        let trace = Trace {
            ops: 50_000,
            max_live: 200,
            max_size: 64 << 10,
            // SAFETY: a stream name for resources over host memory: no driver call sees it.
            streams: (1..=streams).map(|i| unsafe { CudaStreamView::from_handle(0x1000 * i) }).collect(),
            ..Trace::default()
        };
        run_trace(&first, &trace, &mut rng, false, |_| {});
        let served = first.served.load(Ordering::Relaxed);
        println!("{streams} stream(s): {served} of {} calls served immediately", 2 * 50_000);
        assert!(served > 0, "the immediate path never served");
        pool.check_invariants().unwrap();
        let s = pool.state();
        assert_eq!(s.free_bytes, s.pool_size, "memory left allocated");
    }
}

#[test]
fn resources_without_an_immediate_path_decline() {
    let host = HostMemoryResource::new();
    let s = CudaStreamView::DEFAULT;
    assert_eq!(host.try_allocate_immediately(256, 256, s), None);
    let p = host.allocate(256, 256, s).unwrap();
    assert!(!host.try_deallocate_immediately(p, 256, 256, s));
    host.deallocate(p, 256, 256, s).unwrap();
}

#[test]
fn the_cache_path_hands_out_what_the_whole_call_would() {
    // Two pools, one driven by whole calls only, the other trying the cache's path first: the
    // same trace of small blocks on one stream gets the same blocks, and the same state.
    let (whole, whole_order) = ordered_pool(MIB);
    let (cached, order) = ordered_pool(MIB);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let a = unsafe { CudaStreamView::from_handle(0x1000) };
    let mut rng = Rng::new(seed("the_cache_path_hands_out_what_the_whole_call_would", 0x5eed));
    let (mut live_w, mut live_c) = (Vec::new(), Vec::new());
    let mut served = 0;
    for _ in 0..20_000 {
        if live_w.is_empty() || (live_w.len() < 64 && rng.below(2) == 0) {
            let bytes = 1 + rng.below(CACHED_BYTES_MAX);
            let p = whole.allocate(bytes, 256, a).unwrap();
            let q = match cached.allocate_from_cache(bytes, 256, a) {
                Some(q) => {
                    served += 1;
                    q
                }
                None => cached.allocate(bytes, 256, a).unwrap(),
            };
            assert_eq!(p as usize - whole_base(&whole), q as usize - whole_base(&cached));
            live_w.push((p, bytes));
            live_c.push((q, bytes));
        } else {
            let i = rng.below(live_w.len());
            let ((p, n), (q, _)) = (live_w.swap_remove(i), live_c.swap_remove(i));
            whole.deallocate(p, n, 256, a).unwrap();
            cached.deallocate(q, n, 256, a).unwrap();
        }
    }
    assert!(served > 1000, "the cache's path served {served}");
    assert_eq!(order.calls(), whole_order.calls(), "the same asked of the stream order");
    assert_eq!(whole.state(), cached.state());
    cached.check_invariants().unwrap();
    for ((p, n), (q, _)) in live_w.into_iter().zip(live_c) {
        whole.deallocate(p, n, 256, a).unwrap();
        cached.deallocate(q, n, 256, a).unwrap();
    }
    cached.check_invariants().unwrap();
    assert_eq!(cached.state().free_bytes, cached.pool_size());
}

/// The start of the pool's one chunk: blocks of two pools compare by their offsets in it.
fn whole_base(pool: &PoolMemoryResource<HostMemoryResource>) -> usize {
    pool.memory_segments().unwrap()[0].address
}

#[test]
fn the_cache_path_declines_what_only_the_whole_call_serves() {
    let (pool, _) = ordered_pool(MIB);
    // SAFETY: stream names for resources over host memory: no driver call sees them.
    let (a, b) = (unsafe { CudaStreamView::from_handle(0x1000) }, unsafe { CudaStreamView::from_handle(0x2000) });
    assert_eq!(pool.allocate_from_cache(1000, 256, a), None, "a stream new to the pool");
    let p = pool.allocate(1000, 256, a).unwrap();
    pool.deallocate(p, 1000, 256, a).unwrap();
    let before = pool.state();
    let declined = [
        (0, 256, a, "0 bytes"),
        (CACHED_BYTES_MAX + 1, 256, a, "a size no cache holds"),
        (1000, 512, a, "an alignment above the granule"),
        (1000, 3, a, "a bad alignment"),
        (2000, 256, a, "a size the cache holds none of"),
        (1000, 256, CudaStreamView::PER_THREAD, "the per-thread default stream"),
    ];
    for (bytes, alignment, stream, why) in declined {
        assert_eq!(pool.allocate_from_cache(bytes, alignment, stream), None, "{why}");
        assert_eq!(pool.state(), before, "{why}");
    }
    // Another stream's call in between: the set is no longer the shard's last.
    let q = pool.allocate(4096, 256, b).unwrap();
    assert_eq!(pool.allocate_from_cache(1000, 256, a), None, "not the shard's last stream");
    pool.deallocate(q, 4096, 256, b).unwrap();
    assert_eq!(pool.allocate(1000, 256, a).unwrap(), p, "the whole call finds the cached block");
    pool.deallocate(p, 1000, 256, a).unwrap();
    // While the two streams take turns, frees publish rather than cache: nothing to serve.
    assert_eq!(pool.allocate_from_cache(1000, 256, a), None, "frees did not cache");
    // Once any stream is spread off shard 0, the whole call finds each stream's shard.
    pool.spread_stream(b);
    assert_eq!(pool.allocate_from_cache(1000, 256, a), None, "a stream was spread");
    pool.check_invariants().unwrap();
}
