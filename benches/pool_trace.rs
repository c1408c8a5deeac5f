//! The fixed random trace (`fixed_trace` in docs/benchmarks.md): 200k operations, sizes log-uniform
//! 8 B – 1 MiB, at most 1000 live blocks, replayed through each resource; prints ns per
//! allocate-or-free. glibc malloc/free runs the same trace as a yardstick. With a GPU, the CUDA
//! resources run it too.
//!
//! `cargo bench --bench pool_trace` (add `-- --threads` for the shared-pool thread scaling rows,
//! `-- --adaptors` for only the adaptor rows: statistics, tracking and limiting over a host pool,
//! on 1 and 2 threads; see `bench_adaptors` for its options). Each single-thread row: median and minimum of 31 replays after a 300 ms
//! warm-up.

use rmm::adaptor::{
    HistoryResourceAdaptor, LimitingResourceAdaptor, StatisticsResourceAdaptor, TrackingResourceAdaptor,
};
use rmm::history::RecordOptions;
use rmm::pool::{HostOrder, HostPhysicalMemory};
use rmm::resource::{
    CudaAsyncMemoryResource, CudaMemoryResource, HostMemoryResource, PoolMemoryResource, VirtualPoolMemoryResource,
};
use rmm::testing::SplitMix64;
use rmm::{CudaStreamView, MemoryResource};
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(p: *mut c_void);
}

#[derive(Clone, Copy)]
enum Op {
    Alloc { slot: usize, bytes: usize },
    Free { slot: usize },
}

/// `ops` operations (allocations, frees, and the final frees of what is still live), each allocation
/// naming the slot its pointer is kept in.
fn make_trace(ops: usize, max_live: usize, seed: u64) -> Vec<Op> {
    let mut rng = SplitMix64::new(seed);
    let (lo, hi) = ((8f64).ln(), ((1 << 20) as f64).ln());
    let mut free_slots: Vec<usize> = (0..max_live).rev().collect();
    let mut live: Vec<usize> = Vec::new();
    let mut trace = Vec::with_capacity(ops);
    while trace.len() < ops {
        let alloc = !free_slots.is_empty() && (live.is_empty() || rng.unit() < 0.5);
        if alloc {
            let bytes = (lo + (hi - lo) * rng.unit()).exp() as usize;
            let slot = free_slots.pop().unwrap();
            live.push(slot);
            trace.push(Op::Alloc { slot, bytes });
        } else {
            let i = (rng.next_u64() % live.len() as u64) as usize;
            let slot = live.swap_remove(i);
            free_slots.push(slot);
            trace.push(Op::Free { slot });
        }
    }
    for slot in live {
        trace.push(Op::Free { slot });
    }
    trace
}

/// Replays the trace; returns ns per operation.
fn replay(trace: &[Op], mut alloc: impl FnMut(usize) -> *mut u8, mut dealloc: impl FnMut(*mut u8, usize)) -> f64 {
    let mut ptrs = vec![(std::ptr::null_mut::<u8>(), 0usize); 1000];
    let t = Instant::now();
    for op in trace {
        match *op {
            Op::Alloc { slot, bytes } => ptrs[slot] = (alloc(bytes), bytes),
            Op::Free { slot } => {
                let (p, n) = ptrs[slot];
                dealloc(p, n);
            }
        }
    }
    t.elapsed().as_nanos() as f64 / trace.len() as f64
}

/// Median and minimum of repeated runs: the machines are shared, so one run says little; the
/// median is what we report, the minimum shows the cost without interference.
#[derive(Clone, Copy)]
struct Stat {
    median: f64,
    min: f64,
}

fn stat(mut v: Vec<f64>) -> Stat {
    v.sort_by(|a, b| a.total_cmp(b));
    Stat { median: v[v.len() / 2], min: v[0] }
}

/// Runs `f` `reps` times after a warm-up long enough for the CPU clock to settle.
fn repeat(reps: usize, mut f: impl FnMut() -> f64) -> Stat {
    let warm = Instant::now();
    while warm.elapsed().as_millis() < 300 {
        f();
    }
    stat((0..reps).map(|_| f()).collect())
}

fn bench_resource<R: MemoryResource + ?Sized>(r: &R, trace: &[Op], stream: CudaStreamView, reps: usize) -> Stat {
    repeat(reps, || {
        replay(
            trace,
            |n| r.allocate(n, 256, stream).expect("allocate failed in benchmark"),
            |p, n| r.deallocate(p, n, 256, stream).expect("deallocate failed in benchmark"),
        )
    })
}

fn bench_malloc(trace: &[Op], reps: usize) -> Stat {
    // SAFETY: every pointer malloc returns is freed exactly once by the trace.
    repeat(reps, || replay(trace, |n| unsafe { malloc(n) as *mut u8 }, |p, _| unsafe { free(p as *mut c_void) }))
}

/// `threads` threads, each replaying its own trace against one shared resource, on its own stream
/// or (`one_stream`) all on one; aggregate ns per operation (wall time / all operations). Device
/// resources get real streams; host memory gets stream handles that are never passed to CUDA.
fn bench_threads<R: MemoryResource + ?Sized>(r: &R, threads: usize, ops: usize, one_stream: bool) -> f64 {
    let traces: Vec<Vec<Op>> = (0..threads).map(|t| make_trace(ops, 1000, 1000 + t as u64)).collect();
    let total: usize = traces.iter().map(|t| t.len()).sum();
    let barrier = std::sync::Barrier::new(threads);
    let t0 = std::sync::Mutex::new(None::<Instant>);
    let common = (one_stream && r.is_device_accessible()).then(|| rmm::CudaStream::new().expect("stream"));
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let common_view = common.as_ref().map_or(unsafe { CudaStreamView::from_handle(0x1000) }, |s| s.view());
    std::thread::scope(|s| {
        for (i, trace) in traces.iter().enumerate() {
            let (barrier, t0) = (&barrier, &t0);
            s.spawn(move || {
                let owned = (!one_stream && r.is_device_accessible()).then(|| rmm::CudaStream::new().expect("stream"));
                let stream = match &owned {
                    Some(s) => s.view(),
                    None if one_stream => common_view,
                    // SAFETY: a stream name for resources over host memory: no driver call sees it.
                    None => unsafe { CudaStreamView::from_handle(0x1000 * (i + 1)) },
                };
                barrier.wait();
                t0.lock().unwrap().get_or_insert_with(Instant::now);
                replay(
                    trace,
                    |n| r.allocate(n, 256, stream).expect("allocate"),
                    |p, n| r.deallocate(p, n, 256, stream).expect("deallocate"),
                );
                if let Some(s) = &owned {
                    s.synchronize().expect("synchronize");
                }
            });
        }
    });
    if let Some(s) = &common {
        s.synchronize().expect("synchronize");
    }
    let start = t0.into_inner().unwrap().unwrap();
    start.elapsed().as_nanos() as f64 / total as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let threads = args.iter().any(|a| a == "--threads");
    if args.iter().any(|a| a == "--adaptors") {
        bench_adaptors(&args);
        return;
    }
    let reps = 31;
    let trace = make_trace(200_000, 1000, 42);
    println!("trace: {} ops (200k + final frees), sizes 8 B..1 MiB log-uniform, <= 1000 live, seed 42", trace.len());
    println!("{:<44} {:>12} {:>10}", "resource", "median ns/op", "min ns/op");
    let row = |name: &str, s: Stat| println!("{name:<44} {:>12.1} {:>10.1}", s.median, s.min);

    let host_pool = PoolMemoryResource::new(HostMemoryResource::new(), 0, None).expect("host pool");
    row("rmm-rs pool<host memory>", bench_resource(&host_pool, &trace, CudaStreamView::DEFAULT, reps));
    row("glibc malloc/free", bench_malloc(&trace, reps));
    // The allocation-history adaptor over the same pool: off (one relaxed load per call), then
    // on without stacks (every operation is one event; the ring of 65536 wraps).
    let history =
        HistoryResourceAdaptor::new(PoolMemoryResource::new(HostMemoryResource::new(), 0, None).expect("pool"));
    row("rmm-rs history<pool<host>>, recording off", bench_resource(&history, &trace, CudaStreamView::DEFAULT, reps));
    let options = RecordOptions { max_entries: 1 << 16, ..RecordOptions::default() };
    history.recorder().enable(options).expect("enable recording");
    row("rmm-rs history<pool<host>>, recording on", bench_resource(&history, &trace, CudaStreamView::DEFAULT, reps));
    history.recorder().disable();
    // The virtual pool's algorithm over a stand-in reservation that only records its mappings.
    let stand_in = HostPhysicalMemory::new(0x7f00_0000_0000, 64 << 30, 2 << 20);
    // SAFETY: the stand-in's addresses are never read or written: the trace only allocates and
    // frees.
    let virtual_host = unsafe {
        VirtualPoolMemoryResource::with_physical(stand_in, 0, Box::new(HostOrder), rmm::resource::pool::DEFAULT_SHARDS)
    }
    .expect("virtual pool over a stand-in");
    row("rmm-rs virtual pool<host stand-in>", bench_resource(&virtual_host, &trace, CudaStreamView::DEFAULT, reps));

    if rmm::cuda_available() {
        let s = rmm::CudaStream::new().expect("stream");
        let cuda = Arc::new(CudaMemoryResource::new());
        let pool = PoolMemoryResource::new(cuda.clone(), 1 << 30, None).expect("device pool");
        row("rmm-rs pool<cuda> (stream)", bench_resource(&pool, &trace, s.view(), reps));
        row("rmm-rs pool<cuda> (default stream)", bench_resource(&pool, &trace, CudaStreamView::DEFAULT, reps));
        let virtual_pool = VirtualPoolMemoryResource::new(64 << 30, 1 << 30).expect("virtual pool");
        row("rmm-rs virtual pool (stream)", bench_resource(&virtual_pool, &trace, s.view(), reps));
        // A stream this crate did not create: its identity is checked on every allocation.
        let mut raw: cudarc::driver::sys::CUstream = std::ptr::null_mut();
        // SAFETY: a context is current (the pool made one); raw is a valid out pointer.
        let created = unsafe { cudarc::driver::sys::cuStreamCreate(&mut raw, 1) };
        assert_eq!(created, cudarc::driver::sys::CUresult::CUDA_SUCCESS, "cuStreamCreate");
        // SAFETY: the stream created above, alive until it is destroyed after its last use here.
        let users = unsafe { CudaStreamView::from_raw(raw) };
        row("rmm-rs pool<cuda> (the user's own stream)", bench_resource(&pool, &trace, users, reps));
        users.synchronize().expect("sync");
        let short = make_trace_prefix_closed(&trace[..20_000.min(trace.len())]);
        let once = replay(
            &short,
            |n| cuda.allocate(n, 256, CudaStreamView::DEFAULT).expect("allocate"),
            |p, n| cuda.deallocate(p, n, 256, CudaStreamView::DEFAULT).expect("deallocate"),
        );
        row("rmm-rs cuda (cuMemAlloc/cuMemFree, 20k ops, 1 run)", Stat { median: once, min: once });
        let asyncr = CudaAsyncMemoryResource::new(None, Some(usize::MAX)).expect("cuda_async");
        row("rmm-rs cuda_async (cuMemAllocFromPoolAsync)", bench_resource(&asyncr, &trace, s.view(), reps));
        s.synchronize().expect("sync");
        // The same driver calls on the same pool and stream with nothing of ours around them: what
        // is left of the row above is this crate's share.
        let (pool_handle, raw_stream) = (asyncr.pool_handle(), s.view().handle() as cudarc::driver::sys::CUstream);
        let driver_only = repeat(reps, || {
            replay(
                &trace,
                |n| {
                    let mut p: cudarc::driver::sys::CUdeviceptr = 0;
                    // SAFETY: the pool and the stream are alive; p is a valid out pointer.
                    let r = unsafe { cudarc::driver::sys::cuMemAllocFromPoolAsync(&mut p, n, pool_handle, raw_stream) };
                    assert_eq!(r, cudarc::driver::sys::CUresult::CUDA_SUCCESS, "cuMemAllocFromPoolAsync");
                    p as usize as *mut u8
                },
                |p, _| {
                    // SAFETY: p came from the pool above and is freed once, on the stream it was used on.
                    let r = unsafe {
                        cudarc::driver::sys::cuMemFreeAsync(p as usize as cudarc::driver::sys::CUdeviceptr, raw_stream)
                    };
                    assert_eq!(r, cudarc::driver::sys::CUresult::CUDA_SUCCESS, "cuMemFreeAsync");
                },
            )
        });
        row("driver only (same pool, cuMemAllocFromPoolAsync)", driver_only);
        s.synchronize().expect("sync");
        if threads {
            for (one, what) in [(false, "own streams"), (true, "one stream")] {
                for n in [1, 2, 4, 8, 16] {
                    let s = stat((0..5).map(|_| bench_threads(&pool, n, 200_000, one)).collect());
                    row(&format!("rmm-rs pool<cuda>, {n} threads, {what}"), s);
                    let s = stat((0..5).map(|_| bench_threads(&virtual_pool, n, 200_000, one)).collect());
                    row(&format!("rmm-rs virtual pool, {n} threads, {what}"), s);
                }
            }
            // Mapped on demand from nothing, as a program that does not size its pool has it.
            let grown = VirtualPoolMemoryResource::new(64 << 30, 0).expect("virtual pool");
            for (one, what) in [(false, "own streams"), (true, "one stream")] {
                for n in [1, 8, 16] {
                    let s = stat((0..5).map(|_| bench_threads(&grown, n, 200_000, one)).collect());
                    row(&format!("rmm-rs virtual pool from 0, {n} threads, {what}"), s);
                }
            }
            println!("virtual pool from 0: {} bytes mapped", grown.mapped_bytes());
        }
    } else {
        println!("skipped: no CUDA device (CUDA rows not run)");
    }
    if threads {
        let shared = PoolMemoryResource::new(HostMemoryResource::new(), 64 << 20, None).expect("pool");
        for (one, what) in [(false, "own streams"), (true, "one stream")] {
            for n in [1, 2, 4, 8, 16] {
                let s = stat((0..5).map(|_| bench_threads(&shared, n, 200_000, one)).collect());
                row(&format!("rmm-rs pool<host>, {n} threads, {what}"), s);
            }
        }
    }
}

/// The adaptors Dask-CUDA stacks, over a host pool: bare, then statistics, tracking, limiting and
/// statistics over tracking, each on 1 and 2 threads (own streams, one trace each): aggregate ns
/// per operation, median and minimum of 15 runs after a warm-up run. A fresh resource per row, so
/// no row inherits another's pool state. `--counts 1,8,16` picks the thread counts, `--reps N`
/// the runs, `--rows pool,statistics` the rows (by the name before `<`; for instruction counts
/// under cachegrind, one row, `--counts 1 --reps 1`, less the `pool` row, over the operations).
fn bench_adaptors(args: &[String]) {
    let opt = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let counts: Vec<usize> =
        opt("--counts").map_or(vec![1, 2], |s| s.split(',').map(|n| n.parse().expect("--counts")).collect());
    let reps: usize = opt("--reps").map_or(15, |s| s.parse().expect("--reps"));
    let only = opt("--rows");
    let wanted = |name: &str| {
        let key = name.split('<').next().unwrap_or(name);
        only.as_ref().is_none_or(|rows| rows.split(',').any(|r| r == key))
    };
    fn pool() -> PoolMemoryResource<HostMemoryResource> {
        PoolMemoryResource::new(HostMemoryResource::new(), 64 << 20, None).expect("host pool")
    }
    let rows = |name: &str, r: &dyn MemoryResource| {
        if !wanted(name) {
            return;
        }
        for &n in &counts {
            bench_threads(r, n, 200_000, false);
            let s = stat((0..reps).map(|_| bench_threads(r, n, 200_000, false)).collect());
            println!("{:<44} {:>12.1} {:>10.1}", format!("{name}, {n} thread(s)"), s.median, s.min);
        }
    };
    println!("{:<44} {:>12} {:>10}", "resource (fixed trace per thread)", "median ns/op", "min ns/op");
    rows("pool<host>", &pool());
    rows("statistics<pool<host>>", &StatisticsResourceAdaptor::new(pool()));
    rows("tracking<pool<host>>", &TrackingResourceAdaptor::new(pool(), false));
    rows("limiting<pool<host>>", &LimitingResourceAdaptor::new(pool(), usize::MAX));
    rows("stats_tracking<pool<host>>", &StatisticsResourceAdaptor::new(TrackingResourceAdaptor::new(pool(), false)));
}

/// A prefix of the trace with frees appended for whatever it leaves live, so it replays cleanly.
fn make_trace_prefix_closed(prefix: &[Op]) -> Vec<Op> {
    let mut live = std::collections::BTreeSet::new();
    for op in prefix {
        match *op {
            Op::Alloc { slot, .. } => {
                live.insert(slot);
            }
            Op::Free { slot } => {
                live.remove(&slot);
            }
        }
    }
    let mut v = prefix.to_vec();
    v.extend(live.into_iter().map(|slot| Op::Free { slot }));
    v
}
