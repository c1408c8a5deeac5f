//! The statistics, tracking and limiting adaptors forward the non-waiting calls
//! (`try_allocate_immediately`, `try_deallocate_immediately`) to their upstream: their counters
//! stay exact over any mix of fast and full calls, a declined fast call changes nothing, and the
//! limit holds against concurrent fast callers.

use rmm::adaptor::{LimitingResourceAdaptor, StatisticsResourceAdaptor, TrackingResourceAdaptor};
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::testing::SplitMix64;
use rmm::{CudaStreamView, MemoryResource, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

const S: CudaStreamView = CudaStreamView::DEFAULT;

/// Host memory whose fast calls succeed only while `serve` is set; counts the bytes it holds out
/// and the most it ever held.
#[derive(Default)]
struct Switchable {
    inner: HostMemoryResource,
    serve: AtomicBool,
    out: AtomicUsize,
    peak: AtomicUsize,
}

impl Switchable {
    fn serving() -> Self {
        let s = Switchable::default();
        s.serve.store(true, Ordering::Relaxed);
        s
    }
    fn took(&self, bytes: usize) {
        let now = self.out.fetch_add(bytes, Ordering::AcqRel) + bytes;
        self.peak.fetch_max(now, Ordering::AcqRel);
    }
}

// SAFETY: every block comes from `inner` unchanged and goes back to it.
unsafe impl MemoryResource for Switchable {
    fn allocate(&self, bytes: usize, alignment: usize, s: CudaStreamView) -> Result<*mut u8> {
        let p = self.inner.allocate(bytes, alignment, s)?;
        self.took(bytes);
        Ok(p)
    }
    fn deallocate(&self, p: *mut u8, bytes: usize, alignment: usize, s: CudaStreamView) -> Result<()> {
        self.inner.deallocate(p, bytes, alignment, s)?;
        self.out.fetch_sub(bytes, Ordering::AcqRel);
        Ok(())
    }
    fn try_allocate_immediately(&self, bytes: usize, alignment: usize, s: CudaStreamView) -> Option<*mut u8> {
        if !self.serve.load(Ordering::Relaxed) || bytes == 0 {
            return None;
        }
        self.allocate(bytes, alignment, s).ok()
    }
    fn try_deallocate_immediately(&self, p: *mut u8, bytes: usize, alignment: usize, s: CudaStreamView) -> bool {
        self.serve.load(Ordering::Relaxed) && self.deallocate(p, bytes, alignment, s).is_ok()
    }
    fn is_host_accessible(&self) -> bool {
        true
    }
    fn is_device_accessible(&self) -> bool {
        false
    }
}

type Stack = StatisticsResourceAdaptor<TrackingResourceAdaptor<LimitingResourceAdaptor<Switchable>>>;

fn stack(limit: usize) -> Stack {
    let limiting = LimitingResourceAdaptor::with_alignment(Switchable::serving(), limit, 1).unwrap();
    StatisticsResourceAdaptor::new(TrackingResourceAdaptor::new(limiting, false))
}

/// Every counter of the stack against the live blocks the test holds.
fn check_counts(stack: &Stack, live: &HashMap<usize, usize>, allocations: i64, peak: i64) {
    let bytes: usize = live.values().sum();
    let c = stack.counters();
    assert_eq!((c.bytes.value, c.allocations.value), (bytes as i64, live.len() as i64));
    assert_eq!((c.allocations.total, c.bytes.peak), (allocations, peak));
    let tracking = stack.upstream();
    assert_eq!((tracking.allocated_bytes(), tracking.allocation_count()), (bytes, live.len()));
    let limiting = tracking.upstream();
    assert_eq!(limiting.allocated_bytes(), bytes);
    assert_eq!(limiting.upstream().out.load(Ordering::Acquire), bytes);
}

#[test]
fn counters_stay_exact_over_mixes_of_fast_and_full_calls() {
    let limit = 64 << 10;
    let s = stack(limit);
    let mut rng = SplitMix64::new(7);
    let mut live: HashMap<usize, usize> = HashMap::new();
    let (mut allocations, mut peak, mut bytes) = (0i64, 0i64, 0usize);
    for _ in 0..20_000 {
        let switch = s.upstream().upstream().upstream();
        switch.serve.store(rng.below(4) != 0, Ordering::Relaxed);
        let fast = rng.below(2) == 0;
        if live.is_empty() || rng.below(2) == 0 {
            let n = 1 + rng.below(4096);
            let got = if fast {
                s.try_allocate_immediately(n, 256, S).ok_or(())
            } else {
                s.allocate(n, 256, S).map_err(drop)
            };
            let fits = bytes + n <= limit;
            match got {
                Ok(p) => {
                    assert!(fits, "the limit was passed");
                    live.insert(p as usize, n);
                    bytes += n;
                    allocations += 1;
                    peak = peak.max(bytes as i64);
                }
                Err(()) => assert!(!fits || (fast && !switch.serve.load(Ordering::Relaxed))),
            }
        } else {
            let (&p, &n) = live.iter().nth(rng.below(live.len())).unwrap();
            let freed = if fast {
                s.try_deallocate_immediately(p as *mut u8, n, 256, S)
            } else {
                s.deallocate(p as *mut u8, n, 256, S).is_ok()
            };
            assert_eq!(freed, !fast || switch.serve.load(Ordering::Relaxed));
            if freed {
                live.remove(&p);
                bytes -= n;
            }
        }
        check_counts(&s, &live, allocations, peak);
    }
    for (p, n) in live.drain() {
        s.deallocate(p as *mut u8, n, 256, S).unwrap();
    }
    check_counts(&s, &live, allocations, peak);
}

#[test]
fn a_declined_fast_call_changes_nothing() {
    let s = stack(1000);
    let p = s.allocate(600, 256, S).unwrap();
    let before = s.counters();
    // Over the limit: refused before the upstream is asked.
    assert_eq!(s.try_allocate_immediately(600, 256, S), None);
    // The upstream declines.
    s.upstream().upstream().upstream().serve.store(false, Ordering::Relaxed);
    assert_eq!(s.try_allocate_immediately(100, 256, S), None);
    assert!(!s.try_deallocate_immediately(p, 600, 256, S));
    s.upstream().upstream().upstream().serve.store(true, Ordering::Relaxed);
    // A free with another size, or of a pointer the stack never handed out, is left to the full
    // call (which logs it as RMM does).
    assert!(!s.try_deallocate_immediately(p, 599, 256, S));
    assert!(!s.try_deallocate_immediately(0x1000 as *mut u8, 64, 256, S));
    // A bad alignment is no fast call.
    assert_eq!(s.try_allocate_immediately(8, 3, S), None);
    assert!(!s.try_deallocate_immediately(p, 600, 3, S));
    assert_eq!(s.counters(), before);
    assert_eq!(s.upstream().allocation_count(), 1);
    assert_eq!(s.upstream().upstream().allocated_bytes(), 600);
    assert!(s.try_deallocate_immediately(p, 600, 256, S));
    assert_eq!(s.upstream().upstream().allocated_bytes(), 0);
}

#[test]
fn tracking_with_stacks_leaves_fast_calls_to_the_full_ones() {
    let t = TrackingResourceAdaptor::new(Switchable::serving(), true);
    assert_eq!(t.try_allocate_immediately(256, 256, S), None);
    let p = t.allocate(256, 256, S).unwrap();
    assert!(t.outstanding_allocations()[0].stack.is_some());
    assert!(t.try_deallocate_immediately(p, 256, 256, S), "a tracked free needs no stack");
    assert_eq!(t.allocation_count(), 0);
}

#[test]
fn the_limit_holds_against_concurrent_fast_callers() {
    let limit = 40 * 1024;
    let s = Arc::new(stack(limit));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let s = s.clone();
            std::thread::spawn(move || {
                let mut rng = SplitMix64::new(t);
                let mut mine = Vec::new();
                for _ in 0..5_000 {
                    if mine.len() < 8 && rng.below(2) == 0 {
                        let n = 1 + rng.below(4096);
                        let p = if rng.below(2) == 0 {
                            s.try_allocate_immediately(n, 256, S)
                        } else {
                            s.allocate(n, 256, S).ok()
                        };
                        if let Some(p) = p {
                            mine.push((p, n));
                        }
                    } else if let Some((p, n)) = mine.pop() {
                        if !s.try_deallocate_immediately(p, n, 256, S) {
                            s.deallocate(p, n, 256, S).unwrap();
                        }
                    }
                }
                for (p, n) in mine {
                    s.deallocate(p, n, 256, S).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let switch = s.upstream().upstream().upstream();
    assert!(switch.peak.load(Ordering::Acquire) <= limit, "the upstream held more than the limit");
    assert_eq!(switch.out.load(Ordering::Acquire), 0);
    let c = s.counters();
    assert_eq!((c.bytes.value, c.allocations.value), (0, 0));
    // (The statistics' peak may pass the limit: a free is counted after the upstream took it back,
    // so another thread's allocation may be counted first.)
    assert_eq!((s.upstream().allocated_bytes(), s.upstream().upstream().allocated_bytes()), (0, 0));
}

#[test]
fn the_pool_serves_fast_calls_through_statistics_and_tracking() {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 1 << 20, None).unwrap();
    let s = StatisticsResourceAdaptor::new(TrackingResourceAdaptor::new(pool, false));
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let a = unsafe { CudaStreamView::from_handle(0x1000) };
    let p = s.allocate(1000, 256, a).unwrap();
    assert!(s.try_deallocate_immediately(p, 1000, 256, a), "the pool's own-stream free");
    let q = s.try_allocate_immediately(1000, 256, a).expect("the stream's own free block, through both adaptors");
    assert_eq!(p, q);
    let c = s.counters();
    assert_eq!((c.bytes.value, c.allocations.value, c.allocations.total), (1000, 1, 2));
    assert_eq!((s.upstream().allocation_count(), s.upstream().allocated_bytes()), (1, 1000));
    assert!(s.try_deallocate_immediately(q, 1000, 256, a));
    assert_eq!(s.counters().allocations.value, 0);
    assert_eq!(s.upstream().allocation_count(), 0);
}
