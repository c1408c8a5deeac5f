//! `PoolMemoryResource::release`: the chunks whose blocks are all free go back to the upstream,
//! only after every stream's queued work is waited for; chunks holding a live block stay, and the
//! pool keeps working after. Host memory only (`tests/gpu_pool.rs` has the device case).

mod common;

use common::fake_streams;
use rmm::pool::{StreamIdentity, StreamKey, StreamOrder};
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, Error, MemoryResource, PoolState, Result};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

const S: CudaStreamView = CudaStreamView::DEFAULT;
const MIB: usize = 1 << 20;

/// Three chunks (1 MiB, 1 MiB, 3 MiB) from an empty pool without a maximum: the pool takes what
/// each request needs while it is small.
fn three_chunks(pool: &PoolMemoryResource<HostMemoryResource>) -> (*mut u8, *mut u8, *mut u8) {
    let a = pool.allocate(MIB, 256, S).unwrap();
    let b = pool.allocate(1000, 256, S).unwrap();
    let c = pool.allocate(3 * MIB, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 5 * MIB);
    assert_eq!(pool.upstream().outstanding(), (3, 5 * MIB));
    (a, b, c)
}

#[test]
fn wholly_free_chunks_go_back_and_a_chunk_with_a_live_block_stays() {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 0, None).unwrap();
    let (a, b, c) = three_chunks(&pool);
    pool.deallocate(a, MIB, 256, S).unwrap();
    pool.deallocate(c, 3 * MIB, 256, S).unwrap();
    assert_eq!(pool.release().unwrap(), 4 * MIB);
    assert_eq!(pool.pool_size(), MIB);
    assert_eq!(pool.upstream().outstanding(), (1, MIB), "the chunk of the live block stays");
    // 1000 bytes take 1024 of the chunk; the rest is free.
    let expected = PoolState { pool_size: MIB, free_bytes: MIB - 1024, largest_free_block: MIB - 1024 };
    assert_eq!(pool.state(), expected);
    pool.check_invariants().unwrap();
    // The live block is intact, and a second release has nothing to give.
    // SAFETY: `b` is a live block of 1000 bytes of host memory the pool carved out.
    unsafe { std::ptr::write_bytes(b, 7, 1000) };
    assert_eq!(pool.release().unwrap(), 0);
    assert_eq!(pool.upstream().outstanding(), (1, MIB));
    // The pool keeps working: it grows again, and gives everything back once all is free.
    let d = pool.allocate(2 * MIB, 256, S).unwrap();
    assert_eq!(pool.upstream().outstanding(), (2, 3 * MIB));
    pool.check_invariants().unwrap();
    pool.deallocate(b, 1000, 256, S).unwrap();
    pool.deallocate(d, 2 * MIB, 256, S).unwrap();
    assert_eq!(pool.release().unwrap(), 3 * MIB);
    assert_eq!((pool.pool_size(), pool.upstream().outstanding()), (0, (0, 0)));
    assert_eq!(pool.state(), PoolState { pool_size: 0, free_bytes: 0, largest_free_block: 0 });
    pool.check_invariants().unwrap();
    let e = pool.allocate(MIB, 256, S).unwrap();
    pool.deallocate(e, MIB, 256, S).unwrap();
}

#[test]
fn the_initial_chunk_goes_too_and_a_capped_pool_grows_by_rmms_rule_after() {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 2 * MIB, Some(8 * MIB)).unwrap();
    assert_eq!(pool.release().unwrap(), 2 * MIB, "never used: it goes at once");
    assert_eq!((pool.pool_size(), pool.upstream().outstanding()), (0, (0, 0)));
    // Empty and capped: half the maximum, as RMM grows.
    let a = pool.allocate(1000, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 4 * MIB);
    pool.check_invariants().unwrap();
    pool.deallocate(a, 1000, 256, S).unwrap();
    assert_eq!(pool.release().unwrap(), 4 * MIB);
}

#[test]
fn chunks_split_between_shards_go_back_once_every_piece_is_free() {
    // SAFETY: the upstream's memory is host memory that no device work touches: no order needed.
    let pool = unsafe {
        PoolMemoryResource::with_shards(HostMemoryResource::new(), 4 * MIB, None, Box::new(rmm::pool::HostOrder), 4)
    }
    .unwrap();
    let streams = fake_streams(3);
    streams.iter().for_each(|&s| pool.spread_stream(s));
    // One chunk of 4 MiB, taken in ranges by the streams' own shards.
    let blocks: Vec<_> = streams.iter().map(|&s| (pool.allocate(1 << 10, 256, s).unwrap(), s)).collect();
    assert_eq!(pool.upstream().outstanding(), (1, 4 * MIB));
    for &(p, s) in &blocks[1..] {
        pool.deallocate(p, 1 << 10, 256, s).unwrap();
    }
    assert_eq!(pool.release().unwrap(), 0, "a live block in one shard's piece keeps the chunk");
    assert_eq!(pool.upstream().outstanding(), (1, 4 * MIB));
    pool.check_invariants().unwrap();
    pool.deallocate(blocks[0].0, 1 << 10, 256, blocks[0].1).unwrap();
    assert_eq!(pool.release().unwrap(), 4 * MIB);
    assert_eq!((pool.pool_size(), pool.upstream().outstanding()), (0, (0, 0)));
    pool.check_invariants().unwrap();
    // Every shard keeps working.
    for &s in &streams {
        let p = pool.allocate(MIB, 256, s).unwrap();
        pool.deallocate(p, MIB, 256, s).unwrap();
    }
    pool.check_invariants().unwrap();
}

/// A stream order that counts full synchronisations, or fails them.
#[derive(Clone, Default)]
struct CountingOrder {
    syncs: Arc<AtomicUsize>,
    fail: bool,
}

impl StreamOrder for CountingOrder {
    fn record(&self, _owner: StreamKey, _identity: StreamIdentity) -> Result<()> {
        Ok(())
    }
    fn wait(&self, _owner: StreamKey, _identity: StreamIdentity, _waiter: StreamKey) -> Result<()> {
        Ok(())
    }
    fn synchronize_all(&self) -> Result<()> {
        if self.fail {
            return Err(Error::NoDriver("test".into()));
        }
        self.syncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Host memory that notes a chunk freed while no synchronisation ran since the last free of a
/// block on a stream (the test tells it when that was).
struct SyncCheckingHost {
    inner: HostMemoryResource,
    syncs: Arc<AtomicUsize>,
    syncs_at_last_free: AtomicUsize,
    freed_unsynchronised: AtomicBool,
}

// SAFETY: blocks come from a `HostMemoryResource` unchanged and go back to it; host memory, as
// the answer below says.
unsafe impl MemoryResource for SyncCheckingHost {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        self.inner.allocate(bytes, alignment, stream)
    }
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if self.syncs.load(Ordering::SeqCst) == self.syncs_at_last_free.load(Ordering::SeqCst) {
            self.freed_unsynchronised.store(true, Ordering::SeqCst);
        }
        self.inner.deallocate(ptr, bytes, alignment, stream)
    }
    fn is_device_accessible(&self) -> bool {
        false
    }
}

#[test]
fn blocks_freed_on_streams_go_back_only_after_every_stream_is_synchronised() {
    let order = CountingOrder::default();
    let upstream = SyncCheckingHost {
        inner: HostMemoryResource::new(),
        syncs: order.syncs.clone(),
        syncs_at_last_free: AtomicUsize::new(0),
        freed_unsynchronised: AtomicBool::new(false),
    };
    // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
    let pool = unsafe { PoolMemoryResource::with_stream_order(upstream, 0, None, Box::new(order.clone())) }.unwrap();
    let streams = fake_streams(2);
    let a = pool.allocate(2 * MIB, 256, streams[0]).unwrap();
    let b = pool.allocate(2 * MIB, 256, streams[1]).unwrap();
    // Freed on their streams: work queued there may still use them.
    pool.deallocate(a, 2 * MIB, 256, streams[0]).unwrap();
    pool.deallocate(b, 2 * MIB, 256, streams[1]).unwrap();
    pool.upstream().syncs_at_last_free.store(order.syncs.load(Ordering::SeqCst), Ordering::SeqCst);
    let released = pool.release().unwrap();
    assert_eq!((pool.pool_size(), pool.upstream().inner.outstanding()), (0, (0, 0)));
    assert_eq!(released, 4 * MIB);
    assert!(!pool.upstream().freed_unsynchronised.load(Ordering::SeqCst), "every stream was synchronised first");
    // Nothing wholly free: no synchronisation is made for nothing.
    let before = order.syncs.load(Ordering::SeqCst);
    let c = pool.allocate(MIB, 256, streams[0]).unwrap();
    assert_eq!(pool.release().unwrap(), 0);
    assert_eq!(order.syncs.load(Ordering::SeqCst), before);
    pool.deallocate(c, MIB, 256, streams[0]).unwrap();
    pool.check_invariants().unwrap();
}

#[test]
fn without_a_synchronisation_nothing_goes_back() {
    let order = CountingOrder { fail: true, ..CountingOrder::default() };
    // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
    let pool =
        unsafe { PoolMemoryResource::with_stream_order(HostMemoryResource::new(), 0, None, Box::new(order)) }.unwrap();
    let a = pool.allocate(MIB, 256, S).unwrap();
    pool.deallocate(a, MIB, 256, S).unwrap();
    // The free chunk may still be in use by queued work: it stays, and the pool still serves it.
    assert_eq!(pool.release().unwrap(), 0);
    assert_eq!((pool.pool_size(), pool.upstream().outstanding()), (MIB, (1, MIB)));
    pool.check_invariants().unwrap();
    let b = pool.allocate(MIB, 256, S).unwrap();
    assert_eq!(b, a, "the kept chunk serves its own stream again");
    pool.deallocate(b, MIB, 256, S).unwrap();
}

#[test]
fn a_release_racing_with_threads_that_allocate_never_frees_a_live_block() {
    let pool = Arc::new(PoolMemoryResource::new(HostMemoryResource::new(), 0, None).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let releaser = {
        let (pool, stop) = (pool.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut released = 0;
            while !stop.load(Ordering::Relaxed) {
                released += pool.release().unwrap();
            }
            released
        })
    };
    let workers: Vec<_> = fake_streams(3)
        .into_iter()
        .enumerate()
        .map(|(t, s)| {
            let pool = pool.clone();
            std::thread::spawn(move || {
                let mut live: Vec<(*mut u8, usize)> = Vec::new();
                for i in 0..3000usize {
                    let bytes = 256 + (i * 7919 + t * 104_729) % (512 << 10);
                    let p = pool.allocate(bytes, 256, s).unwrap();
                    // SAFETY: `p` is a live host block of `bytes` bytes; a chunk given back while
                    // it is live would make this a write to freed memory (valgrind sees it).
                    unsafe { std::ptr::write_bytes(p, t as u8, bytes) };
                    live.push((p, bytes));
                    if i % 2 == 1 || live.len() > 8 {
                        let (q, n) = live.swap_remove(i % live.len());
                        // SAFETY: `q` is live, written above with this thread's byte.
                        assert!(unsafe { std::slice::from_raw_parts(q, n) }.iter().all(|&x| x == t as u8));
                        pool.deallocate(q, n, 256, s).unwrap();
                    }
                }
                for (q, n) in live {
                    pool.deallocate(q, n, 256, s).unwrap();
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());
    stop.store(true, Ordering::Relaxed);
    releaser.join().unwrap();
    pool.check_invariants().unwrap();
    assert_eq!(pool.upstream().outstanding().1, pool.pool_size(), "the pool's size is what the upstream holds for it");
    pool.release().unwrap();
    assert_eq!((pool.pool_size(), pool.upstream().outstanding()), (0, (0, 0)));
}
