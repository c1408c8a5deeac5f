//! Dask-CUDA's stack (statistics over tracking over a pool) hammered by several threads, checked
//! at every quiescent point against what the threads did: the statistics' values, totals and
//! peaks (with pushed frames), and the tracking adaptor's map and byte count, exactly.
//!
//! Between checks the threads run phases that only allocate or only free, so that the exact peak
//! is known whatever the interleaving: the global value only rises during an allocating phase, so
//! its highest point is the phase's end, and only falls during a freeing one. Mixed phases in
//! between stir the counters (credit moving between threads' slots, sweeps, new peaks while
//! other threads free) and are checked on values and totals, with bounds on the peak.

use rmm::adaptor::{Counter, CounterFrame, StatisticsResourceAdaptor, TrackingResourceAdaptor};
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::testing::SplitMix64;
use rmm::{CudaStreamView, MemoryResource};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};

const THREADS: usize = 4;
const ROUNDS: usize = 12;

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Allocate,
    Free,
    Mixed,
}

/// What a thread did in one phase.
#[derive(Default, Clone, Copy)]
struct Did {
    allocs: i64,
    alloc_bytes: i64,
    frees: i64,
    free_bytes: i64,
}

/// The model frame: RMM's arithmetic, applied per phase.
fn add(c: &mut Counter, n: i64) {
    c.value += n;
    c.total += n;
    c.peak = c.peak.max(c.value);
}

#[test]
fn threads_hammering_statistics_over_tracking_leave_exact_counters_at_every_quiescent_point() {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 64 << 20, None).unwrap();
    let stack = StatisticsResourceAdaptor::new(TrackingResourceAdaptor::new(pool, false));
    // Each thread's blocks; the checker moves some between threads so that frees cross threads.
    let held: Vec<Mutex<Vec<(usize, usize)>>> = (0..THREADS).map(|_| Mutex::new(Vec::new())).collect();
    let did: Vec<Mutex<Did>> = (0..THREADS).map(|_| Mutex::new(Did::default())).collect();
    let start = Barrier::new(THREADS + 1);
    let end = Barrier::new(THREADS + 1);
    let phase = Mutex::new(Phase::Allocate);
    // Set when the checker failed: the threads stop instead of waiting for it forever.
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (stack, held, did, start, end, phase, stop) = (&stack, &held[t], &did[t], &start, &end, &phase, &stop);
            s.spawn(move || {
                // SAFETY: a stream name for resources over host memory: no driver call sees it.
                let stream = unsafe { CudaStreamView::from_handle(0x1000 * (t + 1)) };
                let mut rng = SplitMix64::new(0xE7AC7 + t as u64);
                for round in 0..ROUNDS * 3 {
                    start.wait();
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let p = *phase.lock().unwrap();
                    let mut mine = held.lock().unwrap();
                    let mut d = Did::default();
                    let steps = 2_000 + rng.below(2_000);
                    for _ in 0..steps {
                        let allocate = match p {
                            Phase::Allocate => true,
                            Phase::Free => false,
                            Phase::Mixed => mine.is_empty() || rng.below(100) < 50,
                        };
                        if allocate {
                            // Log-uniform 1 B .. 256 KiB, some of 0 bytes (counted, not tracked).
                            let bytes = if rng.below(64) == 0 { 0 } else { (rng.unit() * 18f64).exp2() as usize };
                            let ptr = if round % 2 == 0 {
                                stack.allocate(bytes, 256, stream).unwrap()
                            } else {
                                stack
                                    .try_allocate_immediately(bytes, 256, stream)
                                    .map_or_else(|| stack.allocate(bytes, 256, stream), Ok)
                                    .unwrap()
                            };
                            mine.push((ptr as usize, bytes));
                            d.allocs += 1;
                            d.alloc_bytes += bytes as i64;
                        } else if !mine.is_empty() {
                            let i = rng.below(mine.len());
                            let (ptr, bytes) = mine.swap_remove(i);
                            let ptr = ptr as *mut u8;
                            if round % 2 == 0 || !stack.try_deallocate_immediately(ptr, bytes, 256, stream) {
                                stack.deallocate(ptr, bytes, 256, stream).unwrap();
                            }
                            d.frees += 1;
                            d.free_bytes += bytes as i64;
                        }
                    }
                    drop(mine);
                    *did.lock().unwrap() = d;
                    end.wait();
                }
            });
        }

        let mut frames: Vec<CounterFrame> = vec![CounterFrame::default()];
        let mut totals = (0i64, 0i64);
        for round in 0..ROUNDS * 3 {
            let checked = catch_unwind(AssertUnwindSafe(|| {
                let p = [Phase::Allocate, Phase::Mixed, Phase::Free][round % 3];
                *phase.lock().unwrap() = p;
                let before = *frames.last().unwrap();
                start.wait();
                end.wait();
                // Quiescent: every thread finished its phase and waits.
                let sum = did.iter().fold(Did::default(), |a, d| {
                    let d = *d.lock().unwrap();
                    Did {
                        allocs: a.allocs + d.allocs,
                        alloc_bytes: a.alloc_bytes + d.alloc_bytes,
                        frees: a.frees + d.frees,
                        free_bytes: a.free_bytes + d.free_bytes,
                    }
                });
                totals = (totals.0 + sum.alloc_bytes, totals.1 + sum.allocs);
                let top = frames.last_mut().unwrap();
                // Within a one-direction phase the value's highest point is an end of the phase.
                add(&mut top.bytes, sum.alloc_bytes);
                add(&mut top.allocations, sum.allocs);
                top.bytes.value -= sum.free_bytes;
                top.allocations.value -= sum.frees;
                let got = stack.counters();
                if p == Phase::Mixed {
                    // The peak depends on the interleaving: at least the value at either end, at most
                    // the value at the start plus everything allocated.
                    for (g, b, a) in
                        [(got.bytes, before.bytes, sum.alloc_bytes), (got.allocations, before.allocations, sum.allocs)]
                    {
                        assert!(g.peak >= b.peak.max(g.value) && g.peak <= b.peak.max(b.value + a), "round {round}");
                    }
                    top.bytes.peak = got.bytes.peak;
                    top.allocations.peak = got.allocations.peak;
                }
                let depth = frames.len();
                let top = frames.last_mut().unwrap();
                assert_eq!(got, *top, "round {round} ({depth} frames)");
                assert_eq!(
                    got,
                    CounterFrame { bytes: stack.bytes_counter(), allocations: stack.allocations_counter() }
                );

                // The tracking adaptor holds exactly the threads' non-empty blocks.
                let mut want: Vec<(usize, usize)> = held.iter().flat_map(|h| h.lock().unwrap().clone()).collect();
                want.retain(|&(_, bytes)| bytes != 0);
                want.sort_unstable();
                let tracking = stack.upstream();
                let tracked: Vec<(usize, usize)> =
                    tracking.outstanding_allocations().iter().map(|r| (r.ptr, r.bytes)).collect();
                assert_eq!(tracked, want, "round {round}");
                assert_eq!(tracking.allocation_count(), want.len());
                assert_eq!(tracking.allocated_bytes(), want.iter().map(|w| w.1).sum::<usize>());

                // The whole stack's bytes: every frame's value and total, the top frame's peak.
                let below = &frames[..frames.len() - 1];
                let base: i64 = below.iter().map(|f| f.bytes.value).sum();
                let all = stack.stack_bytes();
                assert_eq!((all.value, all.total), (base + got.bytes.value, totals.0), "round {round}");
                assert_eq!(all.peak, base + got.bytes.peak);

                // Frames and peak resets at quiescent points: push every few rounds, pop after.
                match round % 7 {
                    2 | 4 => {
                        assert_eq!(stack.push_counters(), *frames.last().unwrap());
                        frames.push(CounterFrame::default());
                    }
                    6 if frames.len() > 1 => {
                        let popped = frames.pop().unwrap();
                        assert_eq!(stack.pop_counters().unwrap(), popped);
                        let outer = frames.last_mut().unwrap();
                        for (o, i) in [(&mut outer.bytes, popped.bytes), (&mut outer.allocations, popped.allocations)] {
                            o.peak = o.peak.max(o.value + i.peak);
                            o.value += i.value;
                            o.total += i.total;
                        }
                        assert_eq!(stack.counters(), *outer);
                    }
                    5 => {
                        stack.reset_peaks();
                        let top = frames.last_mut().unwrap();
                        top.bytes.peak = top.bytes.value;
                        top.allocations.peak = top.allocations.value;
                        assert_eq!(stack.counters(), *top);
                    }
                    _ => {}
                }
                // Hand a third of each thread's blocks to the next thread: its frees cross threads.
                let moved: Vec<Vec<(usize, usize)>> = held
                    .iter()
                    .map(|h| {
                        let mut h = h.lock().unwrap();
                        let keep = h.len() - h.len() / 3;
                        h.split_off(keep)
                    })
                    .collect();
                for (t, blocks) in moved.into_iter().enumerate() {
                    held[(t + 1) % THREADS].lock().unwrap().extend(blocks);
                }
            }));
            if let Err(failure) = checked {
                // The threads wait for the next phase, unless this was the last.
                stop.store(true, Ordering::Relaxed);
                if round + 1 < ROUNDS * 3 {
                    start.wait();
                }
                resume_unwind(failure);
            }
        }
    });
    // Everything still held goes back; the counters return to the model's value of zero.
    for h in &held {
        for &(ptr, bytes) in h.lock().unwrap().iter() {
            stack.deallocate(ptr as *mut u8, bytes, 256, CudaStreamView::DEFAULT).unwrap();
        }
    }
    let tracking = stack.upstream();
    assert_eq!((tracking.allocation_count(), tracking.allocated_bytes()), (0, 0));
    assert_eq!(stack.stack_bytes().value, 0);
}
