//! Out of memory and retry: a failure callback that frees an application's cache makes the retry
//! succeed, and when the cache is empty the out-of-memory error surfaces with the pool's numbers;
//! the statistics and the pool are exact throughout (host memory, so it runs everywhere).

use parking_lot::Mutex;
use rmm::adaptor::{Counter, FailureCallbackResourceAdaptor, StatisticsResourceAdaptor};
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
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
        Error::OutOfMemory {
            requested: 8 * MIB,
            pool: Some(PoolState { pool_size: 8 * MIB, free_bytes: 5 * MIB, largest_free_block: 5 * MIB }),
            reason: format!("maximum pool size {} reached", 8 * MIB),
        }
    );
    assert!(err.to_string().contains("cannot allocate 8388608 bytes"), "{err}");
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
