//! Adaptors over host memory: model-based random traces (10^6 operations per adaptor), shared
//! stacks under 8 threads, and every bad input with its exact error.

mod common;

use common::{run_trace, seed, Model, Rng, Trace};
use parking_lot::Mutex;
use rmm::adaptor::{
    Counter, CounterFrame, FailureCallbackResourceAdaptor, LimitingResourceAdaptor, LoggingResourceAdaptor,
    StatisticsResourceAdaptor, TrackingResourceAdaptor, LOG_HEADER,
};
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, Error, MemoryResource, Misuse, Result};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const OPS: usize = 1_000_000;
const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

fn streams() -> Vec<CudaStreamView<'static>> {
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    (0..8).map(|i| unsafe { CudaStreamView::from_handle(0x1000 + i) }).collect()
}

fn trace(ops: usize, big_alignments: bool) -> Trace<'static> {
    Trace {
        ops,
        max_live: 1000,
        min_size: 1,
        max_size: 64 * KIB,
        streams: streams(),
        big_alignments,
        ..Trace::default()
    }
}

fn align_up(bytes: usize, alignment: usize) -> usize {
    let a = alignment.max(256);
    bytes.div_ceil(a) * a
}

/// What one step of a trace did, read from the change in the model.
enum Step {
    Allocated(usize),
    Freed(usize),
    Nothing,
}

/// Tells the steps of a trace apart: each step allocates one block, frees one, or fails.
#[derive(Default)]
struct StepWatcher {
    len: usize,
    bytes: usize,
}

impl StepWatcher {
    fn step(&mut self, m: &Model) -> Step {
        let (len, bytes) = (m.len(), m.live_bytes);
        let step = if len > self.len {
            Step::Allocated(bytes - self.bytes)
        } else if len < self.len {
            Step::Freed(self.bytes - bytes)
        } else {
            Step::Nothing
        };
        self.len = len;
        self.bytes = bytes;
        step
    }
}

/// A pass-through resource that counts calls, remembers the last arguments, and fails on demand.
#[derive(Default)]
struct Spy<R> {
    inner: R,
    allocs: AtomicUsize,
    frees: AtomicUsize,
    last_alloc: Mutex<(usize, usize)>,
    last_free: Mutex<(usize, usize)>,
    /// The next this-many allocations fail with out-of-memory.
    fail_allocs: AtomicUsize,
    /// The next this-many frees fail with an `InvalidArgument("injected")`.
    fail_frees: AtomicUsize,
}

impl<R> Spy<R> {
    fn new(inner: R) -> Self {
        Spy {
            inner,
            allocs: AtomicUsize::new(0),
            frees: AtomicUsize::new(0),
            last_alloc: Mutex::new((0, 0)),
            last_free: Mutex::new((0, 0)),
            fail_allocs: AtomicUsize::new(0),
            fail_frees: AtomicUsize::new(0),
        }
    }
    fn calls(&self) -> (usize, usize) {
        (self.allocs.load(Ordering::SeqCst), self.frees.load(Ordering::SeqCst))
    }
    fn reset(&self) {
        self.allocs.store(0, Ordering::SeqCst);
        self.frees.store(0, Ordering::SeqCst);
    }
}

fn take_one(n: &AtomicUsize) -> bool {
    n.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(1)).is_ok()
}

// SAFETY: blocks come from `inner` unchanged and go back to it (an injected failure hands out
// or takes back nothing); the accessibility answers are `inner`'s.
unsafe impl<R: MemoryResource> MemoryResource for Spy<R> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        self.allocs.fetch_add(1, Ordering::SeqCst);
        *self.last_alloc.lock() = (bytes, alignment);
        if take_one(&self.fail_allocs) {
            return Err(Error::out_of_memory(bytes, "injected"));
        }
        self.inner.allocate(bytes, alignment, stream)
    }
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        self.frees.fetch_add(1, Ordering::SeqCst);
        *self.last_free.lock() = (bytes, alignment);
        if take_one(&self.fail_frees) {
            return Err(Error::InvalidArgument("injected".into()));
        }
        self.inner.deallocate(ptr, bytes, alignment, stream)
    }
    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        // The trait's default compares addresses only, and an adaptor over a Spy shares its address.
        std::ptr::addr_eq(self as *const Self, other as *const dyn MemoryResource)
            && rmm::resource::same_type::<Self>(other)
    }
    fn is_device_accessible(&self) -> bool {
        self.inner.is_device_accessible()
    }
    fn is_host_accessible(&self) -> bool {
        self.inner.is_host_accessible()
    }
}

fn c(value: i64, peak: i64, total: i64) -> Counter {
    Counter { value, peak, total }
}

// ---------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------

/// The test's own counter stack, written from RMM's documented semantics.
struct RefStack(Vec<CounterFrame>);

impl RefStack {
    fn top(&mut self) -> &mut CounterFrame {
        let n = self.0.len();
        &mut self.0[n - 1]
    }
    fn add(c: &mut Counter, n: i64) {
        c.value += n;
        c.total += n;
        c.peak = c.peak.max(c.value);
    }
    fn merge(below: &mut Counter, inner: &Counter) {
        below.peak = below.peak.max(below.value + inner.peak);
        below.value += inner.value;
        below.total += inner.total;
    }
}

#[test]
fn statistics_model_with_push_pop() {
    let s = seed("statistics_model_with_push_pop", 0x5747_0001);
    let stats = StatisticsResourceAdaptor::new(HostMemoryResource::new());
    let mut rng = Rng::new(s);
    let mut side = Rng::new(s ^ 0xFFFF);
    let mut reference = RefStack(vec![CounterFrame::default()]);
    let (mut peak, mut total, mut count_peak, mut count_total) = (0i64, 0i64, 0i64, 0i64);
    let (mut pushes, mut pops) = (0, 0);
    let mut watch = StepWatcher::default();
    run_trace(&stats, &trace(OPS, true), &mut rng, false, |m| {
        match watch.step(m) {
            Step::Allocated(b) => {
                RefStack::add(&mut reference.top().bytes, b as i64);
                RefStack::add(&mut reference.top().allocations, 1);
                total += b as i64;
                count_total += 1;
            }
            Step::Freed(b) => {
                reference.top().bytes.value -= b as i64;
                reference.top().allocations.value -= 1;
            }
            Step::Nothing => {}
        }
        peak = peak.max(m.live_bytes as i64);
        count_peak = count_peak.max(m.len() as i64);
        assert_eq!(stats.counters(), *reference.top());
        // Now and then open or close a nested region.
        match side.below(4000) {
            0 if reference.0.len() < 8 => {
                assert_eq!(stats.push_counters(), *reference.top());
                reference.0.push(CounterFrame::default());
                pushes += 1;
            }
            1 if reference.0.len() > 1 => {
                let popped = reference.0.pop().unwrap();
                assert_eq!(stats.pop_counters().unwrap(), popped);
                RefStack::merge(&mut reference.top().bytes, &popped.bytes);
                RefStack::merge(&mut reference.top().allocations, &popped.allocations);
                pops += 1;
            }
            _ => {}
        }
    });
    while reference.0.len() > 1 {
        reference.0.pop();
        stats.pop_counters().unwrap();
    }
    assert!(pushes > 50 && pops > 50, "push/pop exercised: {pushes} pushes, {pops} pops");
    // Folding every nested frame back gives the whole-run figures exactly.
    assert_eq!(stats.bytes_counter(), c(0, peak, total));
    assert_eq!(stats.allocations_counter(), c(0, count_peak, count_total));
    assert_eq!(stats.upstream().outstanding(), (0, 0));
}

#[test]
fn statistics_push_pop_semantics() {
    let stats = StatisticsResourceAdaptor::new(HostMemoryResource::new());
    let a = stats.allocate_sync(1000, 256).unwrap();
    let before = stats.push_counters();
    assert_eq!(before.bytes, c(1000, 1000, 1000));
    assert_eq!(stats.bytes_counter(), Counter::default());
    let b = stats.allocate_sync(300, 256).unwrap();
    let d = stats.allocate_sync(200, 256).unwrap();
    stats.deallocate_sync(a, 1000, 256).unwrap(); // frees memory counted by the outer frame
    assert_eq!(stats.bytes_counter(), c(-500, 500, 500));
    assert_eq!(stats.allocations_counter(), c(1, 2, 2));
    let popped = stats.pop_counters().unwrap();
    assert_eq!(popped.bytes, c(-500, 500, 500));
    // Outer: peak = max(1000, 1000 + 500), value 1000 - 500, total 1000 + 500.
    assert_eq!(stats.bytes_counter(), c(500, 1500, 1500));
    assert_eq!(stats.allocations_counter(), c(2, 3, 3));
    stats.deallocate_sync(b, 300, 256).unwrap();
    stats.deallocate_sync(d, 200, 256).unwrap();
    assert_eq!(stats.bytes_counter(), c(0, 1500, 1500));
}

#[test]
fn statistics_stack_bytes_and_reset_peaks() {
    let stats = StatisticsResourceAdaptor::new(HostMemoryResource::new());
    let a = stats.allocate_sync(1000, 256).unwrap();
    stats.deallocate_sync(a, 1000, 256).unwrap();
    let a = stats.allocate_sync(400, 256).unwrap();
    assert_eq!(stats.stack_bytes(), c(400, 1000, 1400));
    stats.reset_peaks();
    assert_eq!(stats.stack_bytes(), c(400, 400, 1400));
    assert_eq!(stats.allocations_counter(), c(1, 1, 2));
    stats.push_counters();
    let b = stats.allocate_sync(300, 256).unwrap();
    stats.deallocate_sync(b, 300, 256).unwrap();
    // The whole stack: 400 outstanding, peak 400 + 300 since the push, as if nothing was pushed.
    assert_eq!(stats.stack_bytes(), c(400, 700, 1700));
    stats.reset_peaks();
    assert_eq!(stats.stack_bytes(), c(400, 400, 1700));
    stats.pop_counters().unwrap();
    stats.deallocate_sync(a, 400, 256).unwrap();
    // The reset in the pushed frame reset the peak the outer frame inherits on pop.
    assert_eq!(stats.stack_bytes(), c(0, 400, 1700));
}

#[test]
fn statistics_pop_without_push_is_invalid_argument() {
    let stats = StatisticsResourceAdaptor::new(HostMemoryResource::new());
    assert_eq!(stats.pop_counters(), Err(Error::InvalidArgument("cannot pop the last counter pair".into())));
    stats.push_counters();
    assert!(stats.pop_counters().is_ok());
    assert_eq!(stats.pop_counters(), Err(Error::InvalidArgument("cannot pop the last counter pair".into())));
    // Still works.
    let p = stats.allocate_sync(10, 256).unwrap();
    stats.deallocate_sync(p, 10, 256).unwrap();
    assert_eq!(stats.bytes_counter(), c(0, 10, 10));
}

#[test]
fn statistics_bad_frees_leave_counters_exact() {
    let stats = StatisticsResourceAdaptor::new(HostMemoryResource::new());
    let other = HostMemoryResource::new();
    let p = stats.allocate_sync(100, 256).unwrap();
    let q = stats.allocate_sync(50, 256).unwrap();
    let foreign = other.allocate_sync(100, 256).unwrap();
    let snapshot = stats.counters();

    assert_eq!(
        stats.deallocate_sync(foreign, 100, 256),
        Err(Error::Misuse(Misuse::UnknownPointer { ptr: foreign as usize }))
    );
    assert_eq!(
        stats.deallocate_sync(p, 99, 256),
        Err(Error::Misuse(Misuse::WrongSize { ptr: p as usize, allocated: 100, given: 99 }))
    );
    assert_eq!(stats.counters(), snapshot);

    stats.deallocate_sync(p, 100, 256).unwrap();
    let after_free = stats.counters();
    assert_eq!(stats.deallocate_sync(p, 100, 256), Err(Error::Misuse(Misuse::UnknownPointer { ptr: p as usize })));
    assert_eq!(stats.counters(), after_free);
    assert_eq!(after_free.bytes, c(50, 150, 150));
    assert_eq!(after_free.allocations, c(1, 2, 2));

    // Still works.
    let r = stats.allocate_sync(7, 256).unwrap();
    stats.deallocate_sync(r, 7, 256).unwrap();
    stats.deallocate_sync(q, 50, 256).unwrap();
    assert_eq!(stats.bytes_counter(), c(0, 150, 157));
    assert_eq!(stats.upstream().outstanding(), (0, 0));
    other.deallocate_sync(foreign, 100, 256).unwrap();
}

#[test]
fn statistics_failed_allocation_counts_nothing() {
    let stats = StatisticsResourceAdaptor::new(Spy::new(HostMemoryResource::new()));
    stats.upstream().fail_allocs.store(1, Ordering::SeqCst);
    assert!(stats.allocate_sync(100, 256).unwrap_err().is_out_of_memory());
    assert_eq!(stats.counters(), CounterFrame::default());
}

// ---------------------------------------------------------------------------------------------
// Tracking
// ---------------------------------------------------------------------------------------------

#[test]
fn tracking_model() {
    let s = seed("tracking_model", 0x7ACC_0001);
    let tracking = TrackingResourceAdaptor::new(HostMemoryResource::new(), false);
    let mut rng = Rng::new(s);
    let mut step = 0usize;
    run_trace(&tracking, &trace(OPS, true), &mut rng, false, |m| {
        assert_eq!(tracking.allocated_bytes(), m.live_bytes);
        assert_eq!(tracking.allocation_count(), m.len());
        step += 1;
        if step.is_multiple_of(50_000) {
            let snap = tracking.outstanding_allocations();
            assert_eq!(snap.len(), m.len());
            assert_eq!(snap.iter().map(|r| r.bytes).sum::<usize>(), m.live_bytes);
            assert!(snap.windows(2).all(|w| w[0].ptr < w[1].ptr), "snapshot sorted by address");
            assert!(snap.iter().all(|r| r.stack.is_none() && r.alignment >= 256));
        }
    });
    assert!(tracking.outstanding_allocations().is_empty());
    assert_eq!(tracking.report(), "0 outstanding allocations, 0 bytes\n");
    assert_eq!(tracking.upstream().outstanding(), (0, 0));
}

#[test]
fn tracking_bad_frees_are_forwarded_as_rmm_forwards_them() {
    let tracking = TrackingResourceAdaptor::new(Spy::new(HostMemoryResource::new()), false);
    let p = tracking.allocate_sync(100, 512).unwrap();
    let mut local = 0u8;
    let unknown = &mut local as *mut u8;

    // An untracked pointer goes to the upstream with the size given; this one refuses it, and
    // the adaptor is left as it was.
    assert_eq!(
        tracking.deallocate_sync(unknown, 100, 256),
        Err(Error::Misuse(Misuse::UnknownPointer { ptr: unknown as usize }))
    );
    assert_eq!(tracking.upstream().calls(), (1, 1));
    assert_eq!(*tracking.upstream().last_free.lock(), (100, 256));
    assert_eq!((tracking.allocation_count(), tracking.allocated_bytes()), (1, 100));

    // A free the upstream rejects keeps the allocation tracked.
    tracking.upstream().fail_frees.store(1, Ordering::SeqCst);
    assert_eq!(tracking.deallocate_sync(p, 100, 512), Err(Error::InvalidArgument("injected".into())));
    assert_eq!((tracking.allocation_count(), tracking.allocated_bytes()), (1, 100));

    // A wrong size (101) frees the block with the size it was allocated with (100).
    tracking.deallocate_sync(p, 101, 512).unwrap();
    assert_eq!(*tracking.upstream().last_free.lock(), (100, 512));
    assert_eq!(tracking.upstream().calls(), (1, 3));
    assert_eq!((tracking.allocation_count(), tracking.allocated_bytes()), (0, 0));

    // Still works.
    let q = tracking.allocate_sync(64, 256).unwrap();
    assert_eq!(tracking.allocated_bytes(), 64);
    tracking.deallocate_sync(q, 64, 256).unwrap();
    assert_eq!(tracking.upstream().inner.outstanding(), (0, 0));
}

#[test]
fn tracking_report_with_stacks() {
    let tracking = TrackingResourceAdaptor::new(HostMemoryResource::new(), true);
    assert!(tracking.captures_stacks());
    let p = tracking.allocate_sync(123, 256).unwrap();
    let q = tracking.allocate_sync(4567, 1024).unwrap();
    let snap = tracking.outstanding_allocations();
    assert_eq!(snap.len(), 2);
    assert!(snap.iter().all(|r| r.stack.is_some()));
    let q_rec = snap.iter().find(|r| r.ptr == q as usize).unwrap();
    assert_eq!((q_rec.bytes, q_rec.alignment), (4567, 1024));

    let report = tracking.report();
    assert!(report.starts_with("2 outstanding allocations, 4690 bytes\n"), "{report}");
    assert!(report.contains(&format!("{:#x}: 123 B (alignment 256)\n", p as usize)), "{report}");
    assert!(report.contains(&format!("{:#x}: 4567 B (alignment 1024)\n", q as usize)), "{report}");
    assert_eq!(report.matches("  allocated at:\n").count(), 2, "{report}");

    tracking.deallocate_sync(p, 123, 256).unwrap();
    tracking.deallocate_sync(q, 4567, 1024).unwrap();
    assert_eq!(tracking.report(), "0 outstanding allocations, 0 bytes\n");
    // Goes to stderr unconditionally (test capture does not see it), so only the short report.
    tracking.log_outstanding_allocations();
}

// ---------------------------------------------------------------------------------------------
// Limiting
// ---------------------------------------------------------------------------------------------

#[test]
fn limiting_model() {
    let s = seed("limiting_model", 0x1171_0001);
    let limit = 4 * MIB;
    let limiting = LimitingResourceAdaptor::new(Spy::new(HostMemoryResource::new()), limit);
    let mut rng = Rng::new(s);
    let mut expected = 0usize;
    let mut watch = StepWatcher::default();
    let ooms = run_trace(&limiting, &trace(OPS, true), &mut rng, true, |m| {
        match watch.step(m) {
            Step::Allocated(b) => {
                // Counted as RMM counts it: rounded up to 256 whatever the request's alignment.
                let (bytes, _) = *limiting.upstream().last_alloc.lock();
                assert_eq!(bytes, b);
                expected += align_up(bytes, 256);
            }
            Step::Freed(b) => {
                let (bytes, _) = *limiting.upstream().last_free.lock();
                assert_eq!(bytes, b);
                expected -= align_up(bytes, 256);
            }
            Step::Nothing => {}
        }
        assert_eq!(limiting.allocated_bytes(), expected);
        assert!(expected <= limit);
    });
    println!("limiting_model: {ooms} allocations refused");
    assert!(ooms > 1000, "the limit was reached often ({ooms})");
    assert_eq!(limiting.allocated_bytes(), 0);
    assert_eq!(limiting.upstream().inner.outstanding(), (0, 0));
}

#[test]
fn limiting_over_limit_then_smaller_fits() {
    let limiting = LimitingResourceAdaptor::new(Spy::new(HostMemoryResource::new()), 4096);
    assert_eq!(limiting.allocation_limit(), 4096);
    let a = limiting.allocate_sync(3000, 256).unwrap();
    assert_eq!(limiting.allocated_bytes(), 3072);

    let err = limiting.allocate_sync(2000, 256).unwrap_err();
    assert_eq!(
        err,
        Error::out_of_memory_verbatim(
            2000,
            None,
            "Exceeded memory limit 4096; Allocated bytes 3072; Requested bytes 2000\n"
        )
    );
    assert_eq!(limiting.allocated_bytes(), 3072);
    assert_eq!(limiting.upstream().calls(), (1, 0), "a refused request never reaches the upstream");

    // As in RMM, a request's own alignment does not change the count: 1 byte at 1024 counts as
    // 256, the adaptor's allocation alignment.
    let b = limiting.allocate_sync(1, 1024).unwrap();
    assert_eq!(limiting.allocated_bytes(), 3328);
    let c = limiting.allocate_sync(1, 256).unwrap();
    assert_eq!(limiting.allocated_bytes(), 3584);
    limiting.deallocate_sync(b, 1, 1024).unwrap();
    limiting.deallocate_sync(c, 1, 256).unwrap();
    let d = limiting.allocate_sync(1000, 256).unwrap();
    assert_eq!(limiting.allocated_bytes(), 4096);
    limiting.deallocate_sync(a, 3000, 256).unwrap();
    limiting.deallocate_sync(d, 1000, 256).unwrap();
    assert_eq!(limiting.allocated_bytes(), 0);
    assert_eq!(limiting.upstream().inner.outstanding(), (0, 0));
}

#[test]
fn limiting_rolls_back_on_upstream_errors() {
    let limiting = LimitingResourceAdaptor::new(Spy::new(HostMemoryResource::new()), 1 << 20);
    let spy = limiting.upstream();

    spy.fail_allocs.store(1, Ordering::SeqCst);
    assert_eq!(limiting.allocate_sync(5000, 256), Err(Error::out_of_memory(5000, "injected")));
    assert_eq!(limiting.allocated_bytes(), 0);

    assert_eq!(limiting.allocate_sync(10, 3), Err(Error::BadAlignment { alignment: 3, max: 1 << 30 }));
    assert_eq!(limiting.allocated_bytes(), 0);

    let p = limiting.allocate_sync(5000, 256).unwrap();
    assert_eq!(limiting.allocated_bytes(), 5120);
    spy.fail_frees.store(1, Ordering::SeqCst);
    assert_eq!(limiting.deallocate_sync(p, 5000, 256), Err(Error::InvalidArgument("injected".into())));
    assert_eq!(limiting.allocated_bytes(), 5120, "a rejected free subtracts nothing");
    assert_eq!(
        limiting.deallocate_sync(p, 4000, 256),
        Err(Error::Misuse(Misuse::WrongSize { ptr: p as usize, allocated: 5000, given: 4000 }))
    );
    assert_eq!(limiting.allocated_bytes(), 5120);
    limiting.deallocate_sync(p, 5000, 256).unwrap();
    assert_eq!(limiting.allocated_bytes(), 0);
    assert_eq!(spy.inner.outstanding(), (0, 0));
}

// ---------------------------------------------------------------------------------------------
// Logging
// ---------------------------------------------------------------------------------------------

/// One parsed CSV row.
#[derive(Debug)]
struct Row {
    thread: u64,
    action: String,
    ptr: usize,
    size: usize,
    stream: usize,
}

fn parse_hex(s: &str) -> usize {
    // RMM prints a null pointer as `(nil)` (glibc's %p) and the null stream as `0`.
    if s == "(nil)" || s == "0" {
        return 0;
    }
    let digits = s.strip_prefix("0x").unwrap_or_else(|| panic!("{s:?} lacks 0x"));
    usize::from_str_radix(digits, 16).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

fn parse_row(line: &str) -> Row {
    let f: Vec<&str> = line.split(',').collect();
    assert_eq!(f.len(), 6, "row {line:?}");
    let time = f[1].as_bytes();
    assert!(
        time.len() == 15
            && time[2] == b':'
            && time[5] == b':'
            && time[8] == b'.'
            && time.iter().enumerate().all(|(i, c)| [2, 5, 8].contains(&i) || c.is_ascii_digit()),
        "time {:?} is not HH:MM:SS.ffffff",
        f[1]
    );
    let action = f[2].to_string();
    assert!(["allocate", "allocate failure", "free"].contains(&action.as_str()), "action {action:?}");
    Row {
        thread: f[0].parse().unwrap_or_else(|e| panic!("thread {:?}: {e}", f[0])),
        action,
        ptr: parse_hex(f[3]),
        size: f[4].parse().unwrap_or_else(|e| panic!("size {:?}: {e}", f[4])),
        stream: parse_hex(f[5]),
    }
}

/// Replays a log as it is written: every free must match a live allocation of the same size.
#[derive(Default)]
struct Replay {
    partial: Vec<u8>,
    header_seen: bool,
    live: HashMap<usize, usize>,
    live_bytes: usize,
    allocs: usize,
    frees: usize,
    failures: usize,
    failure_bytes: usize,
    threads: HashSet<u64>,
    streams: HashSet<usize>,
}

impl Replay {
    fn line(&mut self, line: &str) {
        if !self.header_seen {
            assert_eq!(line, LOG_HEADER);
            self.header_seen = true;
            return;
        }
        let r = parse_row(line);
        self.threads.insert(r.thread);
        self.streams.insert(r.stream);
        match r.action.as_str() {
            "allocate" => {
                assert!(self.live.insert(r.ptr, r.size).is_none(), "{:#x} allocated twice", r.ptr);
                self.live_bytes += r.size;
                self.allocs += 1;
            }
            "free" => {
                assert_eq!(self.live.remove(&r.ptr), Some(r.size), "free of {:#x}", r.ptr);
                self.live_bytes -= r.size;
                self.frees += 1;
            }
            _ => {
                assert_eq!(r.ptr, 0);
                self.failures += 1;
                self.failure_bytes += r.size;
            }
        }
    }
}

/// A writer that feeds complete lines to a shared [`Replay`].
#[derive(Clone, Default)]
struct ReplayWriter(Arc<Mutex<Replay>>);

impl Write for ReplayWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut r = self.0.lock();
        r.partial.extend_from_slice(buf);
        while let Some(n) = r.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = r.partial.drain(..=n).collect();
            let text = String::from_utf8(line).expect("log is UTF-8");
            r.line(text.trim_end_matches('\n'));
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn logging_model_replays_exactly() {
    let s = seed("logging_model_replays_exactly", 0x1066_0001);
    let sink = ReplayWriter::default();
    let limit = 4 * MIB;
    let logging = LoggingResourceAdaptor::with_writer(
        LimitingResourceAdaptor::new(HostMemoryResource::new(), limit),
        Box::new(sink.clone()),
    )
    .with_auto_flush(true);
    let mut rng = Rng::new(s);
    let ooms = run_trace(&logging, &trace(OPS, true), &mut rng, true, |m| {
        // Auto-flush: the log is complete after every step.
        let r = sink.0.lock();
        assert_eq!((r.live.len(), r.live_bytes), (m.len(), m.live_bytes));
    });
    logging.flush().unwrap();
    let r = sink.0.lock();
    assert!(r.live.is_empty() && r.partial.is_empty());
    assert_eq!(r.allocs, r.frees);
    assert_eq!(r.failures, ooms);
    assert!(ooms > 0);
    assert_eq!(r.threads.len(), 1);
    assert_eq!(r.streams, streams().iter().map(|s| s.handle()).collect::<HashSet<_>>());
    assert_eq!(logging.upstream().upstream().outstanding(), (0, 0));
}

#[test]
fn logging_to_file_round_trips() {
    let path = std::env::temp_dir().join(format!("rmm-rs-logging-{}.csv", std::process::id()));
    let logging = LoggingResourceAdaptor::new(HostMemoryResource::new(), Some(&path)).unwrap();
    assert_eq!(logging.header(), "Thread,Time,Action,Pointer,Size,Stream");
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let s = unsafe { CudaStreamView::from_handle(0xabc) };
    let p = logging.allocate(1000, 256, s).unwrap();
    let q = logging.allocate_sync(24, 256).unwrap();
    assert!(logging.allocate(usize::MAX / 2, 256, s).unwrap_err().is_out_of_memory());
    logging.deallocate(p, 1000, 256, s).unwrap();
    logging.deallocate_sync(q, 24, 256).unwrap();
    // Zero bytes: forwarded and logged, as RMM does; the upstream answers null.
    let z = logging.allocate(0, 256, s).unwrap();
    assert!(z.is_null());
    logging.deallocate(z, 0, 256, s).unwrap();
    logging.flush().unwrap();

    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(LOG_HEADER));
    let rows: Vec<Row> = lines.map(parse_row).collect();
    let got: Vec<(&str, usize, usize, usize)> =
        rows.iter().map(|r| (r.action.as_str(), r.ptr, r.size, r.stream)).collect();
    assert_eq!(
        got,
        vec![
            ("allocate", p as usize, 1000, 0xabc),
            ("allocate", q as usize, 24, 0),
            ("allocate failure", 0, usize::MAX / 2, 0xabc),
            ("free", p as usize, 1000, 0xabc),
            ("free", q as usize, 24, 0),
            ("allocate", 0, 0, 0xabc),
            ("free", 0, 0, 0xabc),
        ]
    );
    assert!(text.contains(",allocate failure,(nil),"), "null printed as RMM does: {text}");
    assert!(text.contains(",24,0\n"), "the null stream printed as RMM does: {text}");
    assert!(text.contains(",0xabc\n"), "stream as hex: {text}");
}

/// The one test that touches `RMM_LOG_FILE`; the lock keeps any future one from racing it.
static ENV_LOCK: Mutex<()> = Mutex::new(());

#[test]
fn logging_file_from_env_or_invalid_argument() {
    let _guard = ENV_LOCK.lock();
    let saved = std::env::var_os("RMM_LOG_FILE");
    std::env::remove_var("RMM_LOG_FILE");
    let err = LoggingResourceAdaptor::new(HostMemoryResource::new(), None).unwrap_err();
    assert_eq!(err, Error::InvalidArgument("no log file: pass a filename or set RMM_LOG_FILE".into()));

    let path = std::env::temp_dir().join(format!("rmm-rs-logging-env-{}.csv", std::process::id()));
    std::env::set_var("RMM_LOG_FILE", &path);
    let logging = LoggingResourceAdaptor::new(HostMemoryResource::new(), None);
    match saved {
        Some(v) => std::env::set_var("RMM_LOG_FILE", v),
        None => std::env::remove_var("RMM_LOG_FILE"),
    }
    let logging = logging.unwrap();
    let p = logging.allocate_sync(8, 256).unwrap();
    logging.deallocate_sync(p, 8, 256).unwrap();
    logging.flush().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(text.lines().count(), 3);
    assert!(text.starts_with(LOG_HEADER));
}

#[test]
fn logging_creates_the_missing_folders_above_its_file_as_rmm_does() {
    let root = std::env::temp_dir().join(format!("rmm-rs-logging-folders-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let path = root.join("a").join("b").join("log.csv");
    let log = LoggingResourceAdaptor::new(HostMemoryResource::new(), Some(&path)).unwrap();
    let p = log.allocate(64, 256, CudaStreamView::DEFAULT).unwrap();
    log.deallocate(p, 64, 256, CudaStreamView::DEFAULT).unwrap();
    log.flush().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(LOG_HEADER), "{text}");
    drop(log);
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn logging_unwritable_path_is_io_error() {
    let err = LoggingResourceAdaptor::new(HostMemoryResource::new(), Some(Path::new("/dev/null/x.csv"))).unwrap_err();
    match err {
        Error::Io { path, message } => {
            assert_eq!(path, "/dev/null/x.csv");
            assert!(!message.is_empty());
        }
        other => panic!("expected Io, got {other:?}"),
    }
}

/// Accepts `budget` bytes, then fails every write.
struct FailingWriter {
    budget: usize,
}

impl Write for FailingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.budget < buf.len() {
            return Err(std::io::Error::other("disk full"));
        }
        self.budget -= buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn logging_write_errors_do_not_fail_allocations() {
    let logging =
        LoggingResourceAdaptor::with_writer(HostMemoryResource::new(), Box::new(FailingWriter { budget: 100 }))
            .with_auto_flush(true);
    let mut live = Vec::new();
    for i in 1..=50 {
        live.push((logging.allocate_sync(i * 10, 256).unwrap(), i * 10));
    }
    for (p, n) in live {
        logging.deallocate_sync(p, n, 256).unwrap();
    }
    let expected = Error::Io { path: "<writer>".into(), message: "disk full".into() };
    assert_eq!(logging.flush(), Err(expected.clone()));
    assert_eq!(logging.flush(), Err(expected), "the first error stays");
    assert_eq!(logging.upstream().outstanding(), (0, 0));
}

// ---------------------------------------------------------------------------------------------
// Failure callback
// ---------------------------------------------------------------------------------------------

#[test]
fn failure_callback_model() {
    let s = seed("failure_callback_model", 0xFA11_0001);
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    // Retry once per failing request (odd calls), then give up: with nothing freed in between
    // (one thread), every refused request calls back exactly twice.
    let adaptor = FailureCallbackResourceAdaptor::new(
        LimitingResourceAdaptor::new(HostMemoryResource::new(), 4 * MIB),
        move |_bytes| counted.fetch_add(1, Ordering::SeqCst).is_multiple_of(2),
    );
    let mut rng = Rng::new(s);
    let mut expected = 0usize;
    let mut watch = StepWatcher::default();
    let ooms = run_trace(&adaptor, &trace(OPS, false), &mut rng, true, |m| {
        match watch.step(m) {
            Step::Allocated(b) => expected += align_up(b, 256),
            Step::Freed(b) => expected -= align_up(b, 256),
            Step::Nothing => {}
        }
        assert_eq!(adaptor.upstream().allocated_bytes(), expected);
    });
    println!("failure_callback_model: {ooms} allocations refused");
    assert!(ooms > 1000);
    assert_eq!(calls.load(Ordering::SeqCst), 2 * ooms);
    assert_eq!(adaptor.upstream().upstream().outstanding(), (0, 0));
}

#[test]
fn failure_callback_frees_reserve_and_retry_succeeds() {
    let limiting = Arc::new(LimitingResourceAdaptor::new(HostMemoryResource::new(), 4096));
    let reserve_ptr = limiting.allocate_sync(3000, 256).unwrap();
    // Raw pointers are not Send; the reserve travels as an address.
    let reserve = Arc::new(Mutex::new(Some(reserve_ptr as usize)));
    let calls = Arc::new(AtomicUsize::new(0));
    let (up, res, cnt) = (limiting.clone(), reserve.clone(), calls.clone());
    let adaptor = FailureCallbackResourceAdaptor::new(limiting.clone(), move |bytes| {
        cnt.fetch_add(1, Ordering::SeqCst);
        assert_eq!(bytes, 2000);
        match res.lock().take() {
            Some(addr) => up.deallocate_sync(addr as *mut u8, 3000, 256).is_ok(),
            None => false,
        }
    });

    let p = adaptor.allocate_sync(2000, 256).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(reserve.lock().is_none());
    assert_eq!(limiting.allocated_bytes(), 2048);

    // Nothing left to free: the callback says no and the out-of-memory surfaces.
    let q = adaptor.allocate_sync(1000, 256).unwrap(); // fits: 3072 of 4096
    let err = adaptor.allocate_sync(2000, 256).unwrap_err();
    assert_eq!(
        err,
        Error::out_of_memory_verbatim(
            2000,
            None,
            "Exceeded memory limit 4096; Allocated bytes 3072; Requested bytes 2000\n"
        )
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    adaptor.deallocate_sync(p, 2000, 256).unwrap();
    adaptor.deallocate_sync(q, 1000, 256).unwrap();
    assert_eq!(limiting.allocated_bytes(), 0);
    assert_eq!(limiting.upstream().outstanding(), (0, 0));
}

#[test]
fn failure_callback_ignores_other_errors() {
    let calls = Arc::new(AtomicUsize::new(0));
    let cnt = calls.clone();
    let adaptor = FailureCallbackResourceAdaptor::new(Spy::new(HostMemoryResource::new()), move |_| {
        cnt.fetch_add(1, Ordering::SeqCst);
        true
    });
    assert_eq!(adaptor.allocate_sync(10, 3), Err(Error::BadAlignment { alignment: 3, max: 1 << 30 }));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    // Injected out-of-memory twice: two call-backs, then the third try succeeds.
    adaptor.upstream().fail_allocs.store(2, Ordering::SeqCst);
    let p = adaptor.allocate_sync(10, 256).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    adaptor.upstream().fail_frees.store(1, Ordering::SeqCst);
    assert_eq!(adaptor.deallocate_sync(p, 10, 256), Err(Error::InvalidArgument("injected".into())));
    adaptor.deallocate_sync(p, 10, 256).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(adaptor.upstream().inner.outstanding(), (0, 0));
}

// ---------------------------------------------------------------------------------------------
// Shared stacks under threads
// ---------------------------------------------------------------------------------------------

const THREADS: usize = 8;
const THREAD_OPS: usize = 100_000;

#[test]
fn threads_share_statistics_over_limiting() {
    let s = seed("threads_share_statistics_over_limiting", 0x7487_0001);
    let limit = 32 * MIB;
    let stack =
        Arc::new(StatisticsResourceAdaptor::new(LimitingResourceAdaptor::new(HostMemoryResource::new(), limit)));
    let results: Vec<(usize, usize, usize)> = (0..THREADS)
        .map(|i| {
            let stack = stack.clone();
            std::thread::spawn(move || {
                let mut t = trace(THREAD_OPS, true);
                // SAFETY: a stream name for resources over host memory: no driver call sees it.
                t.streams = vec![unsafe { CudaStreamView::from_handle(0x1000 + i) }];
                let mut rng = Rng::new(s.wrapping_add(i as u64));
                let (mut allocs, mut bytes) = (0, 0);
                let mut watch = StepWatcher::default();
                let ooms = run_trace(&*stack, &t, &mut rng, true, |m| {
                    if let Step::Allocated(b) = watch.step(m) {
                        allocs += 1;
                        bytes += b;
                    }
                    assert!(stack.upstream().allocated_bytes() <= limit);
                });
                (allocs, bytes, ooms)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    let allocs: usize = results.iter().map(|r| r.0).sum();
    let bytes: usize = results.iter().map(|r| r.1).sum();
    let ooms: usize = results.iter().map(|r| r.2).sum();
    println!("threads_share_statistics_over_limiting: {allocs} allocations, {ooms} refused");
    let counted = stack.counters();
    assert_eq!((counted.bytes.value, counted.bytes.total), (0, bytes as i64));
    assert_eq!((counted.allocations.value, counted.allocations.total), (0, allocs as i64));
    assert!(counted.bytes.peak as usize <= limit);
    assert_eq!(stack.upstream().allocated_bytes(), 0);
    assert_eq!(stack.upstream().upstream().outstanding(), (0, 0));
}

#[test]
fn threads_share_logging_over_tracking_over_statistics() {
    let s = seed("threads_share_logging_over_tracking_over_statistics", 0x7487_0002);
    let sink = ReplayWriter::default();
    let stack = Arc::new(LoggingResourceAdaptor::with_writer(
        TrackingResourceAdaptor::new(StatisticsResourceAdaptor::new(HostMemoryResource::new()), false),
        Box::new(sink.clone()),
    ));
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let stack = stack.clone();
            std::thread::spawn(move || {
                let mut t = trace(THREAD_OPS / 2, true);
                // SAFETY: a stream name for resources over host memory: no driver call sees it.
                t.streams = vec![unsafe { CudaStreamView::from_handle(0x1000 + i) }, CudaStreamView::PER_THREAD];
                run_trace(&*stack, &t, &mut Rng::new(s.wrapping_add(i as u64)), false, |_| {});
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    stack.flush().unwrap();
    let tracking = stack.upstream();
    assert_eq!((tracking.allocation_count(), tracking.allocated_bytes()), (0, 0));
    let stats = tracking.upstream();
    assert_eq!((stats.bytes_counter().value, stats.allocations_counter().value), (0, 0));
    assert_eq!(stats.upstream().outstanding(), (0, 0));
    // The interleaved log of all threads replays without conflicts.
    let r = sink.0.lock();
    assert!(r.live.is_empty() && r.partial.is_empty());
    assert_eq!(r.allocs as i64, stats.allocations_counter().total);
    assert_eq!(r.allocs, r.frees);
    assert_eq!(r.threads.len(), THREADS, "one stable id per thread");
}

/// Dask-CUDA's stack under threads on its non-waiting paths: while every thread holds its blocks,
/// the tracking map, its byte count and the statistics agree exactly with what the threads hold.
#[test]
fn threads_share_dasks_stack_on_the_non_waiting_paths() {
    const HELD: usize = 2_000;
    let s = seed("threads_share_dasks_stack_on_the_non_waiting_paths", 0x7487_0003);
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 256 * MIB, None).unwrap();
    let stack = Arc::new(StatisticsResourceAdaptor::new(TrackingResourceAdaptor::new(pool, false)));
    let barrier = Arc::new(std::sync::Barrier::new(THREADS + 1));
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let (stack, barrier) = (stack.clone(), barrier.clone());
            std::thread::spawn(move || {
                // SAFETY: a stream name for resources over host memory: no driver call sees it.
                let stream = unsafe { CudaStreamView::from_handle(0x1000 + i % 3) };
                let mut rng = Rng::new(s.wrapping_add(i as u64));
                let mut held = Vec::with_capacity(HELD);
                for round in 0..4 {
                    while held.len() < HELD {
                        let bytes = 1 + rng.below(64 * KIB);
                        let p = stack
                            .try_allocate_immediately(bytes, 256, stream)
                            .map_or_else(|| stack.allocate(bytes, 256, stream), Ok)
                            .unwrap();
                        held.push((p, bytes));
                    }
                    if round == 3 {
                        barrier.wait(); // everything held: the main thread checks
                        barrier.wait();
                    }
                    // Free a random half, the other half on the next round.
                    for _ in 0..HELD / 2 {
                        let (p, bytes) = held.swap_remove(rng.below(held.len()));
                        if !stack.try_deallocate_immediately(p, bytes, 256, stream) {
                            stack.deallocate(p, bytes, 256, stream).unwrap();
                        }
                    }
                }
                for (p, bytes) in held {
                    stack.deallocate(p, bytes, 256, stream).unwrap();
                }
            })
        })
        .collect();
    barrier.wait();
    let tracking = stack.upstream();
    let records = tracking.outstanding_allocations();
    let held: usize = records.iter().map(|r| r.bytes).sum();
    assert_eq!(records.len(), THREADS * HELD);
    assert_eq!((tracking.allocation_count(), tracking.allocated_bytes()), (THREADS * HELD, held));
    let counted = stack.counters();
    assert_eq!((counted.bytes.value, counted.allocations.value), (held as i64, (THREADS * HELD) as i64));
    assert!(counted.bytes.peak >= held as i64);
    barrier.wait();
    for h in handles {
        h.join().unwrap();
    }
    let counted = stack.counters();
    assert_eq!((counted.bytes.value, counted.allocations.value), (0, 0));
    assert_eq!((tracking.allocation_count(), tracking.allocated_bytes()), (0, 0));
}

// ---------------------------------------------------------------------------------------------
// Common behaviour of every adaptor
// ---------------------------------------------------------------------------------------------

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn adaptors_are_send_and_sync() {
    type Cb = fn(usize) -> bool;
    assert_send_sync::<StatisticsResourceAdaptor<HostMemoryResource>>();
    assert_send_sync::<TrackingResourceAdaptor<HostMemoryResource>>();
    assert_send_sync::<LimitingResourceAdaptor<HostMemoryResource>>();
    assert_send_sync::<LoggingResourceAdaptor<HostMemoryResource>>();
    assert_send_sync::<FailureCallbackResourceAdaptor<HostMemoryResource, Cb>>();
}

/// Zero bytes, null frees, identity and accessibility for one adaptor built over a [`Spy`].
///
/// `forwarded`: the (allocations, frees) of the zero-byte and null calls below that reach the
/// upstream: RMM's statistics, tracking, limiting and logging adaptors pass them on (limiting
/// checks the alignment first).
fn check_common<A: MemoryResource>(
    name: &str,
    forwarded: (usize, usize),
    make: impl Fn(Spy<HostMemoryResource>) -> A,
    spy: impl Fn(&A) -> &Spy<HostMemoryResource>,
) {
    let a = make(Spy::new(HostMemoryResource::new()));
    let b = make(Spy::new(HostMemoryResource::new()));
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let s = unsafe { CudaStreamView::from_handle(0x1234) };

    assert_eq!(a.allocate(0, 256, s), Ok(std::ptr::null_mut()), "{name}");
    assert_eq!(a.allocate(0, 3, s), Err(Error::BadAlignment { alignment: 3, max: 1 << 30 }), "{name}");
    assert_eq!(a.deallocate(std::ptr::null_mut(), 0, 256, s), Ok(()), "{name}");
    assert_eq!(a.deallocate(std::ptr::null_mut(), 64, 256, s), Ok(()), "{name}");
    assert_eq!(spy(&a).calls(), forwarded, "{name}: what reached the upstream");
    spy(&a).reset();

    assert!(a.is_equal(&a), "{name}");
    assert!(!a.is_equal(&b), "{name}");
    assert!(!a.is_equal(spy(&a)), "{name}: not equal to its own upstream");
    assert!(!spy(&a).is_equal(&a), "{name}");
    let shared = Arc::new(make(Spy::new(HostMemoryResource::new())));
    assert!(shared.is_equal(&shared.clone()), "{name}");
    assert!(shared.is_equal(&*shared), "{name}");

    assert!(!a.is_device_accessible(), "{name}");
    assert!(a.is_host_accessible(), "{name}");

    let p = a.allocate(100, 256, s).unwrap();
    a.deallocate(p, 100, 256, s).unwrap();
    assert_eq!(spy(&a).calls(), (1, 1), "{name}");
    assert_eq!(spy(&a).inner.outstanding(), (0, 0), "{name}");
}

/// The logging adaptor's part of [`check_common`]: as RMM's, it forwards zero-byte requests and
/// null frees to its upstream (and logs them) instead of answering them itself.
fn check_logging_forwards_zero_bytes_and_null_frees() {
    let make = |u| LoggingResourceAdaptor::with_writer(u, Box::new(std::io::sink()));
    let a = make(Spy::new(HostMemoryResource::new()));
    let b = make(Spy::new(HostMemoryResource::new()));
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let s = unsafe { CudaStreamView::from_handle(0x1234) };
    assert_eq!(a.allocate(0, 256, s), Ok(std::ptr::null_mut()));
    assert_eq!(a.allocate(0, 3, s), Err(Error::BadAlignment { alignment: 3, max: 1 << 30 }));
    assert_eq!(a.deallocate(std::ptr::null_mut(), 0, 256, s), Ok(()));
    assert_eq!(a.deallocate(std::ptr::null_mut(), 64, 256, s), Ok(()));
    assert_eq!(a.upstream().calls(), (2, 2), "every request reached the upstream");
    assert!(a.is_equal(&a) && !a.is_equal(&b) && !a.is_equal(a.upstream()));
    assert!(!a.is_device_accessible() && a.is_host_accessible());
    let p = a.allocate(100, 256, s).unwrap();
    a.deallocate(p, 100, 256, s).unwrap();
    assert_eq!(a.upstream().calls(), (3, 3));
    assert_eq!(a.upstream().inner.outstanding(), (0, 0));
}

#[test]
fn common_behaviour_of_every_adaptor() {
    check_common("statistics", (2, 1), StatisticsResourceAdaptor::new, |a| a.upstream());
    check_common("tracking", (2, 1), |u| TrackingResourceAdaptor::new(u, false), |a| a.upstream());
    check_common("limiting", (1, 1), |u| LimitingResourceAdaptor::new(u, 1 << 20), |a| a.upstream());
    check_logging_forwards_zero_bytes_and_null_frees();
    check_common("failure_callback", (0, 0), |u| FailureCallbackResourceAdaptor::new(u, |_| false), |a| a.upstream());

    // A zero-byte request counts as one allocation of 0 bytes, as in RMM.
    let stats = StatisticsResourceAdaptor::new(HostMemoryResource::new());
    stats.allocate_sync(0, 256).unwrap();
    assert_eq!(stats.allocations_counter().total, 1);
    assert_eq!(stats.bytes_counter(), CounterFrame::default().bytes);
    let tracking = TrackingResourceAdaptor::new(HostMemoryResource::new(), true);
    tracking.allocate_sync(0, 256).unwrap();
    assert_eq!(tracking.allocation_count(), 0);
    let limiting = LimitingResourceAdaptor::new(HostMemoryResource::new(), 0);
    assert_eq!(limiting.allocate_sync(0, 256), Ok(std::ptr::null_mut()), "zero bytes fit any limit");
    assert!(limiting.allocate_sync(1, 256).unwrap_err().is_out_of_memory());
}

/// Nanoseconds per allocate-or-free of `threads` threads together through `r`, each on its own
/// stream.
fn stack_ns_per_op(r: &dyn MemoryResource, threads: usize) -> f64 {
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    common::threads_bench::ns_per_op(r, threads, 200_000, |t| unsafe { CudaStreamView::from_handle(0x1000 * (t + 1)) })
}

/// Dask-CUDA's usual stack (statistics over tracking over a pool), each adaptor alone, and the
/// bare pool, over host memory, at 1, 2, 4 and 8 threads (STACK_THREADS: another list). Every
/// call of every thread takes the statistics' one counter lock and one of the tracking map's
/// shards.
#[test]
#[ignore = "a benchmark: cargo test --release --test adaptors -- --ignored --nocapture stack_under_threads"]
fn stack_under_threads() {
    let pool = || PoolMemoryResource::new(HostMemoryResource::new(), 1 << 30, None).unwrap();
    let counts: Vec<usize> = std::env::var("STACK_THREADS").map_or(vec![1, 2, 4, 8], |v| {
        v.split(',').map(|x| x.trim().parse().expect("STACK_THREADS: numbers")).collect()
    });
    for threads in counts {
        let stack = StatisticsResourceAdaptor::new(TrackingResourceAdaptor::new(pool(), false));
        let bare = stack_ns_per_op(&pool(), threads);
        let both = stack_ns_per_op(&stack, threads);
        let statistics = stack_ns_per_op(&StatisticsResourceAdaptor::new(pool()), threads);
        let tracking = stack_ns_per_op(&TrackingResourceAdaptor::new(pool(), false), threads);
        assert_eq!(stack.counters().allocations.value, 0);
        assert_eq!(stack.upstream().allocation_count(), 0);
        println!(
            "{threads:2} threads: pool {bare:6.1}, statistics -> tracking -> pool {both:6.1}, \
             statistics alone {statistics:6.1}, tracking alone {tracking:6.1} ns/op (aggregate)"
        );
    }
}
