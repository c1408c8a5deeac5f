//! Threads sharing one stream on one pool: blocks never overlap, the threads' blocks of the stream
//! serve each other without any wait, and a thread's leftover blocks are reachable from the others.

mod common;

use common::recording_order::{Asked, RecordingOrder};
use common::{seed, Rng};
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, MemoryResource};
use std::sync::{Arc, Mutex};

const MIB: usize = 1 << 20;

fn recorded_pool(initial: usize, max: Option<usize>) -> (PoolMemoryResource<HostMemoryResource>, RecordingOrder) {
    let order = RecordingOrder::default();
    // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
    let pool = unsafe {
        PoolMemoryResource::with_stream_order(HostMemoryResource::new(), initial, max, Box::new(order.clone()))
    }
    .unwrap();
    (pool, order)
}

/// A block of a stream left in a shard its stream no longer calls from is taken back by the
/// stream at once: no capture, no wait, no synchronisation of everything.
#[test]
fn a_streams_blocks_in_another_shard_serve_it_without_a_wait() {
    let (pool, order) = recorded_pool(2 * MIB, Some(2 * MIB));
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let s = unsafe { CudaStreamView::from_handle(0x1000) };
    let whole = pool.allocate(2 * MIB, 256, s).unwrap();
    pool.deallocate(whole, 2 * MIB, 256, s).unwrap();
    // Its free blocks stay behind in shard 0; its calls go elsewhere from now on.
    pool.spread_stream(s);
    let p = pool.allocate(MIB, 256, s).unwrap();
    assert_eq!(order.log(), vec![Asked::SyncAll], "only the initial chunk's synchronisation");
    pool.deallocate(p, MIB, 256, s).unwrap();
    pool.check_invariants().unwrap();
    assert_eq!(pool.state().free_bytes, 2 * MIB);
}

/// Writes `tag` into the first and last words of a block.
/// At the maximum, free memory split between two shards serves one request that needs both
/// parts, as RMM's free lists serve it once merged: stream `b` took the first MiB of the pool
/// into its own shard; `a` keeps the next MiB free next to a live block in shard 0. Both parts
/// are free, touch, and together hold the request; before, each shard kept its part and the
/// pool reported out-of-memory.
#[test]
fn free_memory_split_between_shards_serves_one_request_at_the_maximum() {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 4 * MIB, Some(4 * MIB)).unwrap();
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let (a, b) = (unsafe { CudaStreamView::from_handle(0x1000) }, unsafe { CudaStreamView::from_handle(0x2000) });
    pool.spread_stream(b);
    let pb = pool.allocate(MIB, 256, b).unwrap();
    let pa = pool.allocate(MIB, 256, a).unwrap();
    let live = pool.allocate(2 * MIB, 256, a).unwrap();
    assert_eq!((pa as usize - pb as usize, live as usize - pa as usize), (MIB, MIB), "the layout this test needs");
    pool.deallocate(pb, MIB, 256, b).unwrap();
    pool.deallocate(pa, MIB, 256, a).unwrap();
    let joined = pool.allocate(2 * MIB, 256, a).unwrap();
    assert_eq!(joined, pb);
    pool.deallocate(joined, 2 * MIB, 256, a).unwrap();
    pool.deallocate(live, 2 * MIB, 256, a).unwrap();
    // Everything free again: the whole pool serves one block.
    let all = pool.allocate(4 * MIB, 256, b).unwrap();
    pool.deallocate(all, 4 * MIB, 256, b).unwrap();
    pool.check_invariants().unwrap();
}

fn stamp(p: *mut u8, bytes: usize, tag: u64) {
    let words = bytes / 8;
    // SAFETY: the block has `bytes >= 8` bytes of host memory, 256-byte aligned, owned by the caller.
    unsafe {
        (p as *mut u64).write(tag);
        (p as *mut u64).add(words - 1).write(tag);
    }
}

/// Whether a block still holds `tag` where `stamp` put it.
fn stamped(p: *mut u8, bytes: usize, tag: u64) -> bool {
    let words = bytes / 8;
    // SAFETY: as in `stamp`; the block is still owned by the caller.
    unsafe { (p as *const u64).read() == tag && (p as *const u64).add(words - 1).read() == tag }
}

/// Eight threads on one stream, some blocks freed by another thread than the one that allocated
/// them: no block is handed out twice, no stream waits for another (there is only one), and
/// everything comes back.
#[test]
fn eight_threads_on_one_stream_never_overlap_and_never_wait() {
    let (pool, order) = recorded_pool(16 * MIB, None);
    let pool = Arc::new(pool);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let stream = unsafe { CudaStreamView::from_handle(0x7000) };
    let mailbox: Arc<Mutex<Vec<(usize, usize, u64)>>> = Arc::default();
    let base = seed("pool shared stream", 11);
    let handles: Vec<_> = (0..8u64)
        .map(|t| {
            let (pool, mailbox) = (pool.clone(), mailbox.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::new(base + t);
                let mut live: Vec<(*mut u8, usize, u64)> = Vec::new();
                for i in 0..60_000u64 {
                    let tag = (t << 56) | i;
                    if live.len() < 150 && (live.is_empty() || rng.below(2) == 0) {
                        let bytes = rng.log_uniform(8, 256 << 10).max(8);
                        let p = pool.allocate(bytes, 256, stream).unwrap();
                        stamp(p, bytes, tag);
                        live.push((p, bytes, tag));
                    } else {
                        let (p, bytes, tag) = live.swap_remove(rng.below(live.len()));
                        assert!(stamped(p, bytes, tag), "a block was handed out twice");
                        if rng.below(16) == 0 {
                            // Another thread of the stream frees it.
                            mailbox.lock().unwrap().push((p as usize, bytes, tag));
                        } else {
                            pool.deallocate(p, bytes, 256, stream).unwrap();
                        }
                    }
                    if i % 64 == 0 {
                        let theirs = mailbox.lock().unwrap().pop();
                        if let Some((p, bytes, tag)) = theirs {
                            assert!(stamped(p as *mut u8, bytes, tag), "a block was handed out twice");
                            pool.deallocate(p as *mut u8, bytes, 256, stream).unwrap();
                        }
                    }
                }
                for (p, bytes, tag) in live {
                    assert!(stamped(p, bytes, tag), "a block was handed out twice");
                    pool.deallocate(p, bytes, 256, stream).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    for (p, bytes, _) in mailbox.lock().unwrap().drain(..) {
        pool.deallocate(p as *mut u8, bytes, 256, stream).unwrap();
    }
    pool.check_invariants().unwrap();
    let state = pool.state();
    assert_eq!(state.free_bytes, state.pool_size);
    let log = order.log();
    assert!(!log.iter().any(|a| matches!(a, Asked::Wait(..))), "one stream never waits for itself: {log:?}");
    assert_eq!(log.iter().filter(|a| **a == Asked::SyncAll).count(), 1, "only the initial chunk's: {log:?}");
}
