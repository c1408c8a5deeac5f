//! The pool on device memory (run on a GPU; elsewhere each test prints `skipped: no CUDA device`):
//! the model checks of `tests/pool.rs` on real streams, data written on the device, threads, and
//! the cross-stream hand-over waiting for the owner stream's work, and `release` waiting for the
//! work queued on the blocks it gives back.

mod common;

use common::device_bytes::{fill_async, read};
use common::{gpu, run_trace, seed, Model, Rng, Trace};
use rmm::adaptor::StatisticsResourceAdaptor;
use rmm::resource::{CudaMemoryResource, PoolMemoryResource};
use rmm::{CudaStream, CudaStreamView, Error, MemoryResource};
use std::sync::{Arc, Mutex};

const MIB: usize = 1 << 20;

fn pattern_of(ptr: *mut u8) -> u8 {
    ((ptr as usize >> 8) as u8) | 1
}

#[test]
fn device_pool_random_trace_on_four_streams_with_data_checks() {
    if !gpu() {
        return;
    }
    let streams: Vec<CudaStream> = (0..4).map(|_| CudaStream::new().unwrap()).collect();
    let pool = PoolMemoryResource::new(Arc::new(CudaMemoryResource::new()), 256 * MIB, None).unwrap();
    let mut rng = Rng::new(seed("device pool trace", 11));
    let t = Trace {
        ops: 200_000,
        max_size: MIB,
        streams: streams.iter().map(|s| s.view()).collect(),
        big_alignments: true,
        ..Trace::default()
    };
    let mut step = 0;
    run_trace(&pool, &t, &mut rng, false, |_m: &Model| {
        step += 1;
        if step % 20_000 == 0 {
            pool.check_invariants().unwrap();
        }
    });
    // Data: every block written on its stream with its own pattern reads back intact.
    let mut live = Vec::new();
    for i in 0..2000 {
        let s = streams[i % 4].view();
        let bytes = rng.log_uniform(256, 256 << 10);
        let p = pool.allocate(bytes, 256, s).unwrap();
        fill_async(p, bytes, pattern_of(p), s);
        live.push((p, bytes, s));
        if i % 3 == 0 {
            let (q, n, qs) = live.swap_remove(rng.below(live.len()));
            pool.deallocate(q, n, 256, qs).unwrap();
        }
    }
    for s in &streams {
        s.synchronize().unwrap();
    }
    for &(p, bytes, s) in &live {
        assert!(read(p, bytes).iter().all(|&b| b == pattern_of(p)), "block {p:p} was overwritten");
        pool.deallocate(p, bytes, 256, s).unwrap();
    }
    pool.check_invariants().unwrap();
    let st = pool.state();
    assert_eq!(st.free_bytes, st.pool_size);
}

#[test]
fn block_taken_by_another_stream_waits_for_the_owner_streams_work() {
    if !gpu() {
        return;
    }
    let (a, b) = (CudaStream::new().unwrap(), CudaStream::new().unwrap());
    let size = 64 * MIB;
    // One chunk only, so b can only get the memory a frees.
    let pool = PoolMemoryResource::new(CudaMemoryResource::new(), size, Some(size)).unwrap();
    for round in 0..5 {
        let p = pool.allocate(size, 256, a.view()).unwrap();
        // Keep stream a busy, then free: the free is enqueued behind all of it.
        for _ in 0..200 {
            fill_async(p, size, 0xAA, a.view());
        }
        pool.deallocate(p, size, 256, a.view()).unwrap();
        let q = pool.allocate(size, 256, b.view()).unwrap();
        assert_eq!(p, q, "round {round}: b must reuse a's block");
        fill_async(q, size, 0xBB, b.view());
        b.synchronize().unwrap();
        let back = read(q, size);
        assert!(back.iter().all(|&x| x == 0xBB), "round {round}: a's pending writes landed after b's");
        pool.deallocate(q, size, 256, b.view()).unwrap();
        a.synchronize().unwrap();
    }
}

#[test]
fn eight_threads_share_a_device_pool() {
    if !gpu() {
        return;
    }
    let pool = Arc::new(PoolMemoryResource::new(CudaMemoryResource::new(), 512 * MIB, None).unwrap());
    let model = Arc::new(Mutex::new(Model::default()));
    let base = seed("device pool threads", 12);
    std::thread::scope(|sc| {
        for t in 0..8u64 {
            let (pool, model) = (pool.clone(), model.clone());
            sc.spawn(move || {
                let stream = CudaStream::new().unwrap();
                let s = stream.view();
                let mut rng = Rng::new(base + t);
                let mut live = Vec::new();
                for _ in 0..50_000 {
                    if live.len() < 100 && (live.is_empty() || rng.below(2) == 0) {
                        let n = rng.log_uniform(1, MIB);
                        let p = pool.allocate(n, 256, s).unwrap();
                        model.lock().unwrap().insert(p, n, 256);
                        live.push((p, n));
                    } else {
                        let (p, n) = live.swap_remove(rng.below(live.len()));
                        model.lock().unwrap().remove(p);
                        pool.deallocate(p, n, 256, s).unwrap();
                    }
                }
                for (p, n) in live {
                    model.lock().unwrap().remove(p);
                    pool.deallocate(p, n, 256, s).unwrap();
                }
                stream.synchronize().unwrap();
            });
        }
    });
    pool.check_invariants().unwrap();
    let st = pool.state();
    assert_eq!(st.free_bytes, st.pool_size);
}

#[test]
fn statistics_over_a_device_pool_are_exact() {
    if !gpu() {
        return;
    }
    let stats =
        StatisticsResourceAdaptor::new(PoolMemoryResource::new(CudaMemoryResource::new(), 64 * MIB, None).unwrap());
    let mut rng = Rng::new(seed("device pool statistics", 13));
    let t = Trace { ops: 100_000, max_size: 256 << 10, ..Trace::default() };
    run_trace(&stats, &t, &mut rng, false, |m| {
        assert_eq!(stats.bytes_counter().value as usize, m.live_bytes);
        assert_eq!(stats.allocations_counter().value as usize, m.len());
    });
}

#[test]
fn device_pool_at_its_maximum_reports_state_and_keeps_working() {
    if !gpu() {
        return;
    }
    let pool = PoolMemoryResource::new(CudaMemoryResource::new(), 0, Some(64 * MIB)).unwrap();
    let s = CudaStreamView::DEFAULT;
    let p = pool.allocate(48 * MIB, 256, s).unwrap();
    match pool.allocate(32 * MIB, 256, s).unwrap_err() {
        Error::OutOfMemory { requested, pool: Some(st), .. } => {
            assert_eq!(requested, 32 * MIB);
            assert_eq!((st.pool_size, st.free_bytes), (48 * MIB, 0), "{st:?}");
        }
        e => panic!("expected out of memory, got {e}"),
    }
    let q = pool.allocate(MIB, 256, s).unwrap();
    pool.deallocate(q, MIB, 256, s).unwrap();
    pool.deallocate(p, 48 * MIB, 256, s).unwrap();
    // Larger than the device (the driver's own out-of-memory): tests/out_of_memory.rs.
}

#[test]
fn blocks_freed_on_destroyed_streams_are_reused_safely() {
    if !gpu() {
        return;
    }
    let pool = PoolMemoryResource::new(CudaMemoryResource::new(), 16 * MIB, Some(16 * MIB)).unwrap();
    for round in 0..20 {
        // A short-lived stream frees blocks into the pool and is destroyed.
        let mut freed = Vec::new();
        {
            let temp = CudaStream::new().unwrap();
            for _ in 0..4 {
                let p = pool.allocate(4 * MIB, 256, temp.view()).unwrap();
                fill_async(p, 4 * MIB, 0x5A, temp.view());
                pool.deallocate(p, 4 * MIB, 256, temp.view()).unwrap();
                freed.push(p);
            }
        }
        // Another stream needs all of it: the pool must get it back without touching the dead handle.
        let s = CudaStream::new().unwrap();
        let q = pool.allocate(16 * MIB, 256, s.view()).unwrap();
        fill_async(q, 16 * MIB, 0xC3, s.view());
        s.synchronize().unwrap();
        assert!(read(q, 16 * MIB).iter().all(|&x| x == 0xC3), "round {round}");
        pool.deallocate(q, 16 * MIB, 256, s.view()).unwrap();
    }
    pool.check_invariants().unwrap();
}

#[test]
fn release_waits_for_work_queued_on_freed_blocks_and_keeps_live_chunks() {
    if !gpu() {
        return;
    }
    let size = 64 * MIB;
    // Counted at the upstream: exactly what the pool holds of the device.
    let pool = PoolMemoryResource::new(StatisticsResourceAdaptor::new(CudaMemoryResource::new()), 0, None).unwrap();
    let (a, b) = (CudaStream::new().unwrap(), CudaStream::new().unwrap());
    let busy = pool.allocate(size, 256, a.view()).unwrap();
    let kept = pool.allocate(size, 256, b.view()).unwrap();
    let upstream_bytes = || pool.upstream().bytes_counter().value as usize;
    assert_eq!(upstream_bytes(), pool.pool_size());
    let before = pool.pool_size();
    // Stream a is kept busy writing its block, then frees it: the free is queued behind the work.
    for _ in 0..200 {
        fill_async(busy, size, 0xAA, a.view());
    }
    pool.deallocate(busy, size, 256, a.view()).unwrap();
    fill_async(kept, size, 0x3C, b.view());
    let released = pool.release().unwrap();
    // SAFETY: `a` is a live stream; the query only reads its state.
    let done = unsafe { cudarc::driver::sys::cuStreamQuery(a.view().as_raw()) };
    assert_eq!(done, cudarc::driver::sys::CUresult::CUDA_SUCCESS, "the chunk went back before a's work ended");
    assert!(released >= size, "busy's chunk went back ({released} bytes)");
    assert_eq!(pool.pool_size(), before - released);
    assert_eq!(upstream_bytes(), pool.pool_size(), "the upstream got back exactly what the pool says");
    // The live block's chunk stays, with its data.
    assert!(pool.pool_size() >= size);
    b.synchronize().unwrap();
    assert!(read(kept, size).iter().all(|&x| x == 0x3C));
    pool.check_invariants().unwrap();
    // The pool keeps working, and gives everything back once all is free.
    let again = pool.allocate(size, 256, a.view()).unwrap();
    fill_async(again, size, 0x11, a.view());
    a.synchronize().unwrap();
    assert!(read(again, size).iter().all(|&x| x == 0x11));
    pool.deallocate(again, size, 256, a.view()).unwrap();
    pool.deallocate(kept, size, 256, b.view()).unwrap();
    pool.release().unwrap();
    assert_eq!((pool.pool_size(), upstream_bytes()), (0, 0));
}
