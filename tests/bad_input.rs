//! The bad-input catalogue of `docs/errors.md`, one test per row: the exact error from every
//! resource and adaptor, that nothing observable changed, and that the resource keeps working
//! (an allocation and a free succeed and leave it as it was). Host resources run everywhere; the
//! CUDA resources run on a GPU and elsewhere print `skipped: no CUDA device`.

mod common;

use common::device_keeps_working;
use rmm::adaptor::{
    FailureCallbackResourceAdaptor, LimitingResourceAdaptor, LoggingResourceAdaptor, StatisticsResourceAdaptor,
    TrackingResourceAdaptor,
};
use rmm::pool::{StreamIdentity, StreamKey, StreamOrder};
use rmm::resource::{
    CudaAsyncMemoryResource, CudaMemoryResource, HostMemoryResource, ManagedMemoryResource, PinnedHostMemoryResource,
    PoolMemoryResource, MAX_ALIGNMENT,
};
use rmm::{CudaStream, CudaStreamView, Error, MemoryResource, Misuse, PoolState, Result};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const MIB: usize = 1 << 20;
const S: CudaStreamView = CudaStreamView::DEFAULT;

type HostPool = PoolMemoryResource<Arc<HostMemoryResource>>;

fn host_pool() -> HostPool {
    PoolMemoryResource::new(Arc::new(HostMemoryResource::new()), 4 * MIB, None).unwrap()
}

/// How a resource tells its blocks apart, which decides the error a bad free gets.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Blocks {
    /// Remembers live allocations by start address only (the host resource).
    LiveMap,
    /// Knows every block of its chunks, free or not (a pool, and adaptors over one).
    Pool,
    /// Passes bad frees to a pool as RMM's tracking adaptor does, a wrong size corrected to the
    /// size allocated (so that one is not refused).
    Tracking,
}

/// What can be observed about a resource: everything, and the totals (bytes taken from the
/// upstream, bytes free, counters). A pool's largest free block is in the first only: blocks
/// freed on one stream do not merge with another stream's free blocks until needed, so an
/// allocation and a free may leave the same bytes split differently.
#[derive(Debug, PartialEq, Eq)]
struct State {
    all: String,
    totals: String,
}

impl State {
    fn same(s: String) -> State {
        State { totals: s.clone(), all: s }
    }
}

/// One resource under test, with a snapshot of everything observable about it.
struct Subject {
    name: &'static str,
    mr: Arc<dyn MemoryResource>,
    state: Box<dyn Fn() -> State>,
    blocks: Blocks,
    /// The error for a request of `usize::MAX` bytes.
    huge: Box<dyn Fn() -> Error>,
}

/// A pool's state, after `extra` (an adaptor's own state; `current` is its part that an
/// allocation and its free leave as they were).
fn pool_state(p: &HostPool, extra: String, current: String) -> State {
    let st = p.state();
    let upstream = p.upstream().outstanding();
    State {
        all: format!("{extra} pool {st:?}, upstream {upstream:?}"),
        totals: format!("{current} pool size {}, free {}, upstream {upstream:?}", st.pool_size, st.free_bytes),
    }
}

fn pool_huge(p: &HostPool) -> Error {
    Error::OutOfMemory {
        requested: usize::MAX,
        pool: Some(p.state()),
        reason: "larger than any pool can hold".into(),
        verbatim: false,
    }
}

/// Every host-memory resource and adaptor of the crate; adaptors sit on a pool each.
fn host_subjects() -> Vec<Subject> {
    let mut v = Vec::new();

    let host = Arc::new(HostMemoryResource::new());
    let h = host.clone();
    v.push(Subject {
        name: "host",
        mr: host,
        state: Box::new(move || State::same(format!("{:?}", h.outstanding()))),
        blocks: Blocks::LiveMap,
        huge: Box::new(|| Error::out_of_memory(usize::MAX, "size overflows the address space")),
    });

    let pool = Arc::new(host_pool());
    let (p, q) = (pool.clone(), pool.clone());
    v.push(Subject {
        name: "pool",
        mr: pool,
        state: Box::new(move || pool_state(&p, String::new(), String::new())),
        blocks: Blocks::Pool,
        huge: Box::new(move || pool_huge(&q)),
    });

    let stats = Arc::new(StatisticsResourceAdaptor::new(host_pool()));
    let (p, q) = (stats.clone(), stats.clone());
    v.push(Subject {
        name: "statistics",
        mr: stats,
        state: Box::new(move || {
            let c = p.counters();
            pool_state(p.upstream(), format!("{c:?}"), format!("{} {}", c.bytes.value, c.allocations.value))
        }),
        blocks: Blocks::Pool,
        huge: Box::new(move || pool_huge(q.upstream())),
    });

    let tracking = Arc::new(TrackingResourceAdaptor::new(host_pool(), false));
    let (p, q) = (tracking.clone(), tracking.clone());
    v.push(Subject {
        name: "tracking",
        mr: tracking,
        state: Box::new(move || {
            let own = format!("{} {}", p.allocation_count(), p.allocated_bytes());
            pool_state(p.upstream(), own.clone(), own)
        }),
        blocks: Blocks::Tracking,
        huge: Box::new(move || pool_huge(q.upstream())),
    });

    let limiting = Arc::new(LimitingResourceAdaptor::new(host_pool(), 64 * MIB));
    let p = limiting.clone();
    v.push(Subject {
        name: "limiting",
        mr: limiting,
        state: Box::new(move || {
            let own = p.allocated_bytes().to_string();
            pool_state(p.upstream(), own.clone(), own)
        }),
        blocks: Blocks::Pool,
        huge: Box::new(|| Error::out_of_memory(usize::MAX, "size overflows the address space")),
    });

    let logging = Arc::new(LoggingResourceAdaptor::with_writer(host_pool(), Box::new(std::io::sink())));
    let (p, q) = (logging.clone(), logging.clone());
    v.push(Subject {
        name: "logging",
        mr: logging,
        state: Box::new(move || pool_state(p.upstream(), String::new(), String::new())),
        blocks: Blocks::Pool,
        huge: Box::new(move || pool_huge(q.upstream())),
    });

    let callback = Arc::new(FailureCallbackResourceAdaptor::new(host_pool(), |_| false));
    let (p, q) = (callback.clone(), callback.clone());
    v.push(Subject {
        name: "failure_callback",
        mr: callback,
        state: Box::new(move || pool_state(p.upstream(), String::new(), String::new())),
        blocks: Blocks::Pool,
        huge: Box::new(move || pool_huge(q.upstream())),
    });
    v
}

/// The resource still works and is left exactly as it was.
fn keeps_working(s: &Subject) {
    let before = (s.state)();
    let a = s.mr.allocate(1000, 256, S).unwrap_or_else(|e| panic!("{}: {e}", s.name));
    let b = s.mr.allocate(MIB, 4096, S).unwrap_or_else(|e| panic!("{}: {e}", s.name));
    assert_eq!(b as usize % 4096, 0, "{}", s.name);
    s.mr.deallocate(b, MIB, 4096, S).unwrap();
    s.mr.deallocate(a, 1000, 256, S).unwrap();
    assert_eq!((s.state)().totals, before.totals, "{}: an allocation and a free changed the totals", s.name);
}

/// `mr` refuses `bytes` at `alignment` with `expected`, changing nothing, and keeps working.
fn refuses(s: &Subject, bytes: usize, alignment: usize, expected: Error) {
    let before = (s.state)();
    assert_eq!(s.mr.allocate(bytes, alignment, S), Err(expected), "{}: {bytes} bytes at {alignment}", s.name);
    assert_eq!((s.state)(), before, "{}: a refused request changed the state", s.name);
    keeps_working(s);
}

// ---------------------------------------------------------------------------------------------
// Allocation arguments
// ---------------------------------------------------------------------------------------------

#[test]
fn zero_bytes_is_null_and_changes_nothing() {
    for s in host_subjects() {
        let before = (s.state)();
        assert_eq!(s.mr.allocate(0, 256, S), Ok(std::ptr::null_mut()), "{}", s.name);
        assert_eq!(s.mr.deallocate(std::ptr::null_mut(), 0, 256, S), Ok(()), "{}", s.name);
        if s.name == "statistics" {
            // Counted in the running totals as one allocation of 0 bytes, as RMM counts it.
            assert_eq!((s.state)().totals, before.totals, "{}", s.name);
        } else {
            assert_eq!((s.state)(), before, "{}", s.name);
        }
        keeps_working(&s);
    }
}

#[test]
fn usize_max_bytes_is_out_of_memory() {
    for s in host_subjects() {
        let expected = (s.huge)();
        refuses(&s, usize::MAX, 256, expected);
    }
}

#[test]
fn alignment_zero_three_or_above_the_maximum_is_bad_alignment() {
    for s in host_subjects() {
        for alignment in [0, 3, 768, 2 * MAX_ALIGNMENT] {
            refuses(&s, 1000, alignment, Error::BadAlignment { alignment, max: MAX_ALIGNMENT });
        }
    }
    assert_eq!(
        Error::BadAlignment { alignment: 3, max: MAX_ALIGNMENT }.to_string(),
        "bad alignment 3: must be a power of two no larger than 1073741824"
    );
}

/// Host memory standing in for a device of `cap` bytes: a pool over it meets the device's end.
#[test]
fn more_bytes_than_the_upstream_has_is_out_of_memory() {
    let device = 64 * MIB;
    let upstream = Arc::new(LimitingResourceAdaptor::new(HostMemoryResource::new(), device));
    let s = Subject {
        name: "limiting as a 64 MiB device",
        mr: upstream.clone(),
        state: Box::new({
            let u = upstream.clone();
            move || State::same(u.allocated_bytes().to_string())
        }),
        blocks: Blocks::LiveMap,
        huge: Box::new(|| unreachable!()),
    };
    refuses(
        &s,
        device + 256,
        256,
        Error::out_of_memory_verbatim(
            device + 256,
            None,
            format!("Exceeded memory limit {device}; Allocated bytes 0; Requested bytes {}\n", device + 256),
        ),
    );

    let pool = Arc::new(PoolMemoryResource::new(upstream.clone(), 16 * MIB, None).unwrap());
    let p = pool.clone();
    let s = Subject {
        name: "pool over a 64 MiB device",
        mr: pool,
        state: Box::new(move || {
            let st = p.state();
            State { all: format!("{st:?}"), totals: format!("{} {}", st.pool_size, st.free_bytes) }
        }),
        blocks: Blocks::Pool,
        huge: Box::new(|| unreachable!()),
    };
    refuses(
        &s,
        device + 256,
        256,
        Error::out_of_memory_verbatim(
            device + 256,
            Some(PoolState { pool_size: 16 * MIB, free_bytes: 16 * MIB, largest_free_block: 16 * MIB }),
            format!(
                "Maximum pool size exceeded (failed to allocate 64.000244 MiB): std::bad_alloc: out_of_memory: \
                 Exceeded memory limit {device}; Allocated bytes {}; Requested bytes {}\n",
                16 * MIB,
                device + 256
            ),
        ),
    );
    assert_eq!(upstream.allocated_bytes(), 16 * MIB, "the failed growth gave back what it tried");
}

/// The CUDA resources: zero bytes and bad alignments (their maximum is 256), refused before any
/// driver call.
#[test]
fn cuda_resources_refuse_bad_arguments() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let async_mr = CudaAsyncMemoryResource::new(None, None).unwrap();
    let resources: [(&dyn MemoryResource, &str); 4] = [
        (&CudaMemoryResource::new(), "cuMemAlloc"),
        (&ManagedMemoryResource::new(), "cuMemAllocManaged"),
        (&PinnedHostMemoryResource::new(), "cuMemHostAlloc"),
        (&async_mr, "cuMemAllocFromPoolAsync"),
    ];
    for (r, call) in resources {
        assert_eq!(r.allocate(0, 256, S), Ok(std::ptr::null_mut()), "{call}");
        for alignment in [0, 3, 512] {
            assert_eq!(r.allocate(1000, alignment, S), Err(Error::BadAlignment { alignment, max: 256 }), "{call}");
        }
        // usize::MAX bytes reach the driver, which refuses them: tests/out_of_memory.rs.
        device_keeps_working(r);
    }
}

// ---------------------------------------------------------------------------------------------
// Frees
// ---------------------------------------------------------------------------------------------

/// Double free, a pointer from another resource, a pointer into a block, a wrong size: each is
/// refused with its exact misuse, changes nothing, and the resource keeps working.
#[test]
fn bad_frees_are_refused_and_change_nothing() {
    let other = HostMemoryResource::new();
    for s in host_subjects() {
        let live = s.mr.allocate(1000, 256, S).unwrap();
        let freed = s.mr.allocate(5000, 256, S).unwrap();
        s.mr.deallocate(freed, 5000, 256, S).unwrap();
        let foreign = other.allocate(512, 256, S).unwrap();
        let (l, f) = (live as usize, freed as usize);
        let unknown = |ptr| Error::Misuse(Misuse::UnknownPointer { ptr });
        let double = match s.blocks {
            Blocks::Pool | Blocks::Tracking => Error::Misuse(Misuse::DoubleFree { ptr: f }),
            Blocks::LiveMap => unknown(f),
        };
        let interior = match s.blocks {
            Blocks::Pool | Blocks::Tracking => Error::Misuse(Misuse::InteriorPointer { ptr: l + 256, block_start: l }),
            Blocks::LiveMap => unknown(l + 256),
        };
        let cases: [(&str, *mut u8, usize, Error); 4] = [
            ("double free", freed, 5000, double),
            ("foreign pointer", foreign, 512, unknown(foreign as usize)),
            ("interior pointer", live.wrapping_add(256), 744, interior),
            ("wrong size", live, 999, Error::Misuse(Misuse::WrongSize { ptr: l, allocated: 1000, given: 999 })),
        ];
        let before = (s.state)();
        for (what, ptr, bytes, expected) in cases {
            if what == "wrong size" && matches!(s.blocks, Blocks::Tracking) {
                continue; // freed with the allocated size: tests/adaptors_zero_bytes_bad_frees.rs
            }
            assert_eq!(s.mr.deallocate(ptr, bytes, 256, S), Err(expected), "{}: {what}", s.name);
            assert_eq!((s.state)(), before, "{}: {what} changed the state", s.name);
        }
        s.mr.deallocate(live, 1000, 256, S).unwrap();
        keeps_working(&s);
        other.deallocate(foreign, 512, 256, S).unwrap();
    }
    let shown = Error::Misuse(Misuse::DoubleFree { ptr: 0x7f00 }).to_string();
    assert_eq!(shown, "misuse: double free: 0x7f00 is already free in this resource");
}

/// A stream order that records which streams the pool touched; `dead` streams were destroyed, so
/// touching one fails the test.
#[derive(Default)]
struct DeadStreams {
    dead: Mutex<Vec<StreamKey>>,
    touched_dead: AtomicUsize,
    synchronised: AtomicUsize,
}

/// What the pool holds: a handle on the shared record.
struct Order(Arc<DeadStreams>);

impl StreamOrder for Order {
    fn record(&self, owner: StreamKey, _identity: StreamIdentity) -> Result<()> {
        let this = &self.0;
        if this.dead.lock().unwrap().contains(&owner) {
            this.touched_dead.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
    fn wait(&self, owner: StreamKey, _identity: StreamIdentity, waiter: StreamKey) -> Result<()> {
        let this = &self.0;
        if this.dead.lock().unwrap().contains(&waiter) {
            this.touched_dead.fetch_add(1, Ordering::SeqCst);
        }
        let _ = owner; // waiting on a dead stream's earlier capture is fine: the event outlives it
        Ok(())
    }
    fn synchronize_all(&self) -> Result<()> {
        self.0.synchronised.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A free naming a stream that no longer exists: the pool accepts it without touching the stream,
/// and the block comes back to other streams once everything is synchronised.
#[test]
fn free_on_a_destroyed_stream_never_touches_it() {
    let order = Arc::new(DeadStreams::default());
    // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
    let pool = unsafe {
        PoolMemoryResource::with_stream_order(
            HostMemoryResource::new(),
            8 * MIB,
            Some(8 * MIB),
            Box::new(Order(order.clone())),
        )
    }
    .unwrap();
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let (dying, other) =
        (unsafe { CudaStreamView::from_handle(0x1000) }, unsafe { CudaStreamView::from_handle(0x2000) });
    let a = pool.allocate(4 * MIB, 256, dying).unwrap();
    let b = pool.allocate(4 * MIB, 256, dying).unwrap();
    pool.deallocate(a, 4 * MIB, 256, dying).unwrap();
    order.dead.lock().unwrap().push(StreamKey::of_handle(0x1000)); // the stream is destroyed now
    pool.deallocate(b, 4 * MIB, 256, dying).unwrap();
    pool.check_invariants().unwrap();
    let syncs = order.synchronised.load(Ordering::SeqCst);
    // The whole pool, on another stream: only a full synchronisation can hand it over.
    let all = pool.allocate(8 * MIB, 256, other).unwrap();
    assert_eq!(order.synchronised.load(Ordering::SeqCst), syncs + 1);
    assert_eq!(order.touched_dead.load(Ordering::SeqCst), 0, "the pool touched a destroyed stream");
    pool.deallocate(all, 8 * MIB, 256, other).unwrap();
    assert_eq!(pool.state(), PoolState { pool_size: 8 * MIB, free_bytes: 8 * MIB, largest_free_block: 8 * MIB });
    pool.check_invariants().unwrap();
}

fn cu(status: cudarc::driver::sys::CUresult, call: &str) {
    assert_eq!(status, cudarc::driver::sys::CUresult::CUDA_SUCCESS, "{call} failed");
}

/// On the device: a block freed on a stream that is then destroyed, while work that stream queued
/// may still run, is handed to another stream only after that work finished. The taker is
/// made before the dying stream is destroyed, so it cannot get the dead handle back from the
/// driver (a recycled handle is the caveat in docs/errors.md).
#[test]
fn free_on_a_destroyed_stream_on_the_device() {
    use cudarc::driver::sys;
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let pool = PoolMemoryResource::new(CudaMemoryResource::new(), 64 * MIB, Some(64 * MIB)).unwrap();
    for round in 0..10 {
        let t = CudaStream::new().unwrap();
        let (p, dead) = {
            let s = CudaStream::new().unwrap();
            let p = pool.allocate(64 * MIB, 256, s.view()).unwrap();
            // SAFETY: p is a live 64 MiB device block; the stream is alive.
            cu(unsafe { sys::cuMemsetD8Async(p as u64, 0x11, 64 * MIB, s.view().as_raw()) }, "cuMemsetD8Async");
            // Freed while the stream is alive: naming a destroyed stream is undefined (as in RMM).
            pool.deallocate(p, 64 * MIB, 256, s.view()).unwrap();
            (p, s.view().handle())
        }; // destroyed here, its memset perhaps still running
        let _ = dead;
        let q = pool.allocate(64 * MIB, 256, t.view()).unwrap();
        assert_eq!(q, p);
        // SAFETY: q is a live 64 MiB device block; the stream is alive.
        cu(unsafe { sys::cuMemsetD8Async(q as u64, 0x22, 64 * MIB, t.view().as_raw()) }, "cuMemsetD8Async");
        t.synchronize().unwrap();
        let mut back = vec![0u8; 64 * MIB];
        // SAFETY: a synchronous copy of the whole block into a buffer of that size.
        cu(unsafe { sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), q as u64, 64 * MIB) }, "cuMemcpyDtoH");
        assert!(back.iter().all(|&x| x == 0x22), "round {round}: the dead stream's memset ran after the new owner's");
        pool.deallocate(q, 64 * MIB, 256, t.view()).unwrap();
    }
    pool.check_invariants().unwrap();
}

// ---------------------------------------------------------------------------------------------
// Construction
// ---------------------------------------------------------------------------------------------

/// Pool sizes not multiples of 256, and a maximum below the initial size: refused before the
/// upstream is asked for anything.
#[test]
fn bad_pool_sizes_take_nothing_from_the_upstream() {
    let upstream = Arc::new(HostMemoryResource::new());
    let cases = [
        (1000, None, "invalid argument: initial pool size 1000 is not a multiple of 256"),
        (0, Some(1000), "invalid argument: maximum pool size 1000 is not a multiple of 256"),
        (2 * MIB, Some(MIB), "invalid argument: maximum pool size 1048576 is below the initial size 2097152"),
    ];
    for (initial, maximum, message) in cases {
        let err = PoolMemoryResource::new(upstream.clone(), initial, maximum).err().unwrap();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        assert_eq!(err.to_string(), message);
        assert_eq!(upstream.outstanding(), (0, 0));
    }
    let p = upstream.allocate(MIB, 256, S).unwrap();
    upstream.deallocate(p, MIB, 256, S).unwrap();
}

#[test]
fn logging_to_a_path_that_cannot_be_written_is_io_error() {
    let upstream = Arc::new(HostMemoryResource::new());
    for path in ["/dev/null/log.csv", "/proc/version/log.csv"] {
        let err = LoggingResourceAdaptor::new(upstream.clone(), Some(Path::new(path))).err().unwrap();
        match &err {
            Error::Io { path: p, message } => {
                assert_eq!(p, path);
                assert_eq!(err.to_string(), format!("cannot write {path}: {message}"));
            }
            other => panic!("expected Io, got {other:?}"),
        }
        assert!(!Path::new(path).exists());
    }
    assert_eq!(upstream.outstanding(), (0, 0));
    let p = upstream.allocate(MIB, 256, S).unwrap();
    upstream.deallocate(p, MIB, 256, S).unwrap();
}

/// Forwards to `inner` and notes every block handed out, so a test knows a chunk's address.
struct Noting<U> {
    inner: U,
    blocks: Mutex<Vec<(usize, usize)>>,
}

// SAFETY: every call goes to `inner` unchanged; the accessibility answers are `inner`'s.
unsafe impl<U: MemoryResource> MemoryResource for Noting<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        let p = self.inner.allocate(bytes, alignment, stream)?;
        self.blocks.lock().unwrap().push((p as usize, bytes));
        Ok(p)
    }
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        self.inner.deallocate(ptr, bytes, alignment, stream)
    }
    fn is_device_accessible(&self) -> bool {
        self.inner.is_device_accessible()
    }
    fn is_host_accessible(&self) -> bool {
        self.inner.is_host_accessible()
    }
    fn claim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        self.inner.claim(ptr, bytes)
    }
    fn unclaim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        self.inner.unclaim(ptr, bytes)
    }
}

impl<U> Noting<U> {
    fn new(inner: U) -> Arc<Self> {
        Arc::new(Noting { inner, blocks: Mutex::new(Vec::new()) })
    }

    /// The last block handed out.
    fn last(&self) -> (*mut u8, usize) {
        let (p, n) = *self.blocks.lock().unwrap().last().unwrap();
        (p as *mut u8, n)
    }
}

fn is_claimed_refusal(r: Result<()>) -> bool {
    matches!(r, Err(Error::Misuse(Misuse::ClaimedBlock { .. })))
}

#[test]
fn a_pool_chunk_cannot_be_freed_through_the_upstream_it_shares() {
    let host = Arc::new(HostMemoryResource::new());
    let pool = PoolMemoryResource::new(host.clone(), MIB, None).unwrap();
    // The block spans the whole chunk: only the claim tells the two apart.
    let p = pool.allocate(MIB, 256, S).unwrap();
    let refused = host.deallocate(p, MIB, 256, S);
    assert!(is_claimed_refusal(refused.clone()), "{refused:?}");
    assert_eq!(host.outstanding(), (1, MIB), "the chunk is still the pool's");
    // SAFETY: p is a live block of 1 MiB of host memory.
    unsafe { p.write_bytes(0x5a, MIB) };
    pool.deallocate(p, MIB, 256, S).unwrap();
    let q = pool.allocate(MIB, 256, S).unwrap();
    assert_eq!(q, p, "the pool still owns its chunk");
    pool.deallocate(q, MIB, 256, S).unwrap();
    drop(pool);
    assert_eq!(host.outstanding(), (0, 0), "the pool gave its chunk back through the claim");
}

#[test]
fn a_suballocator_chunk_cannot_be_freed_through_a_suballocator_upstream() {
    use rmm::resource::{ArenaMemoryResource, FixedSizeMemoryResource};
    let inner = Arc::new(PoolMemoryResource::new(HostMemoryResource::new(), 8 * MIB, None).unwrap());
    let outer = PoolMemoryResource::new(inner.clone(), MIB, None).unwrap();
    let p = outer.allocate(MIB, 256, S).unwrap();
    assert!(is_claimed_refusal(inner.deallocate(p, MIB, 256, S)));
    assert!(!inner.try_deallocate_immediately(p, MIB, 256, S), "nor without waiting");
    // Were the free accepted, the inner pool would hand the same memory out again.
    let other = inner.allocate(MIB, 256, S).unwrap();
    assert_ne!(other, p);
    inner.deallocate(other, MIB, 256, S).unwrap();
    outer.deallocate(p, MIB, 256, S).unwrap();
    drop(outer);
    inner.check_invariants().unwrap();

    let noted = Noting::new(inner.clone());
    let arena = ArenaMemoryResource::new(noted.clone(), Some(MIB), false).unwrap();
    let (chunk, bytes) = noted.last();
    assert!(is_claimed_refusal(inner.deallocate(chunk, bytes, 256, S)));
    let fixed = FixedSizeMemoryResource::new(noted.clone(), 1 << 16, 4).unwrap();
    let (chunk, bytes) = noted.last();
    assert!(is_claimed_refusal(noted.deallocate(chunk, bytes, 256, S)));
    drop((arena, fixed));
    inner.check_invariants().unwrap();
    let p = inner.allocate(2 * MIB, 256, S).unwrap();
    inner.deallocate(p, 2 * MIB, 256, S).unwrap();
}

/// A pool's chunk taken through adaptors (or a binning resource's bins) is claimed where the
/// memory comes from: a free of it through the adaptor is refused and counts nothing.
#[test]
fn a_claim_goes_through_adaptors_and_bins() {
    use rmm::resource::{BinningMemoryResource, FixedSizeMemoryResource};
    let host = Arc::new(HostMemoryResource::new());
    let stats = Noting::new(StatisticsResourceAdaptor::new(host.clone()));
    let pool = PoolMemoryResource::new(stats.clone(), MIB, None).unwrap();
    let (chunk, bytes) = stats.last();
    assert!(is_claimed_refusal(stats.deallocate(chunk, bytes, 256, S)));
    assert_eq!(stats.inner.bytes_counter().value, MIB as i64, "a refused free is not counted");
    drop(pool);
    assert_eq!(stats.inner.bytes_counter().value, 0);
    assert_eq!(host.outstanding(), (0, 0));

    let binning = Noting::new(BinningMemoryResource::with_bins(host.clone(), 10, 12).unwrap());
    let fixed = FixedSizeMemoryResource::new(binning.clone(), 4096, 1).unwrap();
    let (chunk, bytes) = binning.last();
    assert!(is_claimed_refusal(binning.deallocate(chunk, bytes, 256, S)));
    drop(fixed);
    // Unclaimed and freed into its bin: the bin hands it out again.
    let again = binning.allocate(bytes, 256, S).unwrap();
    assert_eq!(again, chunk);
    binning.deallocate(again, bytes, 256, S).unwrap();
}
