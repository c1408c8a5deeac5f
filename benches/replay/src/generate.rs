//! Writes allocation logs through our `LoggingResourceAdaptor`, over a pool on host memory (no GPU
//! needed): the test data under `tests/data/logs/`.
//!
//! Patterns (every one seeded, so the sizes and order are the same each time; the pointers are
//! host addresses and the times wall-clock times, so the files differ from run to run):
//! - `thrust`: what a Thrust pipeline does through `rmm::exec_policy` on the default stream: per
//!   step, key and value vectors of a growing element count, sort / reduce-by-key / scan temporary
//!   storage allocated and freed at once (sized like CUB's), result vectors of which the last six
//!   are kept alive. Growing scratch is what leaves holes in a pool.
//! - `multi_stream`: four threads, each on its own stream, keeping up to eight buffers (256 B to
//!   2 MiB, log-uniform) and a 4-byte scalar per iteration; one free in twenty goes to the default
//!   stream instead. Real threads: rows interleave differently each run.
//! - `random`: the start of the fixed trace of `pool_trace` and `alloc_bench`'s `fixed_trace`
//!   (SplitMix64 seed 42, sizes log-uniform in [8 B, 1 MiB], at most 1000 live, allocate with
//!   probability 0.5), `--ops` operations (default 3000; 200000 gives the whole trace). Blocks live
//!   at the end stay live, as in the benchmark.

use rmm::adaptor::LoggingResourceAdaptor;
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, MemoryResource};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::Barrier;

/// The patterns `generate` knows, with their default operation counts.
pub const PATTERNS: &[&str] = &["thrust", "multi_stream", "random"];

const ALIGN: usize = 256;

/// SplitMix64, as in `alloc_bench.cu`: the same numbers on every machine.
use rmm::testing::SplitMix64 as Rng;

type Resource = LoggingResourceAdaptor<PoolMemoryResource<HostMemoryResource>>;

/// Writes pattern `name` to `out`. `ops`: operation count where the pattern takes one.
pub fn generate(name: &str, out: &Path, ops: Option<usize>, seed: Option<u64>) -> Result<String, String> {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 0, None).map_err(|e| e.to_string())?;
    let mr = LoggingResourceAdaptor::new(pool, Some(out)).map_err(|e| e.to_string())?;
    let summary = match name {
        "thrust" => thrust(&mr, seed.unwrap_or(7), ops.unwrap_or(120)),
        "multi_stream" => multi_stream(&mr, seed.unwrap_or(11), ops.unwrap_or(120)),
        "random" => random(&mr, seed.unwrap_or(42), ops.unwrap_or(3000)),
        _ => return Err(format!("unknown pattern '{name}' (known: {})", PATTERNS.join(", "))),
    }
    .map_err(|e| e.to_string())?;
    mr.flush().map_err(|e| e.to_string())?;
    Ok(summary)
}

fn alloc(mr: &Resource, bytes: usize, s: CudaStreamView) -> rmm::Result<(*mut u8, usize)> {
    Ok((mr.allocate(bytes, ALIGN, s)?, bytes))
}

fn free(mr: &Resource, b: (*mut u8, usize), s: CudaStreamView) -> rmm::Result<()> {
    mr.deallocate(b.0, b.1, ALIGN, s)
}

/// `steps` pipeline steps; the element count grows 6 % a step from 1024, with ±25 % jitter.
fn thrust(mr: &Resource, seed: u64, steps: usize) -> rmm::Result<String> {
    let mut rng = Rng::new(seed);
    let s = CudaStreamView::DEFAULT;
    let mut kept: VecDeque<[(*mut u8, usize); 2]> = VecDeque::new();
    for step in 0..steps {
        let n = ((1024.0 * 1.06f64.powi(step as i32)) * (0.75 + 0.5 * rng.unit())) as usize;
        let keys = alloc(mr, 4 * n, s)?;
        let values = alloc(mr, 4 * n, s)?;
        // sort_by_key: CUB's double buffers for keys and values, plus a histogram.
        let t = alloc(mr, 8 * n + 4096 + 64 * rng.below(64), s)?;
        free(mr, t, s)?;
        // reduce_by_key: m runs; outputs, a tile-state temp, the run count as a device scalar.
        let m = (n / (1 + rng.below(16))).max(1);
        let out_keys = alloc(mr, 4 * m, s)?;
        let out_values = alloc(mr, 4 * m, s)?;
        let count = alloc(mr, 8, s)?;
        let t = alloc(mr, 768 + 16 * n.div_ceil(1024), s)?;
        free(mr, t, s)?;
        free(mr, count, s)?;
        // inclusive_scan of the values in place: decoupled look-back tile state.
        let t = alloc(mr, 512 + 8 * n.div_ceil(512), s)?;
        free(mr, t, s)?;
        free(mr, keys, s)?;
        free(mr, values, s)?;
        kept.push_back([out_keys, out_values]);
        if kept.len() > 6 {
            for b in kept.pop_front().unwrap() {
                free(mr, b, s)?;
            }
        }
    }
    for pair in kept {
        for b in pair {
            free(mr, b, s)?;
        }
    }
    Ok(format!("{steps} steps"))
}

/// Four threads, `iterations` each.
fn multi_stream(mr: &Resource, seed: u64, iterations: usize) -> rmm::Result<String> {
    const THREADS: usize = 4;
    let start = Barrier::new(THREADS);
    let results: Vec<rmm::Result<()>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let start = &start;
                scope.spawn(move || {
                    // Stream handles that look like the driver's.
                    // SAFETY: a stream name for a replay log: no driver call sees it.
                    let s = unsafe { CudaStreamView::from_handle(0x7f3a_1c00_0000 + 0x10_0000 * t) };
                    let mut rng = Rng::new(seed + t as u64);
                    let mut live: Vec<(*mut u8, usize)> = Vec::new();
                    start.wait();
                    for _ in 0..iterations {
                        let scalar = alloc(mr, 4, s)?;
                        for _ in 0..1 + rng.below(2) {
                            if live.len() < 8 {
                                live.push(alloc(mr, rng.log_uniform(256, 2 << 20), s)?);
                            }
                        }
                        while live.len() > 4 || (!live.is_empty() && rng.unit() < 0.4) {
                            let b = live.swap_remove(rng.below(live.len()));
                            let on = if rng.below(20) == 0 { CudaStreamView::DEFAULT } else { s };
                            free(mr, b, on)?;
                        }
                        free(mr, scalar, s)?;
                        std::thread::yield_now();
                    }
                    for b in live {
                        free(mr, b, s)?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a generator thread panicked")).collect()
    });
    results.into_iter().collect::<rmm::Result<Vec<()>>>()?;
    Ok(format!("{THREADS} threads x {iterations} iterations"))
}

/// `ops` operations of the fixed trace, exactly as `alloc_bench.cu`'s `make_trace` draws them.
fn random(mr: &Resource, seed: u64, ops: usize) -> rmm::Result<String> {
    const MAX_LIVE: usize = 1000;
    let mut rng = Rng::new(seed);
    let s = CudaStreamView::DEFAULT;
    let (lo, hi) = (8f64.log2(), ((1usize << 20) as f64).log2());
    let mut live: Vec<(*mut u8, usize)> = Vec::new();
    for _ in 0..ops {
        let allocate = live.is_empty() || (live.len() < MAX_LIVE && rng.unit() < 0.5);
        if allocate {
            let size = ((lo + (hi - lo) * rng.unit()).exp2() as u32).clamp(8, 1 << 20) as usize;
            live.push(alloc(mr, size, s)?);
        } else {
            let slot = (rng.next_u64() % live.len() as u64) as usize;
            let b = live.swap_remove(slot);
            free(mr, b, s)?;
        }
    }
    Ok(format!("{ops} operations, {} blocks left live", live.len()))
}
