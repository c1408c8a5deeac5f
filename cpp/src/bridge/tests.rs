//! The bridge functions of several families together, on host memory (no GPU needed).

use super::adaptors::AdaptorResource;
use super::ffi::{CounterPair, ErrorKind, Outcome};
use super::outcome::Context;
use super::resource::{stream_view, take_allocate_error, Family};
use super::{adaptors::*, block::*, limiting::*, plain::*, pool::*, statistics::*, tracking::*};
use rmm::error::Error;

/// The counters of a statistics adaptor.
fn counters(r: &AdaptorResource) -> CounterPair {
    let mut c = CounterPair::default();
    assert!(r.statistics_counters(&mut c).is_ok());
    c
}

/// An allocation through the family's fast path, its error taken as C++ takes it.
fn allocate(r: &impl Family, bytes: usize, alignment: usize) -> Outcome {
    match allocate_or_null(r, bytes, alignment) {
        0 => take_allocate_error(),
        p => Outcome::ok(p),
    }
}

/// The family's fast-path allocation on the legacy default stream, the error left in place.
fn allocate_or_null(r: &impl Family, bytes: usize, alignment: usize) -> usize {
    // SAFETY: the legacy default stream (handle 0) lives for the whole program.
    unsafe { r.allocate_or_null(0, bytes, alignment) }
}

/// A free through the family's fast path on the legacy default stream.
fn deallocate(r: &impl Family, ptr: usize, bytes: usize, alignment: usize) {
    // SAFETY: the legacy default stream (handle 0) lives for the whole program.
    unsafe { r.deallocate(0, ptr, bytes, alignment) }
}

/// A free whose refusal comes back instead of being reported on stderr.
fn try_deallocate(r: &impl Family, ptr: usize, bytes: usize, alignment: usize) -> Outcome {
    // SAFETY: the legacy default stream (handle 0) lives for the whole program.
    let view = unsafe { stream_view(0) };
    match r.any().shared().and_then(|m| m.deallocate(ptr as *mut u8, bytes, alignment, view)) {
        Ok(()) => Outcome::ok(0),
        Err(e) => Outcome::from_error(&e, Context::Allocate),
    }
}

#[test]
fn host_resource_round_trip_through_the_bridge_functions() {
    let r = new_host_memory_resource();
    assert!(r.resource().status().is_ok());
    let a = allocate(&*r, 1000, 256);
    assert!(a.is_ok() && a.ptr.is_multiple_of(256) && a.ptr != 0);
    assert!(try_deallocate(&*r, a.ptr, 1000, 256).is_ok());
    // A second free is refused with a misuse error and leaves the resource as it was.
    let again = try_deallocate(&*r, a.ptr, 1000, 256);
    assert_eq!(again.kind, ErrorKind::Logic, "{}", again.message);
    assert!(r.resource().is_host_accessible() && !r.resource().is_device_accessible());
}

#[test]
fn the_fast_path_keeps_the_error_for_take_allocate_error() {
    let pool = new_pool_memory_resource(new_host_memory_resource().resource(), 0, 4096, true);
    assert!(take_allocate_error().is_ok(), "nothing failed yet");
    assert_eq!(allocate_or_null(&*pool, 0, 256), 0);
    assert!(take_allocate_error().is_ok(), "a 0-byte request is null without an error");
    assert_eq!(allocate_or_null(&*pool, 8, 3), 0);
    let bad = take_allocate_error();
    assert_eq!(bad.kind, ErrorKind::BadAlloc, "{}", bad.message);
    assert!(take_allocate_error().is_ok(), "an error is reported once");
    assert_eq!(allocate_or_null(&*pool, 8192, 256), 0);
    let oom = take_allocate_error();
    assert_eq!(oom.kind, ErrorKind::OutOfMemory);
    assert!(oom.message.contains("(failed to allocate 8.000000 KiB)"), "{}", oom.message);
    let p = allocate_or_null(&*pool, 4096, 256);
    assert!(p != 0 && p.is_multiple_of(256));
    deallocate(&*pool, p, 4096, 256);
    assert_eq!(pool.pool_size().ptr, 4096);
}

#[test]
fn a_pool_over_host_memory_releases_its_wholly_free_chunks() {
    let pool = new_pool_memory_resource(new_host_memory_resource().resource(), 1 << 20, 0, false);
    let a = allocate(&*pool, 4096, 256);
    assert!(a.is_ok(), "{}", a.message);
    assert_eq!(pool.release().ptr, 0, "a live block keeps its chunk");
    assert!(try_deallocate(&*pool, a.ptr, 4096, 256).is_ok());
    let out = pool.release();
    assert!(out.is_ok(), "{}", out.message);
    assert_eq!((out.ptr, pool.pool_size().ptr), (1 << 20, 0));
    let moved = new_moved_from_pool_resource().release();
    assert_eq!(moved.kind, ErrorKind::Logic);
    assert!(moved.message.contains("moved from"), "{}", moved.message);
}

#[test]
fn bad_alignment_is_bad_alloc() {
    let r = new_host_memory_resource();
    assert_eq!(allocate(&*r, 8, 3).kind, ErrorKind::BadAlloc);
}

#[test]
fn a_failed_upstream_fails_the_adaptor_with_its_reason() {
    let bad = PlainResource::make("broken", || Err(Error::out_of_memory(1, "initial pool")));
    let s = new_statistics_adaptor(bad.resource());
    assert!(!s.resource().status().is_ok());
    assert_eq!(allocate(&*s, 8, 256).kind, ErrorKind::OutOfMemory);
}

#[test]
fn pool_statistics_and_limits_through_the_bridge_on_host_memory() {
    let host = new_host_memory_resource();
    let pool = new_pool_memory_resource(host.resource(), 1 << 20, 0, false);
    assert!(pool.resource().status().is_ok(), "{}", pool.resource().status().message);
    assert_eq!(pool.pool_size().ptr, 1 << 20);
    let stats = new_statistics_adaptor(pool.resource());
    let limit = new_limiting_adaptor(stats.resource(), 4096, 256);

    let a = allocate(&*limit, 3000, 256);
    assert!(a.is_ok(), "{}", a.message);
    let refused = allocate(&*limit, 3000, 256);
    assert_eq!(refused.kind, ErrorKind::OutOfMemory);
    assert!(refused.message.contains("3000"), "{}", refused.message);
    assert_eq!(limit.limiting_allocated_bytes().ptr, 3072);
    assert_eq!(limit.limiting_allocation_limit().ptr, 4096);

    let c = counters(&stats);
    assert_eq!((c.bytes.value, c.allocations.value, c.allocations.total), (3000, 1, 1));
    assert!(stats.statistics_push_counters(&mut CounterPair::default()).is_ok());
    let mut popped = CounterPair::default();
    assert!(stats.statistics_pop_counters(&mut popped).is_ok());
    let refused = stats.statistics_pop_counters(&mut popped);
    assert_eq!(refused.kind, ErrorKind::OutOfRange);
    assert_eq!(refused.message, "cannot pop the last counter pair");

    assert!(try_deallocate(&*limit, a.ptr, 3000, 256).is_ok());
    assert_eq!(counters(&stats).bytes.value, 0);
    // A second free is refused by the pool and changes no counter.
    assert_eq!(try_deallocate(&*limit, a.ptr, 3000, 256).kind, ErrorKind::Logic);
    assert_eq!(counters(&stats).allocations.value, 0);
}

#[test]
fn bad_pool_sizes_are_logic_errors() {
    let host = new_host_memory_resource();
    let pool = new_pool_memory_resource(host.resource(), 1000, 0, false);
    assert_eq!(pool.resource().status().kind, ErrorKind::Logic);
}

#[test]
fn fixed_size_and_binning_through_the_bridge_functions() {
    let host = new_host_memory_resource();
    let fixed = new_fixed_size_memory_resource(host.resource(), 1000, 2);
    assert!(fixed.resource().status().is_ok(), "{}", fixed.resource().status().message);
    assert_eq!(fixed.block_size().ptr, 1024);
    assert_eq!(allocate(&*fixed, 2000, 256).kind, ErrorKind::OutOfMemory);
    assert_eq!(new_fixed_size_memory_resource(host.resource(), 0, 2).resource().status().kind, ErrorKind::Logic);

    let binning = new_binning_memory_resource(host.resource(), 0, 0, false);
    let stats = new_statistics_adaptor(host.resource());
    assert!(binning.add_bin_resource(4096, stats.resource()).is_ok());
    assert!(binning.add_bin(512).is_ok());
    assert_eq!(binning.add_bin(0).kind, ErrorKind::Logic);
    assert_eq!(fixed.add_bin(512).kind, ErrorKind::Logic);
    let a = allocate(&*binning, 3000, 256);
    assert!(a.is_ok());
    assert_eq!(counters(&stats).allocations.value, 1, "3000 bytes went to the 4096 bin");
    assert!(try_deallocate(&*binning, a.ptr, 3000, 256).is_ok());
    assert_eq!(counters(&stats).allocations.value, 0);
    assert_eq!(new_binning_memory_resource(host.resource(), -1, 3, true).resource().status().kind, ErrorKind::Logic);
}

#[test]
fn fixed_size_and_binning_fast_paths_reach_the_typed_resources() {
    let host = new_host_memory_resource();
    let fixed = new_fixed_size_memory_resource(host.resource(), 1024, 4);
    let a = allocate(&*fixed, 1000, 256);
    assert!(a.is_ok(), "{}", a.message);
    deallocate(&*fixed, a.ptr, 1000, 256);
    assert!(!try_deallocate(&*fixed, a.ptr, 1000, 256).is_ok(), "freed already");
    assert_eq!(allocate(&*fixed, 2000, 256).kind, ErrorKind::OutOfMemory);

    // Bins of 512 and 1024 bytes made here, typed; larger requests go to the upstream.
    let binning = new_binning_memory_resource(host.resource(), 9, 10, true);
    for bytes in [0, 300, 1000, 5000] {
        let b = allocate(&*binning, bytes, 256);
        assert!(b.is_ok() || bytes == 0, "{bytes}: {}", b.message);
        deallocate(&*binning, b.ptr, bytes, 256);
    }
    let b = allocate(&*binning, 700, 256);
    deallocate(&*binning, b.ptr, 700, 256);
    assert!(!try_deallocate(&*binning, b.ptr, 700, 256).is_ok(), "freed already");

    let moved = new_moved_from_block_resource();
    assert!(allocate(&*moved, 256, 256).message.contains("moved from"));
}

#[test]
fn a_query_of_another_kind_of_the_family_is_a_logic_error_naming_both() {
    // A query of another family does not compile; within a family the kind is checked.
    let host = new_host_memory_resource();
    let stats = new_statistics_adaptor(host.resource());
    for out in [
        stats.limiting_allocated_bytes(),
        stats.limiting_allocation_limit(),
        stats.tracking_allocated_bytes(),
        stats.tracked_allocations(&mut Vec::new()),
        stats.logging_flush(),
        stats.history_length(),
    ] {
        assert_eq!(out.kind, ErrorKind::Logic, "{}", out.message);
        assert!(out.message.contains("the resource is a statistics_resource_adaptor, not a "), "{}", out.message);
    }
    let limit = new_limiting_adaptor(host.resource(), 1 << 20, 256);
    let wrong = limit.statistics_counters(&mut CounterPair::default());
    assert_eq!(wrong.kind, ErrorKind::Logic);
    assert_eq!(
        wrong.message,
        "counters: the resource is a limiting_resource_adaptor, not a statistics_resource_adaptor"
    );
    let fixed = new_fixed_size_memory_resource(host.resource(), 1000, 2);
    let binning = new_binning_memory_resource(host.resource(), 0, 0, false);
    let wrong = binning.block_size();
    assert_eq!(
        wrong.message,
        "get_block_size: the resource is a binning_memory_resource, not a fixed_size_memory_resource"
    );
    assert_eq!(fixed.add_bin(512).kind, ErrorKind::Logic);
    let moved = new_moved_from_pool_resource();
    let out = moved.pool_size();
    assert_eq!(out.kind, ErrorKind::Logic);
    assert!(out.message.contains("moved from"), "{}", out.message);
    let moved = new_moved_from_adaptor_resource();
    assert!(moved.statistics_counters(&mut CounterPair::default()).message.contains("moved from"));
}

#[test]
fn tracking_reports_its_bytes_and_allocations() {
    let tracking = new_tracking_adaptor(new_host_memory_resource().resource(), false);
    let a = allocate(&*tracking, 100, 256);
    assert!(a.is_ok());
    assert_eq!(tracking.tracking_allocated_bytes().ptr, 100);
    let mut list = Vec::new();
    assert!(tracking.tracked_allocations(&mut list).is_ok());
    assert_eq!((list.len(), list[0].ptr, list[0].bytes, list[0].captured), (1, a.ptr, 100, false));
    assert!(try_deallocate(&*tracking, a.ptr, 100, 256).is_ok());
}

/// A resource whose allocating "driver call" fails with a CUDA error other than out of memory.
fn failing_with_invalid_value() -> Box<PlainResource> {
    PlainResource::make("failing", || {
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
    let direct = allocate(&*failing, 1000, 256);
    assert_eq!(direct.kind, ErrorKind::BadAlloc);
    assert_eq!(
        direct.message,
        "CUDA error (failed to allocate 1000 bytes) in cuMemAllocFromPoolAsync: CUDA_ERROR_INVALID_VALUE (1)"
    );
    // An adaptor lets it through as it is and counts nothing.
    let stats = new_statistics_adaptor(failing.resource());
    let through = allocate(&*stats, 1000, 256);
    assert_eq!((through.kind, through.message), (ErrorKind::BadAlloc, direct.message.clone()));
    assert_eq!(counters(&stats).allocations.total, 0);
    // A pool refuses with its own out-of-memory error quoting it, as RMM's pool does.
    let pool = new_pool_memory_resource(failing.resource(), 0, 0, false);
    let refused = allocate(&*pool, 1000, 256);
    assert_eq!(refused.kind, ErrorKind::OutOfMemory, "{}", refused.message);
    assert!(
        refused.message.contains("std::bad_alloc: CUDA error") && refused.message.contains("CUDA_ERROR_INVALID_VALUE")
    );
    let not_made = new_pool_memory_resource(failing.resource(), 1 << 20, 0, false);
    assert_eq!(not_made.resource().status().kind, ErrorKind::OutOfMemory, "{}", not_made.resource().status().message);
}
