//! The fixed trace (sizes log-uniform 8 B – 1 MiB, 200k operations per thread, at most 1000 live
//! blocks in all) through the fixed-size resource (1 MiB blocks, 128 a chunk), binning (bins
//! 2^18..2^22 over a pool) and the pool alone, over host memory, on N threads that each use their
//! own stream, one shared stream, or the per-thread default stream. Prints aggregate ns per
//! allocate-or-free (wall time over all threads' operations), median of the rounds.
//!
//! `cargo bench --bench fixed_binning_threads -- [fixed|binning|pool] [threads] [own|shared|ptds]
//! [rounds]`; with no arguments, every resource and pattern at 1, 2, 4 and 8 threads. On one
//! thread with `rounds` 0 (setup only) and 1, the difference of two cachegrind totals is the
//! instructions of one replay (`valgrind --tool=cachegrind --cache-sim=no`).
//!
//! The fixed-size resource runs under a stream order that needs ordering but makes no CUDA call,
//! so its per-stream sets, captures and checks run as on a GPU, without the driver's cost.

use rmm::pool::SimulatedDeviceOrder;
use rmm::resource::{BinningMemoryResource, FixedSizeMemoryResource, HostMemoryResource, PoolMemoryResource};
use rmm::testing::SplitMix64;
use rmm::{CudaStreamView, MemoryResource};
use std::sync::{Arc, Barrier};
use std::time::Instant;

const OPS: usize = 200_000;

/// One thread's trace: `(allocate, slot, bytes)` per operation.
type Trace = Vec<(bool, usize, usize)>;

/// One thread's trace.
fn trace(seed: u64, max_live: usize) -> Trace {
    let mut rng = SplitMix64::new(seed);
    let (lo, hi) = ((8f64).ln(), ((1 << 20) as f64).ln());
    let mut live: Vec<usize> = Vec::new();
    let mut free_slots: Vec<usize> = (0..max_live).rev().collect();
    let mut out = Vec::with_capacity(OPS);
    for _ in 0..OPS {
        if live.is_empty() || (live.len() < max_live && rng.next_u64() & 1 == 1) {
            let bytes = (lo + (hi - lo) * rng.unit()).exp() as usize;
            let slot = free_slots.pop().unwrap();
            live.push(slot);
            out.push((true, slot, bytes.max(8)));
        } else {
            let i = (rng.next_u64() % live.len() as u64) as usize;
            let slot = live.swap_remove(i);
            free_slots.push(slot);
            out.push((false, slot, 0));
        }
    }
    for slot in live {
        out.push((false, slot, 0));
    }
    out
}

fn replay(r: &dyn MemoryResource, t: &[(bool, usize, usize)], stream: CudaStreamView, max_live: usize) {
    let mut ptrs = vec![(std::ptr::null_mut::<u8>(), 0usize); max_live];
    for &(alloc, slot, bytes) in t {
        if alloc {
            ptrs[slot] = (r.allocate(bytes, 256, stream).expect("allocate"), bytes);
        } else {
            let (p, n) = ptrs[slot];
            r.deallocate(p, n, 256, stream).expect("free");
        }
    }
}

fn make(resource: &str) -> Arc<dyn MemoryResource> {
    let pool = || PoolMemoryResource::new(HostMemoryResource::new(), 256 << 20, None).unwrap();
    match resource {
        "fixed" => Arc::new(
            // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
            unsafe {
                FixedSizeMemoryResource::with_stream_order(
                    HostMemoryResource::new(),
                    1 << 20,
                    128,
                    Box::new(SimulatedDeviceOrder),
                )
            }
            .unwrap(),
        ),
        "binning" => Arc::new(BinningMemoryResource::with_bins(pool(), 18, 22).unwrap()),
        "pool" => Arc::new(pool()),
        other => panic!("unknown resource {other}: fixed, binning or pool"),
    }
}

/// Aggregate ns per operation of one round.
fn round(r: &Arc<dyn MemoryResource>, threads: usize, pattern: &str, traces: &Arc<Vec<Trace>>) -> f64 {
    let max_live = (1000 / threads).max(1);
    let start = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let (r, start, traces, pattern) = (r.clone(), start.clone(), traces.clone(), pattern.to_string());
            std::thread::spawn(move || {
                let stream = match pattern.as_str() {
                    // SAFETY: a stream name for resources over host memory: no driver call sees it.
                    "own" => unsafe { CudaStreamView::from_handle(0x1000 * (i + 1)) },
                    // SAFETY: a stream name for resources over host memory: no driver call sees it.
                    "shared" => unsafe { CudaStreamView::from_handle(0x7_0000) },
                    "ptds" => CudaStreamView::PER_THREAD,
                    other => panic!("unknown pattern {other}: own, shared or ptds"),
                };
                start.wait();
                replay(&*r, &traces[i], stream, max_live);
            })
        })
        .collect();
    let t0 = Instant::now();
    start.wait();
    for h in handles {
        h.join().unwrap();
    }
    let ops: usize = traces.iter().take(threads).map(Vec::len).sum();
    t0.elapsed().as_nanos() as f64 / ops as f64
}

fn run(resource: &str, threads: usize, pattern: &str, rounds: usize) {
    let max_live = (1000 / threads).max(1);
    let traces: Arc<Vec<_>> = Arc::new((0..threads).map(|i| trace(42 + i as u64, max_live)).collect());
    let r = make(resource);
    let mut times: Vec<f64> = (0..rounds).map(|_| round(&r, threads, pattern, &traces)).collect();
    times.sort_by(f64::total_cmp);
    if let Some(median) = times.get(times.len() / 2) {
        println!("{resource:8} {pattern:7} threads {threads:2}: {median:8.1} ns/op aggregate (min {:.1})", times[0]);
    } else {
        println!("{resource} setup only");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if let [resource, rest @ ..] = &args[..] {
        let threads = rest.first().map_or(1, |t| t.parse().expect("threads"));
        let pattern = rest.get(1).map_or("own", String::as_str);
        let rounds = rest.get(2).map_or(5, |r| r.parse().expect("rounds"));
        run(resource, threads, pattern, rounds);
        return;
    }
    for resource in ["pool", "fixed", "binning"] {
        for pattern in ["own", "shared", "ptds"] {
            for threads in [1, 2, 4, 8] {
                run(resource, threads, pattern, 5);
            }
        }
    }
}
