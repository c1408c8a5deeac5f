//! Model-based tests at scale: every resource and adaptor takes a long randomized sequence of
//! allocations, frees and bad calls, each checked against a reference model as it happens — no two
//! live blocks overlap, every block is aligned, counters are exact at every step, bad frees are
//! refused with their exact error and change nothing, and everything is returned at the end.
//!
//! Operations per test: 10^7 in release builds (`cargo test --release --test model_scale`, what CI
//! runs), 1/100 of that in debug builds, or `RMM_MODEL_OPS` when set. The seed of every test is
//! printed; `RMM_TEST_SEED=<seed>` replays it. The GPU resources run the same checks when a CUDA
//! device is present and print `skipped: no CUDA device` otherwise.

mod common;

use common::{fake_streams, foreign_pointer, ops, seed, Model, Rng, Trace};
use parking_lot::Mutex;
use rmm::adaptor::logging::{format_log_pointer, format_log_stream};
use rmm::adaptor::{
    Counter, CounterFrame, FailureCallbackResourceAdaptor, LimitingResourceAdaptor, LoggingResourceAdaptor,
    StatisticsResourceAdaptor, TrackingResourceAdaptor, LOG_HEADER,
};
use rmm::pool::{StreamIdentity, StreamKey, StreamOrder};
use rmm::resource::{
    CudaAsyncMemoryResource, CudaMemoryResource, HostMemoryResource, ManagedMemoryResource, PinnedHostMemoryResource,
    PoolMemoryResource,
};
use rmm::{CudaStream, CudaStreamView, Error, MemoryResource, Misuse, Result};
use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;
/// The operation count each host test runs in a release build.
const SCALE: usize = 10_000_000;

/// `bytes` rounded up to the effective alignment (at least 256); the limiting adaptor accounts a
/// block as `align_up(bytes, 256)`.
fn align_up(bytes: usize, alignment: usize) -> usize {
    let a = alignment.max(256);
    bytes.div_ceil(a) * a
}

/// What the pool searches for: the rounded size plus the room an alignment above 256 may cost.
fn pool_needed(bytes: usize, alignment: usize) -> usize {
    align_up(bytes, 256) + alignment.max(256) - 256
}

// ---------------------------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------------------------

/// A live block, with the stream of its last call.
#[derive(Clone, Copy, Debug)]
struct Block {
    ptr: *mut u8,
    bytes: usize,
    alignment: usize,
    stream: CudaStreamView<'static>,
}

/// What one call did, handed to the test's checks with the model as it stands after the call.
enum Event<'a> {
    Allocated(&'a Block),
    /// The block as it was freed (its `stream` is the stream of the free).
    Freed(&'a Block),
    /// An allocation refused with out-of-memory (only when the plan allows it).
    Refused {
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView<'static>,
        error: &'a Error,
    },
    /// A bad call the resource refused as the driver expected.
    Rejected,
    /// A 0-byte allocation, freed at once (RMM's statistics adaptor counts it).
    ZeroBytes,
}

/// Which bad calls the driver makes, and which errors it expects for them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BadCalls {
    /// None at all (the logging adaptor logs a refused free, so its log would differ).
    None,
    /// Zero-byte allocations, null frees and bad alignments: every resource's contract.
    Edges,
    /// Also bad frees, refused as host memory and the adaptors refuse them: a double free or an
    /// interior pointer is an unknown pointer.
    Host,
    /// Also bad frees, refused as the pool refuses them: double free and interior pointer are
    /// told apart.
    Pool,
    /// As `Host`, but no free with a wrong size: the tracking adaptor frees such a block with the
    /// size it was allocated with, as RMM's does (tests/adaptors_zero_bytes_bad_frees.rs).
    Tracking,
}

/// A randomized run: the trace's shape, and what else the driver does.
struct Plan {
    trace: Trace<'static>,
    bad: BadCalls,
    allow_oom: bool,
    /// Free each block on the stream it was allocated on (stream-ordered device allocators need
    /// it); otherwise on a random stream.
    own_stream: bool,
}

impl Plan {
    fn new(trace: Trace<'static>) -> Self {
        Plan { trace, bad: BadCalls::None, allow_oom: false, own_stream: false }
    }
}

/// What a run did.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    /// Calls made and checked, bad ones included.
    calls: usize,
    allocs: usize,
    frees: usize,
    refused: usize,
    rejected: usize,
}

/// The tag written at both ends of a host-accessible block and checked when it is freed.
fn tag_of(b: &Block) -> u8 {
    ((b.ptr as usize >> 8) as u8) ^ (b.bytes as u8) ^ 0xA5
}

/// The last byte's tag (the first byte's, for a one-byte block).
fn last_tag_of(b: &Block) -> u8 {
    if b.bytes > 1 {
        !tag_of(b)
    } else {
        tag_of(b)
    }
}

fn write_tags(b: &Block) {
    // SAFETY: the block is live, host-accessible and `bytes` (≥ 1) long; no other block overlaps
    // it (the model checked), so nothing else writes these bytes.
    unsafe {
        b.ptr.write(tag_of(b));
        b.ptr.add(b.bytes - 1).write(last_tag_of(b));
    }
}

fn check_tags(b: &Block) {
    // SAFETY: as in `write_tags`; the block is still live (this runs before its free).
    let (first, last) = unsafe { (b.ptr.read(), b.ptr.add(b.bytes - 1).read()) };
    let (t, l) = (tag_of(b), last_tag_of(b));
    assert!(
        last == l && (b.bytes == 1 || first == t),
        "block {:p}+{} was overwritten: tags {first:#x}/{last:#x}, expected {t:#x}/{l:#x}",
        b.ptr,
        b.bytes
    );
}

/// The error a bad free must get.
fn expected_misuse(bad: BadCalls, misuse: Misuse) -> Error {
    let host_view = match misuse {
        Misuse::DoubleFree { ptr } | Misuse::InteriorPointer { ptr, .. } => Misuse::UnknownPointer { ptr },
        m => m,
    };
    Error::Misuse(if bad == BadCalls::Pool { misuse } else { host_view })
}

/// Checks that a bad call got exactly `want`, then shows it to the test's checks.
fn expect_rejected(n: &mut Tally, model: &Model, rejected: Rejection, check: &mut impl FnMut(Event<'_>, &Model)) {
    let (got, want, what) = rejected;
    assert_eq!(got, Err(want), "{what}");
    n.rejected += 1;
    check(Event::Rejected, model);
}

/// What a bad free returned, the error it must return, and what it was.
type Rejection = (Result<()>, Error, &'static str);

/// What `bad_call` returns for a 0-byte allocation and its free, which are no rejection.
const ZERO_BYTES: Rejection = (Ok(()), Error::InvalidArgument(String::new()), "zero bytes");

/// One bad call naming the live block `b`: the edge cases are checked here, the bad frees are
/// returned for the caller to check.
fn bad_call<R: MemoryResource + ?Sized>(
    r: &R,
    bad: BadCalls,
    b: Block,
    stream: CudaStreamView<'static>,
    rng: &mut Rng,
) -> Option<Rejection> {
    let kinds = if bad == BadCalls::Edges { 3 } else { 6 };
    let mut kind = rng.below(kinds);
    if bad == BadCalls::Tracking && kind == 3 {
        kind = 5;
    }
    match kind {
        0 => {
            assert_eq!(r.allocate(0, 256, stream), Ok(std::ptr::null_mut()), "zero bytes give null");
            assert_eq!(r.deallocate(std::ptr::null_mut(), 0, 256, stream), Ok(()), "its free");
            return Some(ZERO_BYTES);
        }
        1 => assert_eq!(r.deallocate(std::ptr::null_mut(), b.bytes, 256, stream), Ok(()), "null free"),
        2 => {
            let alignment = [0, 3, 384, 1 << 40][rng.below(4)];
            match r.allocate(b.bytes, alignment, stream) {
                Err(Error::BadAlignment { alignment: a, .. }) if a == alignment => {}
                other => panic!("alignment {alignment}: expected BadAlignment, got {other:?}"),
            }
        }
        3 => {
            let given = if b.bytes > 1 && rng.below(2) == 0 { b.bytes - 1 } else { b.bytes + 1 };
            let want = Error::Misuse(Misuse::WrongSize { ptr: b.ptr as usize, allocated: b.bytes, given });
            return Some((r.deallocate(b.ptr, given, b.alignment, stream), want, "free with the wrong size"));
        }
        4 if b.bytes > 1 => {
            let q = b.ptr.wrapping_add(1 + rng.below(b.bytes - 1));
            let misuse = Misuse::InteriorPointer { ptr: q as usize, block_start: b.ptr as usize };
            let got = r.deallocate(q, b.bytes, b.alignment, stream);
            return Some((got, expected_misuse(bad, misuse), "free of an interior pointer"));
        }
        _ => {
            let q = foreign_pointer(rng);
            let want = Error::Misuse(Misuse::UnknownPointer { ptr: q as usize });
            return Some((r.deallocate(q, b.bytes, 256, stream), want, "free of a foreign pointer"));
        }
    }
    None
}

/// Runs `plan` on `r`: every result is checked against a [`Model`] (no overlap, alignment), every
/// host-accessible block carries tags at both ends that must be intact when it is freed, every bad
/// call must get its exact error, and `check` sees each call with the model after it. Frees every
/// block at the end.
fn drive<R: MemoryResource + ?Sized>(
    r: &R,
    plan: &Plan,
    rng: &mut Rng,
    mut check: impl FnMut(Event<'_>, &Model),
) -> Tally {
    let t = &plan.trace;
    let tags = r.is_host_accessible();
    let bad_frees = matches!(plan.bad, BadCalls::Host | BadCalls::Pool | BadCalls::Tracking);
    let mut model = Model::default();
    let mut live: Vec<Block> = Vec::with_capacity(t.max_live);
    let mut n = Tally::default();
    for _ in 0..t.ops {
        n.calls += 1;
        let stream = t.streams[rng.below(t.streams.len())];
        if plan.bad != BadCalls::None && !live.is_empty() && rng.below(512) == 0 {
            let b = live[rng.below(live.len())];
            match bad_call(r, plan.bad, b, stream, rng) {
                Some((Ok(()), _, "zero bytes")) => check(Event::ZeroBytes, &model),
                Some(rejected) => expect_rejected(&mut n, &model, rejected, &mut check),
                None => {}
            }
            continue;
        }
        let allocate = live.len() < t.max_live && (live.is_empty() || rng.below(100) < t.alloc_pct);
        if allocate {
            let bytes = rng.log_uniform(t.min_size, t.max_size);
            let alignment = if t.big_alignments && rng.below(16) == 0 { 256 << rng.below(5) } else { 256 };
            match r.allocate(bytes, alignment, stream) {
                Ok(ptr) => {
                    model.insert(ptr, bytes, alignment);
                    let b = Block { ptr, bytes, alignment, stream };
                    if tags {
                        write_tags(&b);
                    }
                    live.push(b);
                    n.allocs += 1;
                    check(Event::Allocated(&b), &model);
                }
                Err(e) if plan.allow_oom && e.is_out_of_memory() => {
                    n.refused += 1;
                    check(Event::Refused { bytes, alignment, stream, error: &e }, &model);
                }
                Err(e) => panic!("allocate({bytes}, {alignment}) failed: {e}"),
            }
        } else {
            let mut b = live.swap_remove(rng.below(live.len()));
            let on = if plan.own_stream { b.stream } else { stream };
            free_block(r, &mut b, on, tags, &mut model);
            n.frees += 1;
            // The same free again at once, before the test's check runs: a check may allocate (the
            // failure-callback test takes its ballast back), and malloc may hand out the address
            // just freed, which would make the second free a different mistake.
            let again = (bad_frees && rng.below(512) == 0).then(|| r.deallocate(b.ptr, b.bytes, b.alignment, b.stream));
            check(Event::Freed(&b), &model);
            if let Some(got) = again {
                n.calls += 1;
                let want = expected_misuse(plan.bad, Misuse::DoubleFree { ptr: b.ptr as usize });
                expect_rejected(&mut n, &model, (got, want, "double free"), &mut check);
            }
        }
    }
    while let Some(mut b) = live.pop() {
        n.calls += 1;
        let on = if plan.own_stream { b.stream } else { t.streams[0] };
        free_block(r, &mut b, on, tags, &mut model);
        n.frees += 1;
        check(Event::Freed(&b), &model);
    }
    assert_eq!((model.len(), model.live_bytes), (0, 0));
    n
}

fn free_block<R: MemoryResource + ?Sized>(
    r: &R,
    b: &mut Block,
    stream: CudaStreamView<'static>,
    tags: bool,
    model: &mut Model,
) {
    if tags {
        check_tags(b);
    }
    model.remove(b.ptr);
    b.stream = stream;
    r.deallocate(b.ptr, b.bytes, b.alignment, stream)
        .unwrap_or_else(|e| panic!("deallocate({:p}, {}) failed: {e}", b.ptr, b.bytes));
}

/// Prints what a run did (shown with `--show-output`, and on failure).
fn report(test: &str, n: &Tally) {
    println!(
        "{test}: {} calls checked: {} allocations, {} frees, {} refused for lack of memory, {} bad calls rejected",
        n.calls, n.allocs, n.frees, n.refused, n.rejected
    );
}

// ---------------------------------------------------------------------------------------------
// Resources on the host
// ---------------------------------------------------------------------------------------------

#[test]
fn host_resource_at_scale() {
    let name = "host_resource_at_scale";
    let mut rng = Rng::new(seed(name, 0x5CA1_0001));
    let host = HostMemoryResource::new();
    let trace = Trace {
        ops: ops(name, SCALE),
        max_live: 1000,
        max_size: 256 * KIB,
        streams: fake_streams(3),
        big_alignments: true,
        ..Trace::default()
    };
    let plan = Plan { bad: BadCalls::Host, ..Plan::new(trace) };
    let mut step = 0usize;
    let n = drive(&host, &plan, &mut rng, |e, m| {
        step += 1;
        // The live map is summed on each call, so it is compared now and then and after every
        // bad call (which must have left it as it was).
        if step.is_multiple_of(64) || matches!(e, Event::Rejected) {
            assert_eq!(host.outstanding(), (m.len(), m.live_bytes));
        }
    });
    report(name, &n);
    assert_eq!(host.outstanding(), (0, 0));
}

/// The pool over host memory with a maximum: growth from a small first chunk, six streams (the
/// legacy and per-thread default streams among them), alignments up to 4 KiB, out-of-memory at
/// the maximum, and every bad free.
#[test]
fn pool_at_scale_with_a_maximum() {
    let name = "pool_at_scale_with_a_maximum";
    let mut rng = Rng::new(seed(name, 0x5CA1_0002));
    let upstream = Arc::new(HostMemoryResource::new());
    let max = 96 * MIB;
    let pool = PoolMemoryResource::new(upstream.clone(), MIB, Some(max)).unwrap();
    let mut streams = fake_streams(4);
    streams.extend([CudaStreamView::DEFAULT, CudaStreamView::PER_THREAD]);
    let trace = Trace {
        ops: ops(name, SCALE),
        max_live: 2000,
        max_size: MIB,
        streams,
        big_alignments: true,
        ..Trace::default()
    };
    let plan = Plan { bad: BadCalls::Pool, allow_oom: true, ..Plan::new(trace) };
    let mut checker = PoolChecker::new(max, None);
    let n = drive(&pool, &plan, &mut rng, |e, m| checker.see(&pool, e, m));
    report(name, &n);
    assert!(plan.trace.ops < 10_000 || (n.refused > 0 && n.rejected > 0), "out-of-memory and bad frees were exercised");
    pool.check_invariants().unwrap();
    let st = pool.state();
    assert_eq!(st.free_bytes, st.pool_size, "every block came back");
    drop(pool);
    assert_eq!(upstream.outstanding(), (0, 0), "the upstream got every chunk back");
}

/// More chunks than a pool under test holds at once.
const MAX_ODD_CHUNKS: usize = 1 << 12;

/// The checks every pool test makes after each call.
struct PoolChecker {
    /// The maximum size: growth must stop only there, or where the upstream refuses.
    limit: usize,
    /// The chunk sizes the upstream refused during the current call, if it ever refuses.
    upstream_refused: Option<Arc<Mutex<Vec<usize>>>>,
    step: usize,
    last_size: usize,
    /// The live bytes, each block rounded up to 256, kept call by call.
    rounded: usize,
}

impl PoolChecker {
    fn new(limit: usize, upstream_refused: Option<Arc<Mutex<Vec<usize>>>>) -> Self {
        PoolChecker { limit, upstream_refused, step: 0, last_size: 0, rounded: 0 }
    }

    fn see<U: MemoryResource>(&mut self, pool: &PoolMemoryResource<U>, e: Event<'_>, m: &Model) {
        self.step += 1;
        match e {
            Event::Allocated(b) => self.rounded += align_up(b.bytes, 256),
            Event::Freed(b) => self.rounded -= align_up(b.bytes, 256),
            _ => {}
        }
        let st = pool.state();
        // Blocks are cut to their rounded size exactly (alignment gaps stay free), so the bytes in
        // use are exact whatever the streams and alignments, but for the last bytes (under 256)
        // of chunks whose size is not a multiple of 256, which RMM's rule under a maximum asks for.
        let used = st.pool_size - st.free_bytes;
        assert!(
            used >= self.rounded && used - self.rounded < 256 * MAX_ODD_CHUNKS,
            "bytes in use after call {}: {used}, live {}",
            self.step,
            self.rounded
        );
        // Under a maximum, as in RMM: the room left is rounded up to 256 bytes (so the pool may
        // pass the maximum by less than that), and wholly free chunks go back to the upstream
        // before a request larger than the room left.
        let shrinks = self.limit != usize::MAX;
        assert!(
            st.pool_size < self.limit.saturating_add(256) && (shrinks || st.pool_size >= self.last_size),
            "pool size {st:?} (was {})",
            self.last_size
        );
        self.last_size = st.pool_size;
        match e {
            Event::Refused { bytes, alignment, error, .. } => {
                assert_eq!(*error, Error::out_of_memory_verbatim(bytes, Some(st), oom_reason(error)));
                // Growth backs off to exactly what the request needs before giving up, so a
                // refusal means that much would pass the maximum, or the upstream refused it.
                let needed = pool_needed(bytes, alignment);
                let past_limit = st.pool_size + needed > self.limit;
                let refused = self.upstream_refused.as_ref().is_some_and(|r| r.lock().contains(&needed));
                assert!(past_limit || refused, "refused {bytes} B (needs {needed}) with room: {st:?}");
            }
            // A bad free changes nothing, the block structure included.
            Event::Rejected => pool.check_invariants().unwrap(),
            Event::ZeroBytes => {}
            _ => {}
        }
        if let Some(r) = &self.upstream_refused {
            r.lock().clear();
        }
        if self.step.is_multiple_of(200_000) {
            assert_eq!(self.rounded, m.rounded_live_bytes());
            pool.check_invariants().unwrap();
        }
    }
}

/// The reason of an out-of-memory error (the checks compare everything else exactly).
fn oom_reason(e: &Error) -> String {
    match e {
        Error::OutOfMemory { reason, .. } => reason.clone(),
        other => panic!("expected out of memory, got {other}"),
    }
}

/// A stream order for host memory that claims streams need ordering, so the pool's hand-over
/// paths (publish on request, wait, merge, synchronise) all run, and that fails now and then, as
/// a CUDA event call can.
struct FlakyOrder {
    rng: Mutex<Rng>,
    /// record ok/failed, wait ok/failed, synchronize_all ok/failed.
    calls: Arc<[AtomicUsize; 6]>,
}

impl FlakyOrder {
    fn answer(&self, which: usize, fail_one_in: usize, call: &'static str) -> Result<()> {
        let fail = self.rng.lock().below(fail_one_in) == 0;
        self.calls[which + fail as usize].fetch_add(1, Ordering::Relaxed);
        if fail {
            Err(Error::Cuda { call, code: 999, name: "CUDA_ERROR_UNKNOWN".into() })
        } else {
            Ok(())
        }
    }
}

impl StreamOrder for FlakyOrder {
    fn record(&self, _owner: StreamKey, _identity: StreamIdentity) -> Result<()> {
        self.answer(0, 8, "cuEventRecord")
    }
    fn wait(&self, _owner: StreamKey, _identity: StreamIdentity, _waiter: StreamKey) -> Result<()> {
        self.answer(2, 8, "cuStreamWaitEvent")
    }
    fn synchronize_all(&self) -> Result<()> {
        self.answer(4, 4, "cuCtxSynchronize")
    }
}

/// Host memory under a limit that also refuses a quarter of all requests, as a device shared with
/// other processes may; it remembers what it refused, so a test can tell why a pool ran out.
struct FlakyUpstream {
    inner: LimitingResourceAdaptor<HostMemoryResource>,
    rng: Mutex<Rng>,
    refused: Arc<Mutex<Vec<usize>>>,
    /// Bytes handed out and not yet given back, as asked (the limit counts them rounded up to 256).
    held: AtomicUsize,
}

// SAFETY: blocks come from a limiting adaptor over host memory unchanged and go back to it; the
// answers below say host memory.
unsafe impl MemoryResource for FlakyUpstream {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        let result = if self.rng.lock().below(4) == 0 {
            Err(Error::out_of_memory(bytes, "refused at random"))
        } else {
            self.inner.allocate(bytes, alignment, stream)
        };
        match result {
            Ok(_) => self.held.fetch_add(bytes, Ordering::Relaxed),
            Err(_) => {
                self.refused.lock().push(bytes);
                0
            }
        };
        result
    }
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        self.inner.deallocate(ptr, bytes, alignment, stream)?;
        self.held.fetch_sub(bytes, Ordering::Relaxed);
        Ok(())
    }
    fn is_device_accessible(&self) -> bool {
        false
    }
    fn is_host_accessible(&self) -> bool {
        true
    }
}

/// The pool with ordered streams and an upstream that runs out and refuses at random: growth
/// backs off to exactly the request's need, blocks move between streams only through publish and
/// wait (which sometimes fail), and the pool's size always equals what the upstream handed out.
#[test]
fn pool_at_scale_with_ordered_streams_and_a_failing_upstream() {
    let name = "pool_at_scale_with_ordered_streams_and_a_failing_upstream";
    let s = seed(name, 0x5CA1_0003);
    let mut rng = Rng::new(s);
    let limit = 48 * MIB;
    let upstream = Arc::new(FlakyUpstream {
        inner: LimitingResourceAdaptor::new(HostMemoryResource::new(), limit),
        rng: Mutex::new(Rng::new(s ^ 0xF1A4)),
        refused: Arc::default(),
        held: AtomicUsize::new(0),
    });
    let calls = Arc::new(Default::default());
    let order = FlakyOrder { rng: Mutex::new(Rng::new(s ^ 0x0DE5)), calls: Arc::clone(&calls) };
    // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
    let pool = unsafe { PoolMemoryResource::with_stream_order(upstream.clone(), 0, None, Box::new(order)) }.unwrap();
    let mut streams = fake_streams(5);
    streams.push(CudaStreamView::PER_THREAD);
    let trace = Trace {
        ops: ops(name, SCALE),
        max_live: 1000,
        max_size: 512 * KIB,
        streams,
        big_alignments: true,
        ..Trace::default()
    };
    let plan = Plan { bad: BadCalls::Pool, allow_oom: true, ..Plan::new(trace) };
    let mut checker = PoolChecker::new(usize::MAX, Some(upstream.refused.clone()));
    let n = drive(&pool, &plan, &mut rng, |e, m| {
        checker.see(&pool, e, m);
        let handed_out = upstream.held.load(Ordering::Relaxed);
        assert_eq!(handed_out, pool.pool_size(), "the pool's size is what the upstream handed out");
    });
    report(name, &n);
    let c: Vec<usize> = calls.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    println!(
        "{name}: record {}+{} failed, wait {}+{} failed, synchronize_all {}+{} failed",
        c[0], c[1], c[2], c[3], c[4], c[5]
    );
    if plan.trace.ops >= 100_000 {
        assert!(c.iter().all(|&k| k > 0), "every ordering path ran and failed at times: {c:?}");
        assert!(n.refused > 0 && n.rejected > 0);
    }
    pool.check_invariants().unwrap();
    let st = pool.state();
    assert_eq!(st.free_bytes, st.pool_size);
    drop(pool);
    assert_eq!(upstream.inner.allocated_bytes(), 0);
    assert_eq!(upstream.inner.upstream().outstanding(), (0, 0));
}

// ---------------------------------------------------------------------------------------------
// Adaptors over host memory
// ---------------------------------------------------------------------------------------------

/// The counter stack as RMM documents it, kept by the test.
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
fn statistics_at_scale() {
    let name = "statistics_at_scale";
    let s = seed(name, 0x5CA1_0004);
    let mut rng = Rng::new(s);
    let mut side = Rng::new(s ^ 0x51DE);
    let stats = StatisticsResourceAdaptor::new(HostMemoryResource::new());
    let trace = Trace {
        ops: ops(name, SCALE),
        max_size: 64 * KIB,
        streams: fake_streams(4),
        big_alignments: true,
        ..Trace::default()
    };
    let plan = Plan { bad: BadCalls::Host, ..Plan::new(trace) };
    let mut reference = RefStack(vec![CounterFrame::default()]);
    let (mut pushes, mut pops) = (0usize, 0usize);
    let (mut peak, mut count_peak, mut total, mut count_total) = (0i64, 0i64, 0i64, 0i64);
    let mut zero_pairs = 0usize;
    let n = drive(&stats, &plan, &mut rng, |e, m| {
        match e {
            Event::Allocated(b) => {
                RefStack::add(&mut reference.top().bytes, b.bytes as i64);
                RefStack::add(&mut reference.top().allocations, 1);
                total += b.bytes as i64;
                count_total += 1;
            }
            Event::Freed(b) => {
                reference.top().bytes.value -= b.bytes as i64;
                reference.top().allocations.value -= 1;
            }
            Event::Refused { .. } => panic!("host memory ran out"),
            Event::Rejected => {}
            Event::ZeroBytes => {
                // One allocation of 0 bytes, freed at once.
                RefStack::add(&mut reference.top().allocations, 1);
                reference.top().allocations.value -= 1;
                count_total += 1;
                zero_pairs += 1;
                count_peak = count_peak.max(m.len() as i64 + 1);
            }
        }
        peak = peak.max(m.live_bytes as i64);
        count_peak = count_peak.max(m.len() as i64);
        assert_eq!(stats.counters(), *reference.top(), "counters after {} allocations", count_total);
        // Now and then a nested region opens or closes.
        match side.below(2000) {
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
    report(name, &n);
    println!("{name}: {pushes} pushes, {pops} pops");
    while reference.0.len() > 1 {
        let popped = reference.0.pop().unwrap();
        assert_eq!(stats.pop_counters().unwrap(), popped);
        RefStack::merge(&mut reference.top().bytes, &popped.bytes);
        RefStack::merge(&mut reference.top().allocations, &popped.allocations);
    }
    assert!(stats.pop_counters().is_err(), "only the first frame is left");
    // Every nested frame folded back gives the whole run's figures.
    let whole = |value, peak, total| Counter { value, peak, total };
    assert_eq!(stats.bytes_counter(), whole(0, peak, total));
    assert_eq!(stats.allocations_counter(), whole(0, count_peak, count_total));
    assert_eq!(count_total as usize, n.allocs + zero_pairs);
    assert_eq!(stats.upstream().outstanding(), (0, 0));
}

#[test]
fn tracking_at_scale() {
    let name = "tracking_at_scale";
    let mut rng = Rng::new(seed(name, 0x5CA1_0005));
    let tracking = TrackingResourceAdaptor::new(HostMemoryResource::new(), false);
    let trace = Trace {
        ops: ops(name, SCALE),
        max_size: 64 * KIB,
        streams: fake_streams(4),
        big_alignments: true,
        ..Trace::default()
    };
    let plan = Plan { bad: BadCalls::Tracking, ..Plan::new(trace) };
    let mut step = 0usize;
    let n = drive(&tracking, &plan, &mut rng, |e, m| {
        step += 1;
        assert_eq!((tracking.allocation_count(), tracking.allocated_bytes()), (m.len(), m.live_bytes));
        // A bad free is passed to the upstream, which refuses it.
        if step.is_multiple_of(64) || matches!(e, Event::Rejected) {
            assert_eq!(tracking.upstream().outstanding(), (m.len(), m.live_bytes));
        }
        if step.is_multiple_of(100_000) {
            let snap = tracking.outstanding_allocations();
            assert_eq!(snap.len(), m.len());
            assert_eq!(snap.iter().map(|r| r.bytes).sum::<usize>(), m.live_bytes);
            assert!(snap.windows(2).all(|w| w[0].ptr < w[1].ptr), "sorted by address");
            assert!(snap.iter().all(|r| r.stack.is_none() && r.alignment >= 256));
        }
    });
    report(name, &n);
    assert_eq!(tracking.report(), "0 outstanding allocations, 0 bytes\n");
    assert_eq!(tracking.upstream().outstanding(), (0, 0));
}

#[test]
fn limiting_at_scale() {
    let name = "limiting_at_scale";
    let mut rng = Rng::new(seed(name, 0x5CA1_0006));
    let limit = 16 * MIB;
    let limiting = LimitingResourceAdaptor::new(HostMemoryResource::new(), limit);
    let trace = Trace {
        ops: ops(name, SCALE),
        max_size: 256 * KIB,
        streams: fake_streams(4),
        big_alignments: true,
        ..Trace::default()
    };
    let plan = Plan { bad: BadCalls::Host, allow_oom: true, ..Plan::new(trace) };
    let mut accounted = 0usize;
    let n = drive(&limiting, &plan, &mut rng, |e, _m| {
        match e {
            Event::Allocated(b) => {
                accounted += align_up(b.bytes, 256);
                assert!(accounted <= limit);
            }
            Event::Freed(b) => accounted -= align_up(b.bytes, 256),
            Event::Refused { bytes, error, .. } => {
                // Refused exactly when the request would pass the limit.
                assert!(accounted + align_up(bytes, 256) > limit, "refused with room: {error}");
                let message =
                    format!("Exceeded memory limit {limit}; Allocated bytes {accounted}; Requested bytes {bytes}\n");
                assert_eq!(*error, Error::out_of_memory_verbatim(bytes, None, message));
            }
            Event::Rejected | Event::ZeroBytes => {}
        }
        assert_eq!(limiting.allocated_bytes(), accounted);
    });
    report(name, &n);
    assert!(plan.trace.ops < 10_000 || n.refused > plan.trace.ops / 1000, "the limit was reached often");
    assert_eq!(limiting.allocated_bytes(), 0);
    assert_eq!(limiting.upstream().outstanding(), (0, 0));
}

/// One expected log row: action, pointer, size, stream.
type Row = (&'static str, usize, usize, usize);

fn row_of(e: &Event<'_>) -> Option<Row> {
    match *e {
        Event::Allocated(b) => Some(("allocate", b.ptr as usize, b.bytes, b.stream.handle())),
        Event::Freed(b) => Some(("free", b.ptr as usize, b.bytes, b.stream.handle())),
        Event::Refused { bytes, stream, .. } => Some(("allocate failure", 0, bytes, stream.handle())),
        Event::Rejected | Event::ZeroBytes => None,
    }
}

/// Checks one log line against the row expected next.
fn check_line(line: &str, thread: u64, want: Row) {
    let f: Vec<&str> = line.split(',').collect();
    assert_eq!(f.len(), 6, "row {line:?}");
    let time = f[1].as_bytes();
    assert!(
        time.len() == 15
            && time.iter().enumerate().all(|(i, &c)| match i {
                2 | 5 => c == b':',
                8 => c == b'.',
                _ => c.is_ascii_digit(),
            }),
        "time in {line:?} is not HH:MM:SS.ffffff"
    );
    let got = (f[0], f[2], f[3], f[4], f[5]);
    let (action, ptr, size, stream) = want;
    let want = (thread.to_string(), action, format_log_pointer(ptr), size.to_string(), format_log_stream(stream));
    assert_eq!(got, (want.0.as_str(), want.1, want.2.as_str(), want.3.as_str(), want.4.as_str()), "row {line:?}");
}

/// The rows a log must hold, in order, and what has arrived so far.
#[derive(Default)]
struct LogCheck {
    expected: VecDeque<Row>,
    partial: Vec<u8>,
    header_seen: bool,
    rows: usize,
    thread: u64,
}

/// A log destination that checks every line against [`LogCheck`] as it arrives.
#[derive(Clone)]
struct CheckingWriter(Arc<Mutex<LogCheck>>);

impl Write for CheckingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut c = self.0.lock();
        c.partial.extend_from_slice(buf);
        while let Some(end) = c.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = c.partial.drain(..=end).collect();
            let line = std::str::from_utf8(&line[..end]).expect("the log is UTF-8");
            if !c.header_seen {
                assert_eq!(line, LOG_HEADER);
                c.header_seen = true;
                continue;
            }
            // A row reaches the writer only after the call it describes returned (rows are
            // buffered), so its expectation is already queued.
            let want = c.expected.pop_front().unwrap_or_else(|| panic!("unexpected row {line:?}"));
            check_line(line, c.thread, want);
            c.rows += 1;
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every row of a 10^7-call log is checked as it is written: thread, time format, action, pointer,
/// size and stream, in order.
#[test]
fn logging_at_scale_every_row_checked() {
    let name = "logging_at_scale_every_row_checked";
    let mut rng = Rng::new(seed(name, 0x5CA1_0007));
    let check =
        Arc::new(Mutex::new(LogCheck { thread: rmm::adaptor::logging::log_thread_id(), ..LogCheck::default() }));
    let logging = LoggingResourceAdaptor::with_writer(
        LimitingResourceAdaptor::new(HostMemoryResource::new(), 8 * MIB),
        Box::new(CheckingWriter(check.clone())),
    );
    let trace = Trace {
        ops: ops(name, SCALE),
        max_size: 256 * KIB,
        streams: fake_streams(4),
        big_alignments: true,
        ..Trace::default()
    };
    let plan = Plan { allow_oom: true, ..Plan::new(trace) };
    let n = drive(&logging, &plan, &mut rng, |e, _m| {
        if let Some(row) = row_of(&e) {
            check.lock().expected.push_back(row);
        }
    });
    report(name, &n);
    logging.flush().unwrap();
    let c = check.lock();
    assert!(c.header_seen && c.partial.is_empty() && c.expected.is_empty(), "every row arrived");
    assert_eq!(c.rows, n.allocs + n.frees + n.refused);
    assert!(plan.trace.ops < 10_000 || n.refused > 0, "failures were logged");
    assert_eq!(logging.upstream().upstream().outstanding(), (0, 0));
}

/// Removes a temporary file when the test ends, passed or failed.
struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A tenth of the scale run, logged to a real file, which is then read back whole: the line count
/// and every row.
#[test]
fn logging_to_a_file_at_scale() {
    let name = "logging_to_a_file_at_scale";
    let mut rng = Rng::new(seed(name, 0x5CA1_0008));
    let file = TempFile(std::env::temp_dir().join(format!("rmm-rs-model-scale-{}.csv", std::process::id())));
    let logging =
        LoggingResourceAdaptor::new(LimitingResourceAdaptor::new(HostMemoryResource::new(), 8 * MIB), Some(&file.0))
            .unwrap();
    let trace = Trace {
        ops: ops(name, SCALE / 10),
        max_size: 256 * KIB,
        streams: fake_streams(4),
        big_alignments: true,
        ..Trace::default()
    };
    let plan = Plan { allow_oom: true, ..Plan::new(trace) };
    let mut rows = Vec::new();
    let n = drive(&logging, &plan, &mut rng, |e, _m| rows.extend(row_of(&e)));
    report(name, &n);
    logging.flush().unwrap();
    let text = std::fs::read_to_string(&file.0).unwrap();
    assert_eq!(text.lines().count(), 1 + rows.len(), "header and one line per call");
    assert!(text.ends_with('\n'));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(LOG_HEADER));
    let thread = rmm::adaptor::logging::log_thread_id();
    for (line, want) in lines.zip(rows) {
        check_line(line, thread, want);
    }
    assert_eq!(logging.upstream().upstream().outstanding(), (0, 0));
}

/// The failure callback frees a ballast block held through the same limit and asks for a retry;
/// with no ballast left it gives up. How often it is called, and whether each request then
/// succeeds, follows exactly from the bytes accounted before the request.
#[test]
fn failure_callback_at_scale() {
    let name = "failure_callback_at_scale";
    let mut rng = Rng::new(seed(name, 0x5CA1_0009));
    const BALLAST: usize = MIB;
    // About what 1000 live blocks of this trace take, so the limit is reached now and then
    // rather than on every other request, and the ballast is often there to give.
    let limit = 20 * MIB;
    let limiting = Arc::new(LimitingResourceAdaptor::new(HostMemoryResource::new(), limit));
    let ballast: Arc<Mutex<Option<usize>>> = Arc::new(Mutex::new(None));
    let calls = Arc::new(AtomicUsize::new(0));
    let adaptor = {
        let (limiting, ballast, calls) = (limiting.clone(), ballast.clone(), calls.clone());
        FailureCallbackResourceAdaptor::new(limiting.clone(), move |_bytes| {
            calls.fetch_add(1, Ordering::Relaxed);
            match ballast.lock().take() {
                Some(p) => {
                    limiting.deallocate(p as *mut u8, BALLAST, 256, CudaStreamView::DEFAULT).unwrap();
                    true
                }
                None => false,
            }
        })
    };
    let take_ballast = || {
        let p = limiting.allocate(BALLAST, 256, CudaStreamView::DEFAULT).unwrap();
        *ballast.lock() = Some(p as usize);
    };
    take_ballast();
    let trace = Trace {
        ops: ops(name, SCALE),
        max_size: 256 * KIB,
        streams: fake_streams(4),
        big_alignments: true,
        ..Trace::default()
    };
    let plan = Plan { bad: BadCalls::Host, allow_oom: true, ..Plan::new(trace) };
    let (mut user, mut held, mut seen_calls) = (0usize, true, 0usize);
    let (mut rescued, mut given_up) = (0usize, 0usize);
    let n = drive(&adaptor, &plan, &mut rng, |e, _m| {
        let before = user + if held { BALLAST } else { 0 };
        let expected_calls = match e {
            Event::Allocated(b) => {
                let size = align_up(b.bytes, 256);
                user += size;
                if before + size <= limit {
                    0
                } else {
                    assert!(held && before - BALLAST + size <= limit, "allocated past the limit");
                    held = false;
                    rescued += 1;
                    1
                }
            }
            Event::Freed(b) => {
                user -= align_up(b.bytes, 256);
                0
            }
            Event::Refused { bytes, error, .. } => {
                let message =
                    format!("Exceeded memory limit {limit}; Allocated bytes {user}; Requested bytes {bytes}\n");
                assert_eq!(*error, Error::out_of_memory_verbatim(bytes, None, message));
                let size = align_up(bytes, 256);
                assert!(before - if held { BALLAST } else { 0 } + size > limit, "refused with room");
                given_up += 1;
                if held {
                    held = false;
                    2
                } else {
                    1
                }
            }
            Event::Rejected | Event::ZeroBytes => 0,
        };
        let now = calls.load(Ordering::Relaxed);
        assert_eq!(now - seen_calls, expected_calls, "callback calls for this request");
        seen_calls = now;
        assert_eq!(ballast.lock().is_some(), held);
        assert_eq!(limiting.allocated_bytes(), user + if held { BALLAST } else { 0 });
        if !held && user + BALLAST <= limit {
            take_ballast();
            held = true;
        }
    });
    report(name, &n);
    println!("{name}: {rescued} requests rescued by the callback, {given_up} given up, {seen_calls} callback calls");
    assert!(plan.trace.ops < 10_000 || (rescued > 0 && given_up > 0), "both outcomes were exercised");
    if let Some(p) = ballast.lock().take() {
        limiting.deallocate(p as *mut u8, BALLAST, 256, CudaStreamView::DEFAULT).unwrap();
    }
    assert_eq!(limiting.allocated_bytes(), 0);
    assert_eq!(limiting.upstream().outstanding(), (0, 0));
}

// ---------------------------------------------------------------------------------------------
// GPU resources (skipped without a CUDA device)
// ---------------------------------------------------------------------------------------------

/// GPU tests run only where a device is; elsewhere they say so.
fn gpu(test: &str) -> bool {
    let yes = rmm::cuda_available();
    if !yes {
        println!("{test}: skipped: no CUDA device");
    }
    yes
}

/// Every CUDA allocation call is slow (and synchronises), so the direct resources default to
/// 10^5 calls; `RMM_MODEL_OPS=10000000` runs them at full scale.
const DEVICE_DIRECT: usize = 100_000;

fn device_resource_at_scale<R: MemoryResource>(
    name: &str,
    r: &R,
    streams: Vec<CudaStreamView<'static>>,
    own_stream: bool,
) {
    let mut rng = Rng::new(seed(name, 0x5CA1_0010));
    let trace = Trace { ops: ops(name, DEVICE_DIRECT), max_live: 500, max_size: MIB, streams, ..Trace::default() };
    let plan = Plan { bad: BadCalls::Edges, own_stream, ..Plan::new(trace) };
    let n = drive(r, &plan, &mut rng, |_, _| {});
    report(name, &n);
}

#[test]
fn gpu_cuda_resource_at_scale() {
    let name = "gpu_cuda_resource_at_scale";
    if gpu(name) {
        device_resource_at_scale(name, &CudaMemoryResource::new(), vec![CudaStreamView::DEFAULT], false);
    }
}

#[test]
fn gpu_managed_resource_at_scale() {
    let name = "gpu_managed_resource_at_scale";
    if gpu(name) {
        device_resource_at_scale(name, &ManagedMemoryResource::new(), vec![CudaStreamView::DEFAULT], false);
    }
}

#[test]
fn gpu_pinned_host_resource_at_scale() {
    let name = "gpu_pinned_host_resource_at_scale";
    if gpu(name) {
        device_resource_at_scale(name, &PinnedHostMemoryResource::new(), vec![CudaStreamView::DEFAULT], false);
    }
}

#[test]
fn gpu_cuda_async_resource_at_scale() {
    let name = "gpu_cuda_async_resource_at_scale";
    if gpu(name) {
        let streams: Vec<CudaStream> = (0..4).map(|_| CudaStream::new().unwrap()).collect();
        let r = CudaAsyncMemoryResource::new(None, None).unwrap();
        // SAFETY: the model keeps the views for the whole run; `streams` outlives it (dropped at the end
        // of this function, after the resource and every block are gone).
        let mut views: Vec<CudaStreamView> = streams.iter().map(|s| unsafe { s.view().detach() }).collect();
        views.push(CudaStreamView::DEFAULT);
        // A stream-ordered free must follow its allocation on the same stream.
        device_resource_at_scale(name, &r, views, true);
        for s in &streams {
            s.synchronize().unwrap();
        }
    }
}

/// The pool over device memory, checked as the host pool is: 10^7 calls by default.
#[test]
fn gpu_pool_at_scale() {
    let name = "gpu_pool_at_scale";
    if !gpu(name) {
        return;
    }
    let mut rng = Rng::new(seed(name, 0x5CA1_0011));
    let streams: Vec<CudaStream> = (0..4).map(|_| CudaStream::new().unwrap()).collect();
    let max = 1 << 30;
    let pool = PoolMemoryResource::new(Arc::new(CudaMemoryResource::new()), 64 * MIB, Some(max)).unwrap();
    // SAFETY: the model keeps the views for the whole run; `streams` outlives it (dropped at the end
    // of this function, after the resource and every block are gone).
    let mut views: Vec<CudaStreamView> = streams.iter().map(|s| unsafe { s.view().detach() }).collect();
    views.extend([CudaStreamView::DEFAULT, CudaStreamView::PER_THREAD]);
    let trace = Trace {
        ops: ops(name, SCALE),
        max_live: 2000,
        max_size: 4 * MIB,
        streams: views,
        big_alignments: true,
        ..Trace::default()
    };
    let plan = Plan { bad: BadCalls::Pool, allow_oom: true, ..Plan::new(trace) };
    let mut checker = PoolChecker::new(max, None);
    let n = drive(&pool, &plan, &mut rng, |e, m| checker.see(&pool, e, m));
    report(name, &n);
    pool.check_invariants().unwrap();
    let st = pool.state();
    assert_eq!(st.free_bytes, st.pool_size);
}
