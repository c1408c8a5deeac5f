//! Model tests at 10^6 operations for the adaptors and resources that `model_scale.rs` does not
//! cover: aligned, prefetch, callback and thread-safe over host memory, and the system resource
//! where a device can reach pageable memory. Every call is checked as it happens against a shadow
//! model (alignment, no overlap, tags at both ends of every block intact when it is freed), and
//! the upstream records what it was asked, so each test checks the exact upstream traffic and that
//! it balances at the end.
//!
//! Operations per test: 10^6 in release builds, 1/100 of that in debug builds, or `RMM_MODEL_OPS`
//! when set. The seed of every test is printed; `RMM_TEST_SEED=<seed>` replays it.

mod common;

use common::{fake_streams, foreign_pointer, ops, seed, Model, Rng};
use parking_lot::Mutex;
use rmm::adaptor::{AlignedResourceAdaptor, PrefetchResourceAdaptor, ThreadSafeResourceAdaptor};
use rmm::resource::CallbackMemoryResource;
use rmm::resource::HostMemoryResource;
use rmm::{CudaStreamView, Error, MemoryResource, Misuse, Result};
use std::alloc::Layout;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

const KIB: usize = 1 << 10;
/// The operation count of each test in a release build.
const SCALE: usize = 1_000_000;

fn round_up(bytes: usize, alignment: usize) -> usize {
    bytes.div_ceil(alignment) * alignment
}

// ---------------------------------------------------------------------------------------------
// The recording upstream
// ---------------------------------------------------------------------------------------------

/// One call an upstream saw: pointer (null for an allocation that failed), bytes, alignment,
/// stream handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Alloc(usize, usize, usize, usize),
    Free(usize, usize, usize, usize),
    /// A free the host refused (the pointer or size was wrong).
    RefusedFree(usize, usize, usize, usize),
}

/// Host memory that records every call it gets, checks that no two of its live blocks overlap and
/// that every free names its block with the size and alignment it was allocated with, and, as a
/// resource written for one thread would, asserts that no two calls run at once.
#[derive(Default)]
struct Recorder {
    host: HostMemoryResource,
    /// Live blocks: start -> (bytes, alignment).
    live: Mutex<BTreeMap<usize, (usize, usize)>>,
    /// The calls since the test last took them (left empty when `log` is false).
    calls: Mutex<Vec<Call>>,
    log: bool,
    busy: AtomicBool,
    allocs: AtomicUsize,
    frees: AtomicUsize,
}

impl Recorder {
    fn logging() -> Self {
        Recorder { log: true, ..Recorder::default() }
    }

    fn take(&self) -> Vec<Call> {
        std::mem::take(&mut *self.calls.lock())
    }

    fn record(&self, c: Call) {
        if self.log {
            self.calls.lock().push(c);
        }
    }

    /// Marks a call as running; panics if another is running (the caller did not serialise).
    fn enter(&self) {
        assert!(!self.busy.swap(true, Ordering::Acquire), "two calls ran in the upstream at once");
        // Widen the window in which an unserialised second call would be caught.
        for _ in 0..32 {
            std::hint::spin_loop();
        }
    }

    fn leave(&self) {
        self.busy.store(false, Ordering::Release);
    }
}

// SAFETY: blocks come from a `HostMemoryResource` unchanged and go back to it; host memory, as
// the answers below say.
unsafe impl MemoryResource for Recorder {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        self.enter();
        let got = self.host.allocate(bytes, alignment, stream);
        if let Ok(p) = got {
            let (p, mut live) = (p as usize, self.live.lock());
            if let Some((&q, &(qs, _))) = live.range(..=p).next_back() {
                assert!(q + qs <= p, "upstream block {p:#x}+{bytes} overlaps {q:#x}+{qs}");
            }
            if let Some((&q, _)) = live.range(p..).next() {
                assert!(p + bytes <= q, "upstream block {p:#x}+{bytes} overlaps the block at {q:#x}");
            }
            live.insert(p, (bytes, alignment));
            self.allocs.fetch_add(1, Ordering::Relaxed);
        }
        let p = got.as_ref().map_or(0, |&p| p as usize);
        self.record(Call::Alloc(p, bytes, alignment, stream.handle()));
        self.leave();
        got
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        self.enter();
        let got = self.host.deallocate(ptr, bytes, alignment, stream);
        let call = (ptr as usize, bytes, alignment, stream.handle());
        if got.is_ok() {
            let was = self.live.lock().remove(&(ptr as usize));
            assert_eq!(was, Some((bytes, alignment)), "free of {ptr:p} with other bytes/alignment than its allocation");
            self.frees.fetch_add(1, Ordering::Relaxed);
            self.record(Call::Free(call.0, call.1, call.2, call.3));
        } else {
            self.record(Call::RefusedFree(call.0, call.1, call.2, call.3));
        }
        self.leave();
        got
    }

    fn is_device_accessible(&self) -> bool {
        false
    }

    fn is_host_accessible(&self) -> bool {
        true
    }
}

// ---------------------------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------------------------

/// A live block: where it is, what it was asked with, and the upstream block it lies in (start
/// and size), filled in by the test's check when the allocation is seen.
#[derive(Clone, Copy, Debug)]
struct Block {
    ptr: *mut u8,
    bytes: usize,
    alignment: usize,
    stream: CudaStreamView<'static>,
    raw: usize,
    raw_bytes: usize,
}

/// What one call did, shown to the test's check.
enum Event<'a> {
    /// An allocation; the check fills in `raw` and `raw_bytes`.
    Allocated(&'a mut Block),
    Freed(&'a Block),
    /// An allocation refused, with its error.
    Refused {
        bytes: usize,
        error: &'a Error,
    },
    /// A zero-byte allocation (null) or a null free: the upstream must not see it.
    Nothing,
    /// A bad free of `block` (`given` bytes, or a foreign/freed `ptr`) on `stream`, refused with
    /// `error`.
    BadFree {
        block: &'a Block,
        ptr: *mut u8,
        given: usize,
        stream: CudaStreamView<'static>,
        error: &'a Error,
    },
}

/// A trace's shape.
struct Shape {
    ops: usize,
    max_live: usize,
    max_size: usize,
    streams: Vec<CudaStreamView<'static>>,
    /// Percent of allocations when below `max_live`.
    alloc_pct: usize,
    /// The requested alignments to draw from (each equally likely).
    alignments: &'static [usize],
    /// Make bad frees (wrong size, foreign pointer) now and then.
    bad_frees: bool,
    /// Free a block twice now and then (not where other threads allocate: the address may be
    /// handed out again between the two frees).
    double_frees: bool,
    /// Write and check tags: the memory is host memory, whatever the resource declares.
    tags: bool,
}

#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    allocs: usize,
    frees: usize,
    refused: usize,
    bad: usize,
}

fn tag(b: &Block) -> u8 {
    ((b.ptr as usize >> 8) as u8) ^ (b.bytes as u8) ^ 0x5A
}

fn write_tags(b: &Block) {
    // SAFETY: the block is live host memory of `bytes` >= 1 bytes that no other live block
    // overlaps (the model checked), so nothing else writes these bytes.
    unsafe {
        b.ptr.write(tag(b));
        b.ptr.add(b.bytes - 1).write(!tag(b));
    }
}

fn check_tags(b: &Block) {
    // SAFETY: as in `write_tags`; the block is still live (this runs before its free).
    let (first, last) = unsafe { (b.ptr.read(), b.ptr.add(b.bytes - 1).read()) };
    let want_first = if b.bytes == 1 { !tag(b) } else { tag(b) };
    assert_eq!((first, last), (want_first, !tag(b)), "block {:p}+{} was overwritten", b.ptr, b.bytes);
}

/// Runs a random trace of `shape.ops` calls on `r`, checking every returned block against a
/// [`Model`] and the tags of every block when it is freed; `check` sees each call as it happens.
/// Bad frees must fail (the check compares their errors) and change nothing. Frees everything at
/// the end.
fn drive<R: MemoryResource + ?Sized>(
    r: &R,
    shape: &Shape,
    rng: &mut Rng,
    mut check: impl FnMut(Event<'_>, &Model),
) -> Tally {
    let mut model = Model::default();
    let mut live: Vec<Block> = Vec::with_capacity(shape.max_live);
    let mut n = Tally::default();
    for _ in 0..shape.ops {
        let stream = shape.streams[rng.below(shape.streams.len())];
        let roll = rng.below(1024);
        if roll == 0 {
            assert_eq!(r.allocate(0, 256, stream), Ok(std::ptr::null_mut()), "zero bytes give null");
            check(Event::Nothing, &model);
            continue;
        }
        if roll == 1 {
            assert_eq!(r.deallocate(std::ptr::null_mut(), 64, 256, stream), Ok(()), "a null free does nothing");
            check(Event::Nothing, &model);
            continue;
        }
        if shape.bad_frees && roll < 6 && !live.is_empty() {
            let b = live[rng.below(live.len())];
            let (ptr, given) = if roll < 4 {
                // Wrong by at least 1 MiB: the aligned adaptor rounds sizes up to its alignment, so a
                // size off by less may name the same upstream block, which is no error.
                (b.ptr, b.bytes + (roll - 1) * (1 << 20))
            } else {
                (foreign_pointer(rng), b.bytes)
            };
            let error = r.deallocate(ptr, given, b.alignment, stream).expect_err("a bad free must fail");
            n.bad += 1;
            check(Event::BadFree { block: &b, ptr, given, stream, error: &error }, &model);
            continue;
        }
        let allocate = live.len() < shape.max_live && (live.is_empty() || rng.below(100) < shape.alloc_pct);
        if allocate {
            let bytes = rng.log_uniform(1, shape.max_size);
            let alignment = shape.alignments[rng.below(shape.alignments.len())];
            match r.allocate(bytes, alignment, stream) {
                Ok(ptr) => {
                    model.insert(ptr, bytes, alignment);
                    let mut b = Block { ptr, bytes, alignment, stream, raw: ptr as usize, raw_bytes: bytes };
                    check(Event::Allocated(&mut b), &model);
                    if shape.tags {
                        write_tags(&b);
                    }
                    live.push(b);
                    n.allocs += 1;
                }
                Err(error) => {
                    n.refused += 1;
                    check(Event::Refused { bytes, error: &error }, &model);
                }
            }
        } else {
            let mut b = live.swap_remove(rng.below(live.len()));
            b.stream = stream;
            free(r, &b, shape.tags, &mut model);
            n.frees += 1;
            check(Event::Freed(&b), &model);
            if shape.double_frees && rng.below(256) == 0 {
                let error = r.deallocate(b.ptr, b.bytes, b.alignment, stream).expect_err("a double free must fail");
                n.bad += 1;
                check(Event::BadFree { block: &b, ptr: b.ptr, given: b.bytes, stream, error: &error }, &model);
            }
        }
    }
    while let Some(mut b) = live.pop() {
        b.stream = shape.streams[0];
        free(r, &b, shape.tags, &mut model);
        n.frees += 1;
        check(Event::Freed(&b), &model);
    }
    assert_eq!((model.len(), model.live_bytes), (0, 0));
    n
}

fn free<R: MemoryResource + ?Sized>(r: &R, b: &Block, tags: bool, model: &mut Model) {
    if tags {
        check_tags(b);
    }
    model.remove(b.ptr);
    r.deallocate(b.ptr, b.bytes, b.alignment, b.stream)
        .unwrap_or_else(|e| panic!("deallocate({:p}, {}) failed: {e}", b.ptr, b.bytes));
}

fn report(test: &str, n: &Tally) {
    println!(
        "{test}: {} allocations, {} frees, {} refused, {} bad frees rejected",
        n.allocs, n.frees, n.refused, n.bad
    );
}

/// The error a host upstream gives a bad free it was passed as `(ptr, given)` for a block it
/// handed out as `(raw, raw_bytes)`.
fn host_refusal(ptr: usize, given: usize, raw: usize, raw_bytes: usize, raw_live: bool) -> Error {
    if ptr == raw && raw_live {
        assert_ne!(given, raw_bytes, "the test's bad free must be bad");
        Error::Misuse(Misuse::WrongSize { ptr, allocated: raw_bytes, given })
    } else {
        Error::Misuse(Misuse::UnknownPointer { ptr })
    }
}

// ---------------------------------------------------------------------------------------------
// Aligned
// ---------------------------------------------------------------------------------------------

/// What the aligned adaptor asks its upstream for, by its documented rule: `None` when the request
/// passes through unchanged, else the alignment it gets and the upstream size.
fn aligned_rule(alignment: usize, threshold: usize, bytes: usize, requested: usize) -> Option<(usize, usize)> {
    let a = requested.max(256).max(alignment);
    (a != 256 && bytes >= threshold).then(|| (a, round_up(bytes, a) + a - 256))
}

fn aligned_at_scale(name: &str, default_seed: u64, alignment: usize, threshold: usize) {
    let mut rng = Rng::new(seed(name, default_seed));
    let adaptor = AlignedResourceAdaptor::new(Recorder::logging(), alignment, threshold).unwrap();
    assert_eq!((adaptor.alignment(), adaptor.alignment_threshold()), (alignment, threshold));
    let shape = Shape {
        ops: ops(name, SCALE),
        max_live: 1000,
        max_size: 256 * KIB,
        streams: fake_streams(3),
        alloc_pct: 55,
        alignments: &[256, 256, 256, 256, 8, 64, 512, 1024, 4096, 8192],
        bad_frees: true,
        double_frees: true,
        tags: true,
    };
    let up = adaptor.upstream();
    let (mut moved, mut passed) = (0usize, 0usize);
    let n = drive(&adaptor, &shape, &mut rng, |e, _m| {
        let calls = up.take();
        match e {
            Event::Allocated(b) => {
                let rule = aligned_rule(alignment, threshold, b.bytes, b.alignment);
                let [Call::Alloc(raw, size, align, s)] = calls[..] else {
                    panic!("one upstream allocation: {calls:?}")
                };
                assert_eq!(s, b.stream.handle(), "the upstream gets the call's stream");
                let p = b.ptr as usize;
                match rule {
                    None => {
                        assert_eq!((raw, size, align), (p, b.bytes, b.alignment), "passed through unchanged");
                        passed += 1;
                    }
                    Some((a, want_size)) => {
                        assert_eq!((size, align), (want_size, 256), "over-allocated at 256");
                        assert_eq!(p % a, 0, "{p:#x} is not {a}-aligned");
                        assert_eq!(p, raw.next_multiple_of(a), "the first aligned address in the upstream block");
                        assert!(p + b.bytes <= raw + size, "the block ends inside the upstream block");
                        moved += (p != raw) as usize;
                    }
                }
                (b.raw, b.raw_bytes) = (raw, size);
            }
            Event::Freed(b) => {
                let align =
                    if aligned_rule(alignment, threshold, b.bytes, b.alignment).is_some() { 256 } else { b.alignment };
                assert_eq!(calls, [Call::Free(b.raw, b.raw_bytes, align, b.stream.handle())], "freed as allocated");
            }
            Event::Nothing => assert_eq!(calls, [], "the upstream sees no zero-byte call"),
            Event::Refused { error, .. } => panic!("host memory refused: {error}"),
            Event::BadFree { block, ptr, given, stream, error } => {
                // The adaptor passes the bad free on as its rule maps it, and keeps its own record
                // of a moved block when the upstream refuses, so the block frees correctly later.
                let rule = aligned_rule(alignment, threshold, given, block.alignment);
                let freed = ptr == block.ptr && !up.live.lock().contains_key(&block.raw);
                let up_ptr = if rule.is_some() && ptr == block.ptr && !freed { block.raw } else { ptr as usize };
                let (up_given, up_align) = rule.map_or((given, block.alignment), |(_, s)| (s, 256));
                let want = host_refusal(up_ptr, up_given, block.raw, block.raw_bytes, !freed);
                assert_eq!(*error, want, "bad free of {ptr:p} with {given} bytes");
                assert_eq!(calls, [Call::RefusedFree(up_ptr, up_given, up_align, stream.handle())]);
            }
        }
    });
    report(name, &n);
    println!("{name}: {moved} blocks moved to alignment, {passed} passed through");
    if shape.ops >= 10_000 {
        assert!(n.bad > 0, "bad frees were exercised");
        assert!(alignment == 256 || moved > 0, "some blocks were moved");
        assert_eq!(passed > 0, threshold > 0 || alignment == 256, "blocks pass through only below the threshold");
    }
    assert_eq!(up.host.outstanding(), (0, 0), "the upstream got every block back");
    assert_eq!(up.allocs.load(Ordering::Relaxed), up.frees.load(Ordering::Relaxed));
    assert_eq!(up.allocs.load(Ordering::Relaxed), n.allocs);
}

/// RMM's default: every allocation aligned to 4 KiB (threshold 0).
#[test]
fn aligned_every_block_at_scale() {
    aligned_at_scale("aligned_every_block_at_scale", 0xA11_0001, 4096, 0);
}

/// A 64 KiB alignment for blocks of 16 KiB and up; smaller blocks pass through.
#[test]
fn aligned_above_a_threshold_at_scale() {
    aligned_at_scale("aligned_above_a_threshold_at_scale", 0xA11_0002, 64 * KIB, 16 * KIB);
}

/// Alignment 256: only requests for more than 256 are over-allocated.
#[test]
fn aligned_at_256_passes_through_at_scale() {
    aligned_at_scale("aligned_at_256_passes_through_at_scale", 0xA11_0003, 256, 0);
}

// ---------------------------------------------------------------------------------------------
// Prefetch
// ---------------------------------------------------------------------------------------------

/// Over host memory (not device accessible) the adaptor never prefetches, so it makes no driver
/// call: every call reaches the upstream exactly as made, and this runs with or without a GPU.
#[test]
fn prefetch_over_host_memory_at_scale() {
    let name = "prefetch_over_host_memory_at_scale";
    let mut rng = Rng::new(seed(name, 0xA11_0010));
    let adaptor = PrefetchResourceAdaptor::new(Recorder::logging());
    assert!(!adaptor.is_device_accessible() && adaptor.is_host_accessible());
    let shape = Shape {
        ops: ops(name, SCALE),
        max_live: 1000,
        max_size: 256 * KIB,
        streams: fake_streams(4),
        alloc_pct: 55,
        alignments: &[256, 256, 256, 512, 4096],
        bad_frees: true,
        double_frees: true,
        tags: true,
    };
    let up = adaptor.upstream();
    let n = drive(&adaptor, &shape, &mut rng, |e, _m| {
        let calls = up.take();
        match e {
            Event::Allocated(b) => {
                let want = Call::Alloc(b.ptr as usize, b.bytes, b.alignment, b.stream.handle());
                assert_eq!(calls, [want]);
            }
            Event::Freed(b) => assert_eq!(calls, [Call::Free(b.ptr as usize, b.bytes, b.alignment, b.stream.handle())]),
            Event::Nothing => assert_eq!(calls, []),
            Event::Refused { error, .. } => panic!("host memory refused: {error}"),
            Event::BadFree { block, ptr, given, stream, error } => {
                let live = up.live.lock().contains_key(&(ptr as usize));
                assert_eq!(*error, host_refusal(ptr as usize, given, block.ptr as usize, block.bytes, live));
                assert_eq!(calls, [Call::RefusedFree(ptr as usize, given, block.alignment, stream.handle())]);
            }
        }
    });
    report(name, &n);
    assert!(shape.ops < 10_000 || n.bad > 0);
    assert_eq!(up.host.outstanding(), (0, 0));
    assert_eq!(up.allocs.load(Ordering::Relaxed), n.allocs);
}

// ---------------------------------------------------------------------------------------------
// Callback
// ---------------------------------------------------------------------------------------------

/// The callbacks' allocator: host memory under a byte budget (over it, allocate returns null),
/// with a shadow map of what it handed out, so a free with anything else is refused.
struct CallbackHeap {
    live: Mutex<HashMap<usize, (Layout, usize)>>,
    live_bytes: AtomicUsize,
    budget: usize,
    calls: AtomicUsize,
}

impl CallbackHeap {
    fn allocate(&self, bytes: usize, alignment: usize) -> Result<*mut u8> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        // Zero bytes reach the callback, as in RMM: null is this heap's answer.
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        if self.live_bytes.load(Ordering::Relaxed) + bytes > self.budget {
            return Ok(std::ptr::null_mut());
        }
        let layout = Layout::from_size_align(bytes, alignment.max(256)).expect("the test asks only valid alignments");
        // SAFETY: the layout's size is not zero.
        let p = unsafe { std::alloc::alloc(layout) };
        assert!(!p.is_null(), "the host allocator ran out");
        self.live.lock().insert(p as usize, (layout, alignment));
        self.live_bytes.fetch_add(bytes, Ordering::Relaxed);
        Ok(p)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize) -> Result<()> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        // A null free reaches the callback, as in RMM: nothing to do.
        if ptr.is_null() {
            return Ok(());
        }
        let mut live = self.live.lock();
        match live.get(&(ptr as usize)) {
            None => Err(Misuse::UnknownPointer { ptr: ptr as usize }.into()),
            Some(&(l, _)) if l.size() != bytes => {
                Err(Misuse::WrongSize { ptr: ptr as usize, allocated: l.size(), given: bytes }.into())
            }
            Some(&(l, a)) => {
                assert_eq!(a, alignment, "freed with its allocation's alignment");
                live.remove(&(ptr as usize));
                self.live_bytes.fetch_sub(bytes, Ordering::Relaxed);
                // SAFETY: ptr came from `alloc(l)` and was live until the line above.
                unsafe { std::alloc::dealloc(ptr, l) };
                Ok(())
            }
        }
    }
}

/// The resource calls its functions exactly once per call (zero bytes and null frees included, as
/// in RMM), turns a null from allocate for a non-empty request into out-of-memory, and passes the
/// functions' errors on unchanged.
#[test]
fn callback_resource_at_scale() {
    let name = "callback_resource_at_scale";
    let mut rng = Rng::new(seed(name, 0xA11_0020));
    let budget = 4 * 1024 * KIB;
    let heap = Arc::new(CallbackHeap {
        live: Mutex::new(HashMap::new()),
        live_bytes: AtomicUsize::new(0),
        budget,
        calls: AtomicUsize::new(0),
    });
    let (h1, h2) = (heap.clone(), heap.clone());
    // SAFETY: the functions hand out and take back disjoint aligned blocks of `heap`; the model
    // only allocates and frees, it never touches the memory (which the resource calls device
    // memory, as RMM's does).
    let r = unsafe {
        CallbackMemoryResource::new(
            move |bytes, alignment, _s| h1.allocate(bytes, alignment),
            move |ptr, bytes, alignment, _s| h2.deallocate(ptr, bytes, alignment),
        )
    };
    assert!(r.is_device_accessible() && !r.is_host_accessible(), "RMM's properties");
    let shape = Shape {
        ops: ops(name, SCALE),
        max_live: 1000,
        max_size: 256 * KIB,
        streams: fake_streams(2),
        alloc_pct: 55,
        alignments: &[256, 256, 256, 512, 2048],
        bad_frees: true,
        double_frees: true,
        tags: true,
    };
    let mut seen = 0usize;
    let n = drive(&r, &shape, &mut rng, |e, m| {
        let calls = heap.calls.load(Ordering::Relaxed);
        let want_calls = match e {
            Event::Nothing => 1,
            Event::Allocated(_) | Event::Freed(_) => 1,
            Event::Refused { bytes, error, .. } => {
                assert!(m.live_bytes + bytes > budget, "refused with room");
                assert_eq!(*error, Error::out_of_memory(bytes, "the allocate callback returned null"));
                1
            }
            Event::BadFree { block, ptr, given, error, .. } => {
                let live = heap.live.lock().contains_key(&(ptr as usize));
                assert_eq!(*error, host_refusal(ptr as usize, given, block.ptr as usize, block.bytes, live));
                1
            }
        };
        assert_eq!(calls - seen, want_calls, "callback calls");
        seen = calls;
        assert_eq!(heap.live_bytes.load(Ordering::Relaxed), m.live_bytes, "the heap holds what the model holds");
    });
    report(name, &n);
    assert!(shape.ops < 10_000 || (n.refused > 0 && n.bad > 0), "the budget was reached and bad frees made");
    assert!(heap.live.lock().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Thread-safe
// ---------------------------------------------------------------------------------------------

/// Eight threads share one adaptor over an upstream that asserts no two calls overlap in time and
/// that no two of its live blocks overlap in memory; each thread checks its own blocks against its
/// own model. At the end every block came back and the upstream's counts match the threads'.
#[test]
fn thread_safe_adaptor_many_threads_at_scale() {
    let name = "thread_safe_adaptor_many_threads_at_scale";
    let base = seed(name, 0xA11_0030);
    const THREADS: usize = 8;
    let total = ops(name, SCALE);
    let adaptor = Arc::new(ThreadSafeResourceAdaptor::new(Recorder::default()));
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let adaptor = adaptor.clone();
                s.spawn(move || {
                    let mut rng = Rng::new(base.wrapping_add(t as u64));
                    let shape = Shape {
                        ops: total / THREADS,
                        max_live: 200,
                        max_size: 64 * KIB,
                        streams: vec![
                            // SAFETY: a stream name for resources over host memory: no driver call sees it.
                            unsafe { CudaStreamView::from_handle(0x10_000 * (t + 1)) },
                            CudaStreamView::PER_THREAD,
                        ],
                        alloc_pct: 55,
                        alignments: &[256, 256, 512, 1024],
                        bad_frees: true,
                        double_frees: false,
                        tags: true,
                    };
                    drive(&*adaptor, &shape, &mut rng, |e, _m| {
                        if let Event::BadFree { block, ptr, given, error, .. } = e {
                            // Only this thread frees its blocks (and makes no double free), so a
                            // bad free names one of its live blocks or a foreign pointer.
                            let want = host_refusal(ptr as usize, given, block.ptr as usize, block.bytes, true);
                            assert_eq!(*error, want);
                        }
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a thread failed")).collect()
    });
    let sum = tallies.iter().fold(Tally::default(), |a, t| Tally {
        allocs: a.allocs + t.allocs,
        frees: a.frees + t.frees,
        refused: a.refused + t.refused,
        bad: a.bad + t.bad,
    });
    report(name, &sum);
    let up = adaptor.upstream();
    assert_eq!(sum.refused, 0);
    assert_eq!((sum.allocs, sum.frees), (up.allocs.load(Ordering::Relaxed), up.frees.load(Ordering::Relaxed)));
    assert_eq!(sum.allocs, sum.frees, "every block came back");
    assert!(up.live.lock().is_empty());
    assert_eq!(up.host.outstanding(), (0, 0));
}

// ---------------------------------------------------------------------------------------------
// System memory (needs a device with pageable memory access)
// ---------------------------------------------------------------------------------------------

/// The system resource cannot be built without a device that reaches pageable memory (HMM or
/// ATS), and each free synchronises its stream, so this runs only there, at 10^5 calls.
#[test]
fn gpu_system_resource_at_scale() {
    let name = "gpu_system_resource_at_scale";
    if !common::gpu() || !common::device_supports("system-allocated memory", rmm::capabilities::system_memory_supported)
    {
        return;
    }
    let mut rng = Rng::new(seed(name, 0xA11_0040));
    let r = rmm::resource::SystemMemoryResource::new().unwrap();
    let other = rmm::resource::SystemMemoryResource::new().unwrap();
    let shape = Shape {
        ops: ops(name, SCALE / 10),
        max_live: 1000,
        max_size: 256 * KIB,
        streams: vec![CudaStreamView::DEFAULT, CudaStreamView::PER_THREAD],
        alloc_pct: 55,
        alignments: &[256, 256, 512, 4096],
        bad_frees: false,
        double_frees: false,
        tags: true,
    };
    let n = drive(&r, &shape, &mut rng, |e, _m| {
        if let Event::Refused { error, .. } = e {
            panic!("system memory refused: {error}");
        }
    });
    report(name, &n);
    assert!(r.is_equal(&other), "all system resources are one");
}
