//! The bridge functions of several kinds together, on host memory (no GPU needed).

use super::ffi::{CounterPair, ErrorKind};
use super::handle::{take_allocate_error, RustResource};
use super::{
    binning::*, cuda_async::*, fixed_size::*, limiting::*, logging::*, plain::*, pool::*, statistics::*, tracking::*,
};
use rmm::error::Error;

// The bridge's calls, on the legacy default stream (handle 0): it lives for the whole program.

/// [`RustResource::allocate`] on the legacy default stream.
fn allocate(r: &RustResource, bytes: usize, alignment: usize) -> super::ffi::Outcome {
    // SAFETY: the legacy default stream is always alive.
    unsafe { r.allocate(bytes, alignment, 0) }
}

/// [`RustResource::try_deallocate`] on the legacy default stream.
fn try_deallocate(r: &RustResource, ptr: usize, bytes: usize, alignment: usize) -> super::ffi::Outcome {
    // SAFETY: the legacy default stream is always alive.
    unsafe { r.try_deallocate(ptr, bytes, alignment, 0) }
}

/// [`RustResource::allocate_or_null`] on the legacy default stream.
fn allocate_or_null(r: &RustResource, bytes: usize, alignment: usize) -> usize {
    // SAFETY: the legacy default stream is always alive.
    unsafe { r.allocate_or_null(0, bytes, alignment) }
}

/// [`RustResource::deallocate`] on the legacy default stream.
fn deallocate(r: &RustResource, ptr: usize, bytes: usize, alignment: usize) {
    // SAFETY: the legacy default stream is always alive.
    unsafe { r.deallocate(0, ptr, bytes, alignment) }
}

/// The counters of a statistics adaptor.
fn counters(r: &RustResource) -> CounterPair {
    let mut c = CounterPair::default();
    assert!(statistics_counters(r, &mut c).is_ok());
    c
}

#[test]
fn host_resource_round_trip_through_the_bridge_functions() {
    let r = new_host_memory_resource();
    assert!(r.status().is_ok());
    let a = allocate(&r, 1000, 256);
    assert!(a.is_ok() && a.ptr % 256 == 0 && a.ptr != 0);
    assert!(try_deallocate(&r, a.ptr, 1000, 256).is_ok());
    // A second free is refused with a misuse error and leaves the resource as it was.
    let again = try_deallocate(&r, a.ptr, 1000, 256);
    assert_eq!(again.kind, ErrorKind::Logic, "{}", again.message);
    assert!(r.is_host_accessible() && !r.is_device_accessible());
}

#[test]
fn the_fast_path_keeps_the_error_for_take_allocate_error() {
    let pool = new_pool_memory_resource(&new_host_memory_resource(), 0, 4096, true);
    assert!(take_allocate_error().is_ok(), "nothing failed yet");
    assert_eq!(allocate_or_null(&pool, 0, 256), 0);
    assert!(take_allocate_error().is_ok(), "a 0-byte request is null without an error");
    assert_eq!(allocate_or_null(&pool, 8, 3), 0);
    let bad = take_allocate_error();
    assert_eq!(bad.kind, ErrorKind::BadAlloc, "{}", bad.message);
    assert!(take_allocate_error().is_ok(), "an error is reported once");
    assert_eq!(allocate_or_null(&pool, 8192, 256), 0);
    let oom = take_allocate_error();
    assert_eq!(oom.kind, ErrorKind::OutOfMemory);
    assert!(oom.message.contains("(failed to allocate 8.000000 KiB)"), "{}", oom.message);
    let p = allocate_or_null(&pool, 4096, 256);
    assert!(p != 0 && p % 256 == 0);
    deallocate(&pool, p, 4096, 256);
    assert_eq!(pool_size(&pool).ptr, 4096);
}

#[test]
fn a_pool_over_host_memory_releases_its_wholly_free_chunks() {
    let pool = new_pool_memory_resource(&new_host_memory_resource(), 1 << 20, 0, false);
    let a = allocate(&pool, 4096, 256);
    assert!(a.is_ok(), "{}", a.message);
    assert_eq!(pool_release(&pool).ptr, 0, "a live block keeps its chunk");
    assert!(try_deallocate(&pool, a.ptr, 4096, 256).is_ok());
    let out = pool_release(&pool);
    assert!(out.is_ok(), "{}", out.message);
    assert_eq!((out.ptr, pool_size(&pool).ptr), (1 << 20, 0));
    let wrong = pool_release(&new_host_memory_resource());
    assert_eq!(wrong.kind, ErrorKind::Logic);
    assert_eq!(wrong.message, "release: the resource is a host_memory_resource, not a pool_memory_resource");
}

#[test]
fn bad_alignment_is_bad_alloc() {
    let r = new_host_memory_resource();
    assert_eq!(allocate(&r, 8, 3).kind, ErrorKind::BadAlloc);
}

#[test]
fn a_failed_upstream_fails_the_adaptor_with_its_reason() {
    let bad = RustResource::make("broken", || Err(Error::out_of_memory(1, "initial pool")));
    let s = new_statistics_adaptor(&bad);
    assert!(!s.status().is_ok());
    assert_eq!(allocate(&s, 8, 256).kind, ErrorKind::OutOfMemory);
}

#[test]
fn pool_statistics_and_limits_through_the_bridge_on_host_memory() {
    let host = new_host_memory_resource();
    let pool = new_pool_memory_resource(&host, 1 << 20, 0, false);
    assert!(pool.status().is_ok(), "{}", pool.status().message);
    assert_eq!(pool_size(&pool).ptr, 1 << 20);
    let stats = new_statistics_adaptor(&pool);
    let limit = new_limiting_adaptor(&stats, 4096, 256);

    let a = allocate(&limit, 3000, 256);
    assert!(a.is_ok(), "{}", a.message);
    let refused = allocate(&limit, 3000, 256);
    assert_eq!(refused.kind, ErrorKind::OutOfMemory);
    assert!(refused.message.contains("3000"), "{}", refused.message);
    assert_eq!(limiting_allocated_bytes(&limit).ptr, 3072);
    assert_eq!(limiting_allocation_limit(&limit).ptr, 4096);

    let c = counters(&stats);
    assert_eq!((c.bytes.value, c.allocations.value, c.allocations.total), (3000, 1, 1));
    assert!(statistics_push_counters(&stats, &mut CounterPair::default()).is_ok());
    let mut popped = CounterPair::default();
    assert!(statistics_pop_counters(&stats, &mut popped).is_ok());
    let refused = statistics_pop_counters(&stats, &mut popped);
    assert_eq!(refused.kind, ErrorKind::OutOfRange);
    assert_eq!(refused.message, "cannot pop the last counter pair");

    assert!(try_deallocate(&limit, a.ptr, 3000, 256).is_ok());
    assert_eq!(counters(&stats).bytes.value, 0);
    // A second free is refused by the pool and changes no counter.
    assert_eq!(try_deallocate(&limit, a.ptr, 3000, 256).kind, ErrorKind::Logic);
    assert_eq!(counters(&stats).allocations.value, 0);
}

#[test]
fn bad_pool_sizes_are_logic_errors() {
    let host = new_host_memory_resource();
    let pool = new_pool_memory_resource(&host, 1000, 0, false);
    assert_eq!(pool.status().kind, ErrorKind::Logic);
}

#[test]
fn fixed_size_and_binning_through_the_bridge_functions() {
    let host = new_host_memory_resource();
    let fixed = new_fixed_size_memory_resource(&host, 1000, 2);
    assert!(fixed.status().is_ok(), "{}", fixed.status().message);
    assert_eq!(fixed_size_block_size(&fixed).ptr, 1024);
    assert_eq!(allocate(&fixed, 2000, 256).kind, ErrorKind::OutOfMemory);
    assert_eq!(new_fixed_size_memory_resource(&host, 0, 2).status().kind, ErrorKind::Logic);

    let binning = new_binning_memory_resource(&host, 0, 0, false);
    let stats = new_statistics_adaptor(&host);
    assert!(binning_add_bin_resource(&binning, 4096, &stats).is_ok());
    assert!(binning_add_bin(&binning, 512).is_ok());
    assert_eq!(binning_add_bin(&binning, 0).kind, ErrorKind::Logic);
    assert_eq!(binning_add_bin(&fixed, 512).kind, ErrorKind::Logic);
    let a = allocate(&binning, 3000, 256);
    assert!(a.is_ok());
    assert_eq!(counters(&stats).allocations.value, 1, "3000 bytes went to the 4096 bin");
    assert!(try_deallocate(&binning, a.ptr, 3000, 256).is_ok());
    assert_eq!(counters(&stats).allocations.value, 0);
    assert_eq!(new_binning_memory_resource(&host, -1, 3, true).status().kind, ErrorKind::Logic);
}

#[test]
fn a_query_of_another_kind_is_a_logic_error_naming_both() {
    let host = new_host_memory_resource();
    let wrong = pool_size(&host);
    assert_eq!(wrong.kind, ErrorKind::Logic);
    assert_eq!(wrong.message, "pool_size: the resource is a host_memory_resource, not a pool_memory_resource");
    let stats = new_statistics_adaptor(&host);
    for out in [
        limiting_allocated_bytes(&stats),
        limiting_allocation_limit(&stats),
        tracking_allocated_bytes(&stats),
        tracked_allocations(&stats, &mut Vec::new()),
        fixed_size_block_size(&stats),
        cuda_async_pool_handle(&stats),
        logging_flush(&stats),
        statistics_counters(&host, &mut CounterPair::default()),
    ] {
        assert_eq!(out.kind, ErrorKind::Logic, "{}", out.message);
        assert!(out.message.contains("statistics_resource_adaptor") || out.message.contains("host_memory_resource"));
    }
    let moved = new_moved_from_resource();
    let out = pool_size(&moved);
    assert_eq!(out.kind, ErrorKind::Logic);
    assert!(out.message.contains("moved from"), "{}", out.message);
}

#[test]
fn tracking_reports_its_bytes_and_allocations() {
    let tracking = new_tracking_adaptor(&new_host_memory_resource(), false);
    let a = allocate(&tracking, 100, 256);
    assert!(a.is_ok());
    assert_eq!(tracking_allocated_bytes(&tracking).ptr, 100);
    let mut list = Vec::new();
    assert!(tracked_allocations(&tracking, &mut list).is_ok());
    assert_eq!((list.len(), list[0].ptr, list[0].bytes, list[0].captured), (1, a.ptr, 100, false));
    assert!(try_deallocate(&tracking, a.ptr, 100, 256).is_ok());
}

/// A resource whose allocating "driver call" fails with a CUDA error other than out of memory.
fn failing_with_invalid_value() -> Box<RustResource> {
    RustResource::make("failing", || {
        // SAFETY: the function hands out no memory; the free function is never reached with any.
        let r = unsafe {
            rmm::resource::CallbackMemoryResource::new(
                |bytes, _, _| {
                    Err(Error::CudaAlloc {
                        requested: bytes,
                        call: "cuMemAllocFromPoolAsync",
                        code: 1,
                        name: "CUDA_ERROR_INVALID_VALUE".into(),
                    })
                },
                |_, _, _, _| Ok(()),
            )
        };
        Ok(std::sync::Arc::new(r) as rmm::SharedResource)
    })
}

#[test]
fn an_allocating_cuda_error_is_bad_alloc_not_out_of_memory() {
    let failing = failing_with_invalid_value();
    let direct = allocate(&failing, 1000, 256);
    assert_eq!(direct.kind, ErrorKind::BadAlloc);
    assert_eq!(
        direct.message,
        "CUDA error (failed to allocate 1000 bytes) in cuMemAllocFromPoolAsync: CUDA_ERROR_INVALID_VALUE (1)"
    );
    // An adaptor lets it through as it is and counts nothing.
    let stats = new_statistics_adaptor(&failing);
    let through = allocate(&stats, 1000, 256);
    assert_eq!((through.kind, through.message), (ErrorKind::BadAlloc, direct.message.clone()));
    assert_eq!(counters(&stats).allocations.total, 0);
    // A pool refuses with its own out-of-memory error quoting it, as RMM's pool does.
    let pool = new_pool_memory_resource(&failing, 0, 0, false);
    let refused = allocate(&pool, 1000, 256);
    assert_eq!(refused.kind, ErrorKind::OutOfMemory, "{}", refused.message);
    assert!(
        refused.message.contains("std::bad_alloc: CUDA error") && refused.message.contains("CUDA_ERROR_INVALID_VALUE")
    );
    let not_made = new_pool_memory_resource(&failing, 1 << 20, 0, false);
    assert_eq!(not_made.status().kind, ErrorKind::OutOfMemory, "{}", not_made.status().message);
}
