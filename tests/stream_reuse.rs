//! A destroyed stream's handle goes to the next stream the driver creates: the pool must never
//! hand that stream the blocks the destroyed stream's queued work may still write.
//!
//! On the host, a stream order stands in for the driver: it tells the pool which stream a handle
//! names now (`identity`), and records every capture, wait and synchronisation, so each test can
//! check that the new stream took the old blocks only after an ordering that covers the old
//! stream's work. The GPU tests (skipped without a device) do the same with real streams and
//! memsets that keep the dying stream busy.

mod common;

use common::{gpu, Rng, CU_OK};
use cudarc::driver::sys;
use rmm::pool::{StreamIdentity, StreamKey, StreamOrder};
use rmm::resource::{CudaEventOrder, CudaMemoryResource, HostMemoryResource, PoolMemoryResource};
use rmm::stream_registry::{register_stream, retire_stream};
use rmm::{CudaStream, CudaStreamView, MemoryResource, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const MIB: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    Record(StreamKey),
    Wait(StreamKey, StreamKey),
    Retire(StreamKey, StreamKey),
    SyncAll,
}
use Asked::*;

/// What a test runs while the pool synchronises.
type DuringSync = Box<dyn FnOnce() + Send>;

/// A stream order whose streams can be "destroyed and recreated" under the same handle.
#[derive(Default, Clone)]
struct FakeDriver {
    log: Arc<Mutex<Vec<Asked>>>,
    /// The stream each untrusted handle names now; absent handles are trusted.
    ids: Arc<Mutex<HashMap<usize, u64>>>,
    identity_calls: Arc<Mutex<usize>>,
    /// The identity each key's last capture was of, as `CudaEventOrder` keeps it.
    captured: Arc<Mutex<HashMap<StreamKey, StreamIdentity>>>,
    /// Runs inside the next synchronisation (another thread's calls, made while it waits).
    during_sync: Arc<Mutex<Option<DuringSync>>>,
    /// Makes every synchronisation fail (no driver, a sticky error).
    sync_fails: Arc<std::sync::atomic::AtomicBool>,
}

impl FakeDriver {
    fn log(&self) -> Vec<Asked> {
        self.log.lock().unwrap().clone()
    }
    fn clear(&self) {
        self.log.lock().unwrap().clear();
    }
    /// The user's own `cudaStreamDestroy` then `cudaStreamCreate`, getting the same handle back.
    fn replace_stream(&self, handle: usize) {
        *self.ids.lock().unwrap().entry(handle).or_insert(1) += 1;
    }
    fn untrusted(&self, handle: usize) {
        self.ids.lock().unwrap().entry(handle).or_insert(1);
    }
    /// A stream of ours (its destruction is announced) has the handle now.
    fn trusted(&self, handle: usize) {
        self.ids.lock().unwrap().remove(&handle);
    }
}

impl StreamOrder for FakeDriver {
    fn record(&self, owner: StreamKey, identity: StreamIdentity) -> Result<()> {
        self.log.lock().unwrap().push(Record(owner));
        self.captured.lock().unwrap().insert(owner, identity);
        Ok(())
    }
    fn wait(&self, owner: StreamKey, identity: StreamIdentity, waiter: StreamKey) -> Result<()> {
        if self.captured.lock().unwrap().get(&owner) != Some(&identity) {
            return Err(rmm::Error::InvalidArgument("the last capture was of another stream".into()));
        }
        self.log.lock().unwrap().push(Wait(owner, waiter));
        Ok(())
    }
    fn synchronize_all(&self) -> Result<()> {
        self.log.lock().unwrap().push(SyncAll);
        let during = self.during_sync.lock().unwrap().take();
        if let Some(f) = during {
            f();
        }
        if self.sync_fails.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(rmm::Error::NoDriver("the test's synchronisation fails".into()));
        }
        Ok(())
    }
    fn identity(&self, key: StreamKey, _known: StreamIdentity) -> StreamIdentity {
        *self.identity_calls.lock().unwrap() += 1;
        let handle = key.handle().unwrap_or(usize::MAX);
        self.ids.lock().unwrap().get(&handle).map_or(StreamIdentity::Trusted, |&id| StreamIdentity::Driver(id))
    }
    fn retire(&self, owner: StreamKey, retired: StreamKey) -> Result<()> {
        self.log.lock().unwrap().push(Retire(owner, retired));
        let mut captured = self.captured.lock().unwrap();
        captured.remove(&owner);
        captured.insert(retired, StreamIdentity::Trusted);
        Ok(())
    }
}

/// A pool ordered by `driver`, with the log of its construction cleared. One shard, so that the
/// addresses a test expects do not depend on which shard a stream is spread to when another test
/// retires a stream (which visits every pool) at the same moment.
fn pool_on(driver: &FakeDriver, initial: usize, max: Option<usize>) -> PoolMemoryResource<HostMemoryResource> {
    let order = Box::new(driver.clone());
    // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
    let pool = unsafe { PoolMemoryResource::with_shards(HostMemoryResource::new(), initial, max, order, 1) }.unwrap();
    driver.clear();
    pool
}

/// The user's own stream, destroyed and created again with the same handle: the new stream gets
/// the old one's block only after a synchronisation of everything.
#[test]
fn a_replaced_stream_of_the_users_waits_for_a_synchronisation() {
    let driver = FakeDriver::default();
    let h = 0x11_0000;
    driver.untrusted(h);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let s = unsafe { CudaStreamView::from_handle(h) };
    let pool = pool_on(&driver, 4 * MIB, Some(4 * MIB));
    let p = pool.allocate(4 * MIB, 256, s).unwrap();
    pool.deallocate(p, 4 * MIB, 256, s).unwrap();
    // The same stream takes its own block back at once.
    let q = pool.allocate(4 * MIB, 256, s).unwrap();
    assert_eq!((q, driver.log()), (p, vec![]));
    pool.deallocate(q, 4 * MIB, 256, s).unwrap();

    driver.replace_stream(h);
    let r = pool.allocate(4 * MIB, 256, s).unwrap();
    assert_eq!(r, p, "after the synchronisation the whole pool is free");
    assert_eq!(driver.log(), vec![SyncAll], "the new stream took the block without the old stream's work done");
    pool.deallocate(r, 4 * MIB, 256, s).unwrap();
    pool.check_invariants().unwrap();
}

/// With room to grow, the new stream grows rather than wait, as long as the replaced stream's
/// memory is less than it needs; once it is as much, the pool synchronises instead of growing.
#[test]
fn replaced_streams_memory_is_reused_before_the_pool_grows_by_as_much() {
    let driver = FakeDriver::default();
    let h = 0x12_0000;
    driver.untrusted(h);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let s = unsafe { CudaStreamView::from_handle(h) };
    let pool = pool_on(&driver, 0, None);
    let p = pool.allocate(MIB, 256, s).unwrap();
    pool.deallocate(p, MIB, 256, s).unwrap();
    let size = pool.pool_size();
    driver.replace_stream(h);
    let q = pool.allocate(MIB, 256, s).unwrap();
    assert_eq!(q, p);
    assert_eq!(pool.pool_size(), size, "the pool grew although a synchronisation would do");
    assert_eq!(driver.log(), vec![SyncAll]);
    pool.deallocate(q, MIB, 256, s).unwrap();
    pool.check_invariants().unwrap();
}

/// A block freed while the pool synchronises is not covered by that synchronisation (its stream's
/// work may have been queued after it began): it stays with its stream, and the stream that asked
/// runs out of memory rather than take it.
#[test]
fn a_block_freed_during_a_synchronisation_stays_with_its_stream() {
    let driver = FakeDriver::default();
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let (s, t) = (unsafe { CudaStreamView::from_handle(0x16_0000) }, unsafe { CudaStreamView::from_handle(0x17_0000) });
    let pool = Arc::new(pool_on(&driver, 2 * MIB, Some(2 * MIB)));
    let b = pool.allocate(MIB, 256, s).unwrap();
    let c = pool.allocate(MIB, 256, s).unwrap();
    // While t's request synchronises, s frees b (its work on b perhaps queued after the
    // synchronisation began).
    let weak = Arc::downgrade(&pool);
    let freed = b as usize;
    *driver.during_sync.lock().unwrap() = Some(Box::new(move || {
        let pool = weak.upgrade().unwrap();
        pool.deallocate(freed as *mut u8, MIB, 256, s).unwrap();
    }));
    match pool.allocate(MIB, 256, t) {
        Err(e) => assert!(e.is_out_of_memory(), "{e}"),
        Ok(p) => panic!("t got {p:p}, which s freed during the synchronisation"),
    }
    assert!(driver.log().contains(&SyncAll));
    // s takes its own block back at once; after another synchronisation everything is free.
    let again = pool.allocate(MIB, 256, s).unwrap();
    assert_eq!(again, b);
    pool.deallocate(again, MIB, 256, s).unwrap();
    pool.deallocate(c, MIB, 256, s).unwrap();
    let all = pool.allocate(2 * MIB, 256, t).unwrap();
    pool.deallocate(all, 2 * MIB, 256, t).unwrap();
    pool.check_invariants().unwrap();
}

/// A synchronisation that fails covers nothing: every sealed block goes back to its stream, which
/// takes it at once, as if no synchronisation had been tried.
#[test]
fn a_failed_synchronisation_leaves_every_block_with_its_stream() {
    let driver = FakeDriver::default();
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let (s, t) = (unsafe { CudaStreamView::from_handle(0x18_0000) }, unsafe { CudaStreamView::from_handle(0x19_0000) });
    let pool = pool_on(&driver, 2 * MIB, Some(2 * MIB));
    let b = pool.allocate(MIB, 256, s).unwrap();
    let c = pool.allocate(MIB, 256, s).unwrap();
    pool.deallocate(b, MIB, 256, s).unwrap();
    driver.sync_fails.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(pool.allocate(2 * MIB, 256, t).unwrap_err().is_out_of_memory());
    assert!(driver.log().contains(&SyncAll));
    pool.check_invariants().unwrap();
    assert_eq!(pool.allocate(MIB, 256, s).unwrap(), b, "s lost its own block to the failed synchronisation");
    pool.deallocate(b, MIB, 256, s).unwrap();
    pool.deallocate(c, MIB, 256, s).unwrap();
    pool.check_invariants().unwrap();
}

/// Frees never ask which stream a handle names once its sets know; allocations on an untrusted
/// stream ask each time, on a trusted one never.
#[test]
fn identity_is_asked_per_allocation_on_untrusted_streams_only() {
    let driver = FakeDriver::default();
    let (h, t) = (0x13_0000, 0x14_0000);
    driver.untrusted(h);
    let pool = pool_on(&driver, 4 * MIB, None);
    for (handle, per_alloc) in [(h, 1), (t, 0)] {
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        let s = unsafe { CudaStreamView::from_handle(handle) };
        let p = pool.allocate(1000, 256, s).unwrap(); // the first call learns the identity
        *driver.identity_calls.lock().unwrap() = 0;
        let mut p = p;
        for _ in 0..10 {
            pool.deallocate(p, 1000, 256, s).unwrap();
            p = pool.allocate(1000, 256, s).unwrap();
        }
        assert_eq!(*driver.identity_calls.lock().unwrap(), 10 * per_alloc, "stream {handle:#x}");
        pool.deallocate(p, 1000, 256, s).unwrap();
    }
}

/// A stream of ours announces its destruction: its work is captured while it lives, and the next
/// stream with its handle takes the blocks after waiting for that capture, never by trust.
#[test]
fn a_retired_stream_of_ours_is_waited_for_by_the_next_owner_of_its_handle() {
    let driver = FakeDriver::default();
    let h = 0x15_0000;
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let s = unsafe { CudaStreamView::from_handle(h) };
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    unsafe { register_stream(h) };
    let pool = pool_on(&driver, 4 * MIB, Some(4 * MIB));
    let p = pool.allocate(2 * MIB, 256, s).unwrap();
    let big = pool.allocate(2 * MIB, 256, s).unwrap();
    pool.deallocate(p, 2 * MIB, 256, s).unwrap();
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    unsafe { retire_stream(h) };
    let log = driver.log();
    let [Retire(owner, retired)] = log[..] else { panic!("expected one capture, got {log:?}") };
    assert_eq!(owner, StreamKey::of_handle(h));
    assert!(retired.is_retired() && !retired.waits_for_sync());
    driver.clear();
    // A new stream of ours gets the handle.
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    unsafe { register_stream(h) };
    let q = pool.allocate(2 * MIB, 256, s).unwrap();
    assert_eq!(q, p);
    assert_eq!(driver.log(), vec![Wait(retired, StreamKey::of_handle(h))], "the new owner took {q:p} without waiting");
    // The block that was handed out when the stream retired comes back on the new stream.
    pool.deallocate(big, 2 * MIB, 256, s).unwrap();
    pool.deallocate(q, 2 * MIB, 256, s).unwrap();
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    unsafe { retire_stream(h) };
    pool.check_invariants().unwrap();
}

/// Streams come and go under a few handles: the pool's sets do not pile up, every block comes
/// back, and each reuse across lifetimes is ordered.
#[test]
fn many_stream_lifetimes_keep_the_pool_small_and_whole() {
    let driver = FakeDriver::default();
    let handles: Vec<usize> = (0..4).map(|i| 0x20_0000 + i * 0x1000).collect();
    let pool = pool_on(&driver, 8 * MIB, None);
    let mut rng = Rng::new(11);
    for life in 0..2000 {
        let h = handles[rng.below(handles.len())];
        let ours = life % 2 == 0;
        if ours {
            driver.trusted(h);
            // SAFETY: a stream name for resources over host memory: no driver call sees it.
            unsafe { register_stream(h) };
        } else {
            driver.untrusted(h);
        }
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        let s = unsafe { CudaStreamView::from_handle(h) };
        let blocks: Vec<(*mut u8, usize)> = (0..4)
            .map(|_| {
                let n = rng.log_uniform(256, 256 << 10);
                (pool.allocate(n, 256, s).unwrap(), n)
            })
            .collect();
        for (p, n) in blocks {
            pool.deallocate(p, n, 256, s).unwrap();
        }
        if ours {
            // SAFETY: a stream name for resources over host memory: no driver call sees it.
            unsafe { retire_stream(h) };
        }
        driver.replace_stream(h);
    }
    pool.check_invariants().unwrap();
    println!("{} sets of free lists in use after 2000 stream lifetimes", pool.sets_in_use());
    assert!(pool.sets_in_use() <= 20, "{} sets of free lists after 2000 lifetimes", pool.sets_in_use());
    let st = pool.state();
    assert_eq!(st.free_bytes, st.pool_size);
}

/// Keeps `stream` busy writing `value` over the block, then frees it there.
fn busy_fill(ptr: *mut u8, bytes: usize, value: u8, stream: CudaStreamView, times: usize) {
    for _ in 0..times {
        // SAFETY: ptr..ptr+bytes is a live device block; the stream is alive.
        assert_eq!(unsafe { sys::cuMemsetD8Async(ptr as u64, value, bytes, stream.as_raw()) }, CU_OK);
    }
}

fn all_bytes_are(ptr: *mut u8, bytes: usize, value: u8) -> usize {
    let mut back = vec![0u8; bytes];
    // SAFETY: a synchronous copy of a live device block into a buffer of its size.
    assert_eq!(unsafe { sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), ptr as u64, bytes) }, CU_OK);
    back.iter().filter(|&&b| b != value).count()
}

/// A capture belongs to the stream that made it: once another stream with the same handle records,
/// a wait for the first stream's capture fails instead of waiting for the wrong work.
#[test]
fn a_wait_for_a_replaced_streams_capture_fails() {
    if !gpu() {
        return;
    }
    let order = CudaEventOrder::new();
    let (a, b) = (CudaStream::new().unwrap(), CudaStream::new().unwrap());
    let key = StreamKey::of_handle(a.view().handle());
    let waiter = StreamKey::of_handle(b.view().handle());
    let (first, second) = (StreamIdentity::Driver(1), StreamIdentity::Driver(2));
    order.record(key, first).unwrap();
    order.wait(key, first, waiter).unwrap();
    order.record(key, second).unwrap();
    assert!(order.wait(key, first, waiter).is_err(), "waited for a capture of another stream");
    order.wait(key, second, waiter).unwrap();
    b.synchronize().unwrap();
}

/// Raw driver streams, created and destroyed as a user's own code would: the next stream often
/// gets the dead handle back, and must never see the dead stream's memsets land on its data.
#[test]
fn the_users_own_streams_destroyed_with_work_queued_never_corrupt_the_next_owner() {
    if !gpu() {
        return;
    }
    let size = 16 * MIB;
    let pool = PoolMemoryResource::new(CudaMemoryResource::new(), size, Some(size)).unwrap();
    let (mut reused, mut corrupted) = (0, 0);
    for round in 0..50 {
        let mut raw: sys::CUstream = std::ptr::null_mut();
        // SAFETY: a context is current (the pool made one); raw is a valid out pointer.
        assert_eq!(unsafe { sys::cuStreamCreate(&mut raw, 1) }, CU_OK);
        // SAFETY: the stream created above, alive until it is destroyed after its last use here.
        let dying = unsafe { CudaStreamView::from_raw(raw) };
        let p = pool.allocate(size, 256, dying).unwrap();
        busy_fill(p, size, 0x5A, dying, 100);
        pool.deallocate(p, size, 256, dying).unwrap();
        // SAFETY: created above, destroyed once; its memsets still run.
        assert_eq!(unsafe { sys::cuStreamDestroy_v2(raw) }, CU_OK);
        let mut next: sys::CUstream = std::ptr::null_mut();
        // SAFETY: as above.
        assert_eq!(unsafe { sys::cuStreamCreate(&mut next, 1) }, CU_OK);
        reused += usize::from(next == raw);
        // SAFETY: the stream created above, alive until it is destroyed after its last use here.
        let s = unsafe { CudaStreamView::from_raw(next) };
        let q = pool.allocate(size, 256, s).unwrap();
        busy_fill(q, size, 0xC3, s, 1);
        s.synchronize().unwrap();
        let bad = all_bytes_are(q, size, 0xC3);
        corrupted += bad;
        assert_eq!(bad, 0, "round {round}: the dead stream's memsets landed on the new owner's data");
        pool.deallocate(q, size, 256, s).unwrap();
        s.synchronize().unwrap();
        // SAFETY: created above, destroyed once, idle.
        assert_eq!(unsafe { sys::cuStreamDestroy_v2(next) }, CU_OK);
    }
    println!("the next stream got the dead handle back in {reused} of 50 rounds; {corrupted} corrupted bytes");
    pool.check_invariants().unwrap();
}

/// `CudaStream`s dropped with work queued and blocks freed on them: the pool captures their work
/// first, and the next owner waits for it instead of synchronising the device.
#[test]
fn our_streams_dropped_with_work_queued_never_corrupt_the_next_owner() {
    if !gpu() {
        return;
    }
    let size = 16 * MIB;
    let pool = PoolMemoryResource::new(CudaMemoryResource::new(), size, Some(size)).unwrap();
    for round in 0..50 {
        let (p, dead) = {
            let dying = CudaStream::new().unwrap();
            let p = pool.allocate(size, 256, dying.view()).unwrap();
            busy_fill(p, size, 0x5A, dying.view(), 100);
            pool.deallocate(p, size, 256, dying.view()).unwrap();
            (p, dying.view().handle())
        };
        let s = CudaStream::new().unwrap();
        let q = pool.allocate(size, 256, s.view()).unwrap();
        assert_eq!(q, p, "round {round}: the pool has one block");
        let _ = dead;
        busy_fill(q, size, 0xC3, s.view(), 1);
        s.synchronize().unwrap();
        assert_eq!(all_bytes_are(q, size, 0xC3), 0, "round {round}: the dead stream's memsets landed late");
        pool.deallocate(q, size, 256, s.view()).unwrap();
    }
    pool.check_invariants().unwrap();
}
