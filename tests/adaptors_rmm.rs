//! RMM's behaviour of the adaptors on host memory: the aligned and callback rules, zero-byte
//! requests, counters under eight threads, constructor validation.

mod common;

use rmm::adaptor::{
    AlignedResourceAdaptor, LimitingResourceAdaptor, StatisticsResourceAdaptor, ThreadSafeResourceAdaptor,
    TrackingResourceAdaptor,
};
use rmm::resource::CallbackMemoryResource;
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, Error, MemoryResource};
use std::sync::{Arc, Barrier};

const S: CudaStreamView = CudaStreamView::DEFAULT;

#[test]
fn aligned_adaptor_aligns_at_or_above_the_threshold_and_frees_the_upstream_pointer() {
    let pool = Arc::new(common::host_pool());
    let mr = AlignedResourceAdaptor::new(pool.clone(), 1 << 16, 4096).unwrap();
    let mut live = Vec::new();
    for i in 0..16 {
        let bytes = 4096 + i * 100;
        let big = mr.allocate(bytes, 256, S).unwrap();
        assert_eq!(big as usize % (1 << 16), 0, "{bytes} bytes at {big:p}");
        let small = mr.allocate(100, 256, S).unwrap();
        live.push((big, bytes));
        live.push((small, 100));
    }
    for (p, bytes) in live {
        mr.deallocate(p, bytes, 256, S).unwrap();
    }
    // Every upstream block went back (a wrong pointer or size would be refused by the pool).
    let fresh = pool.allocate(1 << 20, 256, S).unwrap();
    pool.deallocate(fresh, 1 << 20, 256, S).unwrap();
}

#[test]
fn aligned_adaptor_refuses_an_alignment_that_is_no_power_of_two() {
    for bad in [0, 3, 1000] {
        let e = AlignedResourceAdaptor::new(HostMemoryResource::new(), bad, 0).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{bad}: {e}");
    }
    assert_eq!(AlignedResourceAdaptor::<HostMemoryResource>::DEFAULT_ALIGNMENT_THRESHOLD, 0);
}

#[test]
fn aligned_adaptor_honours_a_larger_requested_alignment() {
    let mr = AlignedResourceAdaptor::new(common::host_pool(), 4096, 0).unwrap();
    let p = mr.allocate(10, 1 << 20, S).unwrap();
    assert_eq!(p as usize % (1 << 20), 0);
    mr.deallocate(p, 10, 1 << 20, S).unwrap();
}

#[test]
fn callback_resource_turns_null_into_out_of_memory_and_passes_zero_bytes_on() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let frees = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (c, f) = (calls.clone(), frees.clone());
    // SAFETY: the allocate function only ever fails (null), so no memory is handed out.
    let mr = unsafe {
        CallbackMemoryResource::new(
            move |_, _, _| {
                c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(std::ptr::null_mut())
            },
            move |p, n, _, _| {
                f.lock().unwrap().push((p as usize, n));
                Ok(())
            },
        )
    };
    // As in RMM, 0 bytes and null frees reach the functions, and null for 0 bytes is no error.
    assert!(mr.allocate(0, 256, S).unwrap().is_null());
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 1);
    mr.deallocate(std::ptr::null_mut(), 0, 256, S).unwrap();
    mr.deallocate(std::ptr::null_mut(), 7, 256, S).unwrap();
    assert_eq!(*frees.lock().unwrap(), [(0, 0), (0, 7)]);
    assert!(mr.allocate(64, 256, S).unwrap_err().is_out_of_memory());
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 2);
}

#[test]
fn zero_byte_requests_count_as_in_rmm() {
    let stats = StatisticsResourceAdaptor::new(common::host_pool());
    let tracking = TrackingResourceAdaptor::new(common::host_pool(), true);
    let limiting = LimitingResourceAdaptor::new(common::host_pool(), 1 << 20);
    let aligned = AlignedResourceAdaptor::new(common::host_pool(), 4096, 0).unwrap();
    let safe = ThreadSafeResourceAdaptor::new(common::host_pool());
    let all: [&dyn MemoryResource; 5] = [&stats, &tracking, &limiting, &aligned, &safe];
    for r in all {
        assert!(r.allocate(0, 256, S).unwrap().is_null());
        r.deallocate(std::ptr::null_mut(), 0, 256, S).unwrap();
    }
    // Statistics counts each as an allocation of 0 bytes, as RMM does; the others count nothing.
    assert_eq!((stats.bytes_counter().total, stats.allocations_counter().total), (0, 1));
    assert_eq!(stats.allocations_counter().value, 0);
    assert_eq!((tracking.allocated_bytes(), tracking.allocation_count()), (0, 0));
    assert_eq!(limiting.allocated_bytes(), 0);
}

/// Eight threads allocate and free interleaved; each keeps every other block. Returns the blocks
/// kept, with their sizes.
fn eight_threads(r: &(dyn MemoryResource + Sync)) -> Vec<(usize, usize)> {
    let barrier = Barrier::new(8);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    let mut kept = Vec::new();
                    for i in 0..500usize {
                        let bytes = 1 + (t * 7919 + i * 104_729) % 5000;
                        let p = r.allocate(bytes, 256, S).unwrap();
                        if i % 2 == 0 {
                            kept.push((p as usize, bytes));
                        } else {
                            r.deallocate(p, bytes, 256, S).unwrap();
                        }
                    }
                    kept
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

fn free_all(r: &dyn MemoryResource, kept: &[(usize, usize)]) {
    for &(p, bytes) in kept {
        r.deallocate(p as *mut u8, bytes, 256, S).unwrap();
    }
}

#[test]
fn statistics_counters_are_exact_under_eight_threads() {
    let mr = StatisticsResourceAdaptor::new(common::host_pool());
    let kept = eight_threads(&mr);
    let bytes: usize = kept.iter().map(|k| k.1).sum();
    assert_eq!(mr.bytes_counter().value, bytes as i64);
    assert_eq!(mr.allocations_counter().value, kept.len() as i64);
    assert_eq!(mr.allocations_counter().total, 8 * 500);
    free_all(&mr, &kept);
    assert_eq!((mr.bytes_counter().value, mr.allocations_counter().value), (0, 0));
}

#[test]
fn tracking_counters_are_exact_under_eight_threads() {
    let mr = TrackingResourceAdaptor::new(common::host_pool(), false);
    let kept = eight_threads(&mr);
    assert_eq!(mr.allocated_bytes(), kept.iter().map(|k| k.1).sum::<usize>());
    assert_eq!(mr.allocation_count(), kept.len());
    free_all(&mr, &kept);
    assert_eq!((mr.allocated_bytes(), mr.allocation_count()), (0, 0));
}

#[test]
fn limiting_count_is_exact_under_eight_threads() {
    let mr = LimitingResourceAdaptor::new(common::host_pool(), 1 << 30);
    let kept = eight_threads(&mr);
    assert_eq!(mr.allocated_bytes(), kept.iter().map(|k| k.1.next_multiple_of(256)).sum::<usize>());
    free_all(&mr, &kept);
    assert_eq!(mr.allocated_bytes(), 0);
}

#[test]
fn thread_safe_adaptor_serves_eight_threads() {
    let pool = Arc::new(PoolMemoryResource::new(HostMemoryResource::new(), 0, None).unwrap());
    let mr = ThreadSafeResourceAdaptor::new(pool);
    let kept = eight_threads(&mr);
    assert_eq!(kept.len(), 8 * 250);
    free_all(&mr, &kept);
}
