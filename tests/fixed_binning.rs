//! The fixed-size and binning resources on host memory: block size limit, growth, routing by
//! size, everything given back, bad input, and model traces of 10^6 operations, the fixed-size one
//! under a stream order that checks every hand-over between streams with vector clocks.

mod common;

use common::clock_order::ClockOrder;
use common::{run_trace, seed, Rng, Trace};
use rmm::adaptor::{LimitingResourceAdaptor, StatisticsResourceAdaptor};
use rmm::resource::{BinningMemoryResource, FixedSizeMemoryResource, HostMemoryResource, SharedResource};
use rmm::{CudaStreamView, Error, MemoryResource, Misuse};
use std::collections::HashMap;
use std::sync::Arc;

const S: CudaStreamView = CudaStreamView::DEFAULT;
const KIB: usize = 1 << 10;

/// Operations of a model trace: 10^6 in release builds, a hundredth in debug builds.
fn ops() -> usize {
    if cfg!(debug_assertions) {
        10_000
    } else {
        1_000_000
    }
}

type Stats = Arc<StatisticsResourceAdaptor<HostMemoryResource>>;

fn stats() -> Stats {
    Arc::new(StatisticsResourceAdaptor::new(HostMemoryResource::new()))
}

#[test]
fn requests_above_the_block_size_are_out_of_memory_and_alignments_above_256_refused() {
    let r = FixedSizeMemoryResource::new(HostMemoryResource::new(), 1000, 4).unwrap();
    assert_eq!(r.block_size(), 1024, "rounded up to 256 as RMM");
    match r.allocate(1025, 256, S) {
        Err(Error::OutOfMemory { requested: 1025, reason, .. }) => {
            assert!(reason.contains("maximum allocation size exceeded"), "{reason}")
        }
        other => panic!("expected out of memory, got {other:?}"),
    }
    assert_eq!(r.allocate(8, 512, S), Err(Error::BadAlignment { alignment: 512, max: 256 }));
    assert!(matches!(r.allocate(8, 3, S), Err(Error::BadAlignment { .. })));
    let p = r.allocate(1024, 64, S).unwrap();
    assert_eq!(p as usize % 256, 0);
    r.deallocate(p, 1024, 64, S).unwrap();
    r.check_invariants().unwrap();
}

#[test]
fn grows_one_chunk_at_a_time_and_gives_every_chunk_back_when_dropped() {
    let up = stats();
    {
        let r = FixedSizeMemoryResource::new(up.clone(), 256, 4).unwrap();
        assert_eq!((up.allocations_counter().value, up.bytes_counter().value), (1, 1024), "preallocated");
        let blocks: Vec<_> = (0..5).map(|_| r.allocate(200, 256, S).unwrap()).collect();
        assert_eq!((up.allocations_counter().value, r.pool_size()), (2, 2048), "one more chunk of 4 blocks");
        let chunks = r.chunks();
        for &b in &blocks {
            assert!(chunks.iter().any(|&(s, n)| (b as usize) >= s && (b as usize) + 256 <= s + n));
        }
        for b in blocks {
            r.deallocate(b, 200, 256, S).unwrap();
        }
        assert_eq!(r.free_blocks(), 8);
        // Freed blocks are reused before the upstream is asked again.
        let again: Vec<_> = (0..8).map(|_| r.allocate(1, 256, S).unwrap()).collect();
        assert_eq!(up.allocations_counter().value, 2);
        for b in again {
            r.deallocate(b, 1, 256, S).unwrap();
        }
    }
    assert_eq!((up.allocations_counter().value, up.bytes_counter().value), (0, 0));
    assert_eq!(up.upstream().outstanding(), (0, 0));
}

#[test]
fn bad_constructor_arguments_are_refused() {
    for (block, n) in [(0, 4), (256, 0), (usize::MAX - 10, 1), (1 << 40, 1 << 40)] {
        let made = FixedSizeMemoryResource::new(HostMemoryResource::new(), block, n);
        assert!(matches!(made, Err(Error::InvalidArgument(_))), "block {block}, {n} blocks");
    }
    // An upstream that cannot give the first chunk fails the constructor with its error.
    let small = LimitingResourceAdaptor::new(HostMemoryResource::new(), 1000);
    assert!(FixedSizeMemoryResource::new(small, 256, 4).unwrap_err().is_out_of_memory());
}

#[test]
fn bad_frees_are_refused_and_change_nothing() {
    let r = FixedSizeMemoryResource::new(HostMemoryResource::new(), 1024, 4).unwrap();
    let p = r.allocate(1000, 256, S).unwrap() as usize;
    let free = r.free_blocks();
    let cases = [
        (p + 256, 1000, Misuse::InteriorPointer { ptr: p + 256, block_start: p }),
        (p, 2000, Misuse::WrongSize { ptr: p, allocated: 1024, given: 2000 }),
        (p + 1024, 1000, Misuse::DoubleFree { ptr: p + 1024 }),
        (0x100, 1000, Misuse::UnknownPointer { ptr: 0x100 }),
    ];
    for (ptr, bytes, misuse) in cases {
        assert_eq!(r.deallocate(ptr as *mut u8, bytes, 256, S), Err(Error::Misuse(misuse)));
        assert_eq!(r.free_blocks(), free);
        r.check_invariants().unwrap();
    }
    r.deallocate(p as *mut u8, 1000, 256, S).unwrap();
    assert_eq!(r.deallocate(p as *mut u8, 1000, 256, S), Err(Error::Misuse(Misuse::DoubleFree { ptr: p })));
    r.deallocate(std::ptr::null_mut(), 0, 256, S).unwrap();
}

#[test]
fn binning_routes_by_size_to_the_smallest_bin_that_fits() {
    let (small, large, up) = (stats(), stats(), stats());
    let b = BinningMemoryResource::new(up.clone());
    b.add_bin(1000, Some(small.clone() as SharedResource)).unwrap();
    b.add_bin(4096, Some(large.clone() as SharedResource)).unwrap();
    b.add_bin(1024, Some(large.clone() as SharedResource)).unwrap(); // 1000 rounds to 1024: exists
    assert_eq!(b.bin_sizes(), vec![1024, 4096]);
    let count =
        || (small.allocations_counter().value, large.allocations_counter().value, up.allocations_counter().value);
    let p1 = b.allocate(1024, 256, S).unwrap();
    let p2 = b.allocate(1025, 256, S).unwrap();
    let p3 = b.allocate(4097, 256, S).unwrap();
    let p4 = b.allocate(10, 4096, S).unwrap(); // alignment above 256: the upstream
    assert_eq!(count(), (1, 1, 2));
    assert_eq!(p4 as usize % 4096, 0);
    b.deallocate(p1, 1024, 256, S).unwrap();
    b.deallocate(p2, 1025, 256, S).unwrap();
    b.deallocate(p3, 4097, 256, S).unwrap();
    b.deallocate(p4, 10, 4096, S).unwrap();
    assert_eq!(count(), (0, 0, 0));
    assert!(matches!(b.add_bin(0, None), Err(Error::InvalidArgument(_))));
    assert!(matches!(b.add_bin(usize::MAX, None), Err(Error::InvalidArgument(_))));
    assert_eq!(b.allocate(0, 256, S), Ok(std::ptr::null_mut()));
    assert!(matches!(b.allocate(8, 3, S), Err(Error::BadAlignment { .. })));
}

#[test]
fn binning_exponents_make_fixed_size_bins_over_the_upstream() {
    let up = stats();
    {
        let b = BinningMemoryResource::with_bins(up.clone(), 3, 10).unwrap();
        assert_eq!(b.bin_sizes(), vec![256, 512, 1024], "exponents below 8 give the 256-byte bin");
        // Each bin preallocated RMM's 128 blocks.
        assert_eq!(up.bytes_counter().value as usize, 128 * (256 + 512 + 1024));
        let p = b.allocate(300, 256, S).unwrap();
        let q = b.allocate(2000, 256, S).unwrap();
        assert_eq!(up.allocations_counter().value, 4, "300 bytes from the 512 bin, 2000 from the upstream");
        b.deallocate(q, 2000, 256, S).unwrap();
        b.deallocate(p, 300, 256, S).unwrap();
        b.add_bin(1 << 12, None).unwrap();
        assert_eq!(up.allocations_counter().value, 4);
        assert!(BinningMemoryResource::with_bins(up.clone(), 10, 8).unwrap().bin_sizes().is_empty());
    }
    assert_eq!((up.allocations_counter().value, up.bytes_counter().value), (0, 0), "dropping gives all back");
    for (lo, hi) in [(-1, 4), (4, 63), (i8::MIN, i8::MAX)] {
        assert!(matches!(BinningMemoryResource::with_bins(up.clone(), lo, hi), Err(Error::InvalidArgument(_))));
    }
}

#[test]
fn fixed_size_model_trace_with_ordered_streams() {
    let mut rng = Rng::new(seed("fixed-size ordered model trace", 21));
    let order = ClockOrder::default();
    let host = Arc::new(HostMemoryResource::new());
    // Room for 16 chunks of 32 blocks: growth stops, and the synchronisation path runs.
    let upstream = Arc::new(LimitingResourceAdaptor::new(host.clone(), 16 * 32 * 4 * KIB));
    let streams: Vec<usize> = (1..=4).map(|i| 0x1000 * i).collect();
    {
        let r =
            // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
            unsafe { FixedSizeMemoryResource::with_stream_order(upstream.clone(), 4 * KIB, 32, Box::new(order.clone())) }.unwrap();
        let mut chunks = r.chunks();
        // Live blocks: address → (bytes, stream); free blocks: address → (stream, time of free).
        let mut live: Vec<(usize, usize)> = Vec::new();
        let mut owner: HashMap<usize, usize> = HashMap::new();
        let mut freed: HashMap<usize, (usize, u64)> = HashMap::new();
        for step in 0..ops() {
            let s = streams[rng.below(streams.len())];
            let t = order.tick(s);
            // SAFETY: a stream name for resources over host memory: no driver call sees it.
            let view = unsafe { CudaStreamView::from_handle(s) };
            if live.len() < 400 && (live.is_empty() || rng.below(100) < 55) {
                let bytes = rng.log_uniform(1, 4 * KIB);
                let p = r.allocate(bytes, 256, view).unwrap_or_else(|e| panic!("step {step}: {e}")) as usize;
                assert!(owner.insert(p, bytes).is_none(), "step {step}: {p:#x} handed out twice");
                if let Some((from, at)) = freed.remove(&p) {
                    assert!(
                        order.sees(s, from, at),
                        "step {step}: {p:#x} freed on {from:#x} at {at} given to {s:#x} unordered"
                    );
                }
                if !chunks.iter().any(|&(c, n)| p >= c && p + 4 * KIB <= c + n) {
                    chunks = r.chunks();
                    assert!(chunks.iter().any(|&(c, n)| p >= c && p + 4 * KIB <= c + n), "{p:#x} in no chunk");
                }
                live.push((p, bytes));
            } else {
                let (p, bytes) = live.swap_remove(rng.below(live.len()));
                owner.remove(&p);
                r.deallocate(p as *mut u8, bytes, 256, view).unwrap();
                freed.insert(p, (s, t));
            }
            if step % 100_000 == 0 {
                r.check_invariants().unwrap();
                assert_eq!(r.free_blocks() + live.len(), r.pool_size() / (4 * KIB));
            }
        }
        for (p, bytes) in live {
            r.deallocate(p as *mut u8, bytes, 256, S).unwrap();
        }
        r.check_invariants().unwrap();
        assert_eq!(r.free_blocks(), r.pool_size() / (4 * KIB));
        // Copied out, so that a failed assertion does not poison the lock `r`'s drop takes.
        let (records, waits, syncs) = order.counts();
        println!("records {records}, waits {waits}, synchronisations {syncs}");
        // Short runs (a debug build's default operation count) synchronise once; long ones more.
        assert!(records > 0 && waits > 0 && syncs >= 1, "every hand-over path ran");
    }
    assert_eq!(host.outstanding(), (0, 0));
}

#[test]
fn binning_model_trace_on_host_memory() {
    let mut rng = Rng::new(seed("binning model trace", 22));
    let host = Arc::new(HostMemoryResource::new());
    {
        let b = BinningMemoryResource::with_bins(host.clone(), 8, 14).unwrap();
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        let streams = (1..=3).map(|i| unsafe { CudaStreamView::from_handle(0x1000 * i) }).collect();
        let t =
            Trace { ops: ops(), max_live: 500, max_size: 64 * KIB, streams, big_alignments: true, ..Trace::default() };
        let preallocated = host.outstanding().0;
        run_trace(&b, &t, &mut rng, false, |_| {});
        // Requests above 16 KiB went to the host and came back; the bins keep their chunks.
        assert!(host.outstanding().0 >= preallocated);
    }
    assert_eq!(host.outstanding(), (0, 0));
}
