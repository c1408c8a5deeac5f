//! Out of memory and retry: a failure callback that frees an application's cache makes the retry
//! succeed, and when the cache is empty the out-of-memory error surfaces with the pool's numbers;
//! the statistics and the pool are exact throughout (host memory, so it runs everywhere).
//!
//! On a GPU (elsewhere they print `skipped: no CUDA device`): the driver's own out-of-memory, for
//! more bytes than the device has and for `usize::MAX`, from every CUDA resource and a pool over
//! one. These are the Rust tests that make a CUDA call fail on purpose
//! (`tests/gpu/failing_on_purpose.txt` lists them; sanitizer runs take them apart). A request for
//! the whole device can make the driver hold on to memory for a moment (a `cuda_async` pool whose
//! release threshold is the device's size keeps what it mapped), so the GPU tests take turns, and
//! no other test binary runs beside them (cargo runs one binary at a time).

mod common;

use common::{device_keeps_working, gpu};
use parking_lot::Mutex;
use rmm::adaptor::{Counter, FailureCallbackResourceAdaptor, StatisticsResourceAdaptor};
use rmm::resource::{
    CudaAsyncMemoryResource, CudaMemoryResource, HostMemoryResource, PinnedHostMemoryResource, PoolMemoryResource,
};
use rmm::{CudaStreamView, Error, MemoryResource, PoolState};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const MIB: usize = 1 << 20;
const S: CudaStreamView = CudaStreamView::DEFAULT;

type Stats = StatisticsResourceAdaptor<PoolMemoryResource<HostMemoryResource>>;

fn c(value: i64, peak: i64, total: i64) -> Counter {
    Counter { value, peak, total }
}

#[test]
fn failure_callback_frees_a_cache_and_the_retry_succeeds() {
    // An 8 MiB pool that cannot grow, counted by a statistics adaptor.
    let stats: Arc<Stats> = Arc::new(StatisticsResourceAdaptor::new(
        PoolMemoryResource::new(HostMemoryResource::new(), 8 * MIB, Some(8 * MIB)).unwrap(),
    ));
    // The application's cache: blocks it holds on to and can give up, oldest first. Addresses,
    // because raw pointers are not Send.
    let cache: Arc<Mutex<VecDeque<usize>>> = Arc::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let retrying = {
        let (stats, cache, calls) = (stats.clone(), cache.clone(), calls.clone());
        // Frees one cached block per call and asks for a retry; says no once the cache is empty.
        FailureCallbackResourceAdaptor::new(stats.clone(), move |_bytes| {
            calls.fetch_add(1, Ordering::SeqCst);
            match cache.lock().pop_front() {
                Some(addr) => stats.deallocate(addr as *mut u8, 2 * MIB, 256, S).is_ok(),
                None => false,
            }
        })
    };

    for _ in 0..4 {
        let p = retrying.allocate(2 * MIB, 256, S).unwrap();
        cache.lock().push_back(p as usize);
    }
    assert_eq!(stats.bytes_counter(), c(8 << 20, 8 << 20, 8 << 20));
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // 3 MiB: the first cached block alone is too small; freeing the second, its neighbour,
    // coalesces 4 MiB and the retry succeeds.
    let big = retrying.allocate(3 * MIB, 256, S).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(cache.lock().len(), 2);
    assert_eq!(stats.bytes_counter(), c(7 << 20, 8 << 20, 11 << 20));
    assert_eq!(stats.allocations_counter(), c(3, 4, 5));
    let pool = stats.upstream();
    assert_eq!(pool.state(), PoolState { pool_size: 8 * MIB, free_bytes: MIB, largest_free_block: MIB });
    pool.check_invariants().unwrap();

    // 8 MiB while 3 MiB stay handed out: the callback empties the cache, then says no, and the
    // out-of-memory error comes back with the pool's numbers.
    let err = retrying.allocate(8 * MIB, 256, S).unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    assert!(cache.lock().is_empty());
    assert_eq!(
        err,
        Error::out_of_memory_verbatim(
            8 * MIB,
            Some(PoolState { pool_size: 8 * MIB, free_bytes: 5 * MIB, largest_free_block: 5 * MIB }),
            "Maximum pool size exceeded (failed to allocate 8.000000 MiB): Not enough room to grow, \
             current/max/try size = 8.000000 MiB, 8.000000 MiB, 8.000000 MiB",
        )
    );
    // The failed request counted nothing; the frees the callback made did.
    assert_eq!(stats.bytes_counter(), c(3 << 20, 8 << 20, 11 << 20));
    assert_eq!(stats.allocations_counter(), c(1, 4, 5));
    pool.check_invariants().unwrap();

    // Still working: with everything back, the whole pool is one block again.
    retrying.deallocate(big, 3 * MIB, 256, S).unwrap();
    let all = retrying.allocate(8 * MIB, 256, S).unwrap();
    retrying.deallocate(all, 8 * MIB, 256, S).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    assert_eq!(stats.bytes_counter(), c(0, 8 << 20, 19 << 20));
    assert_eq!(stats.allocations_counter(), c(0, 4, 6));
    assert_eq!(pool.state(), PoolState { pool_size: 8 * MIB, free_bytes: 8 * MIB, largest_free_block: 8 * MIB });
    pool.check_invariants().unwrap();
}

// ---------------------------------------------------------------------------------------------
// The device's own out-of-memory (fails a CUDA call on purpose)
// ---------------------------------------------------------------------------------------------

/// The GPU tests of this file take the whole device in turn.
static DEVICE: Mutex<()> = Mutex::new(());

/// More than the device has: the driver's out-of-memory with the size asked for, from each CUDA
/// resource and from a pool over one (with the pool's numbers), and each keeps working.
#[test]
fn more_bytes_than_the_device_has_is_out_of_memory() {
    if !gpu() {
        return;
    }
    let _whole_device = DEVICE.lock();
    let (_, total) = rmm::available_device_memory().unwrap();
    let bytes = total + 256;
    let async_mr = CudaAsyncMemoryResource::new(None, None).unwrap();
    let cuda_reason = "cuMemAlloc returned CUDA_ERROR_OUT_OF_MEMORY".to_string();
    let async_reason = "cuMemAllocFromPoolAsync returned CUDA_ERROR_OUT_OF_MEMORY".to_string();
    let resources: [(&dyn MemoryResource, String); 2] =
        [(&CudaMemoryResource::new(), cuda_reason), (&async_mr, async_reason)];
    for (r, reason) in resources {
        let (free_before, _) = rmm::available_device_memory().unwrap();
        assert_eq!(r.allocate(bytes, 256, S), Err(Error::out_of_memory(bytes, reason)));
        // What the failed request left taken (the driver may keep what it mapped for a pool).
        let (free_after, _) = rmm::available_device_memory().unwrap();
        println!("free device memory before and after the failed request: {free_before} -> {free_after}");
        device_keeps_working(r);
    }
    let pool = PoolMemoryResource::new(CudaMemoryResource::new(), 16 * MIB, None).unwrap();
    // RMM's words: the pool could not grow, and why.
    let err = pool.allocate(bytes, 256, S).unwrap_err();
    let state = PoolState { pool_size: 16 * MIB, free_bytes: 16 * MIB, largest_free_block: 16 * MIB };
    assert!(
        matches!(&err, Error::OutOfMemory { requested, pool: Some(p), verbatim: true, .. } if *requested == bytes && *p == state),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("Maximum pool size exceeded (failed to allocate "), "{err}");
    device_keeps_working(&pool);
    pool.check_invariants().unwrap();
}

/// `usize::MAX` bytes reach the driver, which refuses them: out-of-memory naming the call. Not for
/// managed memory: asking for more managed memory than the device has can hang the GPU.
#[test]
fn usize_max_bytes_is_the_drivers_out_of_memory() {
    if !gpu() {
        return;
    }
    let _whole_device = DEVICE.lock();
    let async_mr = CudaAsyncMemoryResource::new(None, None).unwrap();
    let resources: [(&dyn MemoryResource, &str); 3] = [
        (&CudaMemoryResource::new(), "cuMemAlloc"),
        (&PinnedHostMemoryResource::new(), "cuMemHostAlloc"),
        (&async_mr, "cuMemAllocFromPoolAsync"),
    ];
    for (r, call) in resources {
        assert_eq!(
            r.allocate(usize::MAX, 256, S),
            Err(Error::out_of_memory(usize::MAX, format!("{call} returned CUDA_ERROR_OUT_OF_MEMORY")))
        );
        device_keeps_working(r);
    }
}

/// A pool with no maximum over device memory: a request larger than the device is the upstream's
/// out-of-memory, and the pool keeps working.
#[test]
fn a_pool_asked_for_more_than_the_device_has_keeps_working() {
    if !gpu() {
        return;
    }
    let _whole_device = DEVICE.lock();
    let huge = 1usize << 50;
    let pool = PoolMemoryResource::new(CudaMemoryResource::new(), 0, None).unwrap();
    match pool.allocate(huge, 256, S) {
        Err(Error::OutOfMemory { requested, .. }) => assert_eq!(requested, huge),
        other => panic!("expected OutOfMemory for {huge} bytes, got {other:?}"),
    }
    device_keeps_working(&pool);
    pool.check_invariants().unwrap();
}
