//! GPU integration tests of the CUDA-backed resources, streams, events and the per-device
//! resource. Every test skips (and says so) on a machine without a CUDA device.

mod common;

use common::{run_trace, seed, Rng, Trace};
use cudarc::driver::sys;
use rmm::event::CudaEvent;
use rmm::per_device_resource::{
    get_current_device_resource, reset_current_device_resource, set_current_device_resource,
};
use rmm::resource::{CudaAsyncMemoryResource, CudaMemoryResource, ManagedMemoryResource, PinnedHostMemoryResource};
use rmm::{
    available_device_memory, percent_of_free_device_memory, CudaStream, CudaStreamPool, CudaStreamView, Error,
    MemoryResource, Result, SharedResource,
};
use std::sync::Arc;

/// Sizes the usability checks write and read back: odd sizes, one page, a few MiB.
const USABLE_SIZES: [usize; 7] = [1, 255, 256, 4097, 65_536, 1 << 20, (3 << 20) + 5];

fn cu(status: sys::CUresult, call: &str) {
    assert_eq!(status, sys::CUresult::CUDA_SUCCESS, "{call} failed");
}

fn pattern(bytes: usize, salt: u8) -> Vec<u8> {
    (0..bytes).map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt)).collect()
}

fn read_back(ptr: *mut u8, bytes: usize) -> Vec<u8> {
    let mut out = vec![0u8; bytes];
    // SAFETY: ptr is a live device-accessible allocation of `bytes`; out has room for them.
    cu(unsafe { sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), ptr as u64, bytes) }, "cuMemcpyDtoH");
    out
}

/// Writes device-side (memset, then a host-to-device copy) and reads back device-to-host. Work runs
/// on the legacy default stream, so the caller must have finished any other stream's work on `ptr`.
fn check_device_usable(ptr: *mut u8, bytes: usize) {
    // SAFETY: ptr is a live device-accessible allocation of `bytes`.
    cu(unsafe { sys::cuMemsetD8_v2(ptr as u64, 0x5A, bytes) }, "cuMemsetD8");
    assert!(read_back(ptr, bytes).iter().all(|&b| b == 0x5A), "memset of {bytes} bytes not read back");
    let p = pattern(bytes, 7);
    // SAFETY: as above; p holds `bytes` bytes.
    cu(unsafe { sys::cuMemcpyHtoD_v2(ptr as u64, p.as_ptr().cast(), bytes) }, "cuMemcpyHtoD");
    assert!(read_back(ptr, bytes) == p, "copy of {bytes} bytes not read back");
}

/// For memory both sides can reach: the device writes and the host reads, then the other way round.
fn check_managed_usable(ptr: *mut u8, bytes: usize) {
    check_device_usable(ptr, bytes);
    // SAFETY: a context is current (the allocation made it so).
    cu(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize");
    // SAFETY: no device work on the block is pending after the synchronisation; the slice covers
    // exactly the live allocation.
    let host = unsafe { std::slice::from_raw_parts_mut(ptr, bytes) };
    assert!(host[..] == pattern(bytes, 7)[..], "host does not see the device's writes");
    host.copy_from_slice(&pattern(bytes, 99));
    assert!(read_back(ptr, bytes) == pattern(bytes, 99), "device does not see the host's writes");
}

/// Pinned host memory as the staging buffer it is meant to be: host writes, copy to a device
/// scratch buffer, host clears, copy back, host reads.
fn check_pinned_usable(ptr: *mut u8, bytes: usize) {
    // SAFETY: the slice covers exactly the live pinned allocation; nothing else touches it.
    let host = unsafe { std::slice::from_raw_parts_mut(ptr, bytes) };
    host.copy_from_slice(&pattern(bytes, 3));
    let scratch = CudaMemoryResource::new().allocate(bytes, 256, CudaStreamView::DEFAULT).unwrap();
    // SAFETY: both buffers are live and `bytes` long; the copies are synchronous for the host.
    cu(unsafe { sys::cuMemcpyHtoD_v2(scratch as u64, host.as_ptr().cast(), bytes) }, "cuMemcpyHtoD");
    host.fill(0);
    // SAFETY: as above.
    cu(unsafe { sys::cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), scratch as u64, bytes) }, "cuMemcpyDtoH");
    assert!(host[..] == pattern(bytes, 3)[..], "pinned round trip of {bytes} bytes failed");
    CudaMemoryResource::new().deallocate(scratch, bytes, 256, CudaStreamView::DEFAULT).unwrap();
}

/// A short random trace with the model check (no overlap, 256-aligned), then a usability check at
/// each of [`USABLE_SIZES`].
fn exercise<R: MemoryResource>(name: &str, r: &R, max_size: usize, usable: fn(*mut u8, usize)) {
    let mut rng = Rng::new(seed(name, 42));
    let t = Trace { ops: 1000, max_live: 64, max_size, ..Trace::default() };
    run_trace(r, &t, &mut rng, false, |_| {});
    for bytes in USABLE_SIZES {
        let p = r.allocate(bytes, 256, CudaStreamView::DEFAULT).unwrap();
        assert_eq!(p as usize % 256, 0);
        usable(p, bytes);
        r.deallocate(p, bytes, 256, CudaStreamView::DEFAULT).unwrap();
    }
}

#[test]
fn cuda_resource_allocates_usable_memory() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let r = CudaMemoryResource::new();
    assert!(r.is_device_accessible() && !r.is_host_accessible());
    exercise("cuda_resource", &r, 1 << 20, check_device_usable);
}

#[test]
fn managed_resource_allocates_memory_both_sides_use() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let r = ManagedMemoryResource::new();
    assert!(r.is_device_accessible() && r.is_host_accessible());
    exercise("managed_resource", &r, 1 << 20, check_managed_usable);
}

#[test]
fn pinned_host_resource_allocates_memory_both_sides_use() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let r = PinnedHostMemoryResource::new();
    assert!(r.is_device_accessible() && r.is_host_accessible());
    exercise("pinned_host_resource", &r, 256 << 10, check_pinned_usable);
}

#[test]
fn cuda_async_resource_allocates_usable_memory() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let r = CudaAsyncMemoryResource::new(None, None).unwrap();
    assert!(r.is_device_accessible() && !r.is_host_accessible());
    // On the default stream the helpers' legacy-stream work is ordered with the pool's.
    exercise("cuda_async_resource", &r, 1 << 20, check_device_usable);
}

/// Makes each allocation complete before it is returned, so that a trace may free a block on
/// another stream than it was allocated on without racing the allocation itself.
struct SyncAfterAlloc<'a, R>(&'a R);

// SAFETY: blocks come from the wrapped resource unchanged and go back to it. The default
// answers (device memory) are those of every resource these tests wrap.
unsafe impl<R: MemoryResource> MemoryResource for SyncAfterAlloc<'static, R> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        let p = self.0.allocate(bytes, alignment, stream)?;
        stream.synchronize()?;
        Ok(p)
    }
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        self.0.deallocate(ptr, bytes, alignment, stream)
    }
}

#[test]
fn cuda_async_resource_on_two_streams_of_a_pool() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let streams = CudaStreamPool::new(2).unwrap();
    let (s1, s2) = (streams.get_stream(), streams.get_stream());
    assert_ne!(s1, s2);
    // Leaked so the wrapper can borrow it for 'static; one small pool per test run.
    let r: &'static CudaAsyncMemoryResource = Box::leak(Box::new(CudaAsyncMemoryResource::new(None, None).unwrap()));

    // Stream-ordered use on one stream: allocate, write, free, all enqueued on s1.
    let bytes = 1 << 20;
    let p = r.allocate(bytes, 256, s1).unwrap();
    // SAFETY: p is live on s1, where the memset is enqueued after the allocation.
    cu(unsafe { sys::cuMemsetD8Async(p as u64, 0x33, bytes, s1.as_raw()) }, "cuMemsetD8Async");
    // Read back on s1 too: every use of the block is then ordered before its free on s1 (a copy
    // on the legacy stream would not be, as far as the stream-ordered race check can tell).
    let mut back = vec![0u8; bytes];
    cu(
        // SAFETY: p is live on s1; back has room for `bytes` and outlives the synchronisation below.
        unsafe { sys::cuMemcpyDtoHAsync_v2(back.as_mut_ptr().cast(), p as u64, bytes, s1.as_raw()) },
        "cuMemcpyDtoHAsync",
    );
    s1.synchronize().unwrap();
    assert!(back.iter().all(|&b| b == 0x33));
    r.deallocate(p, bytes, 256, s1).unwrap();

    // A random trace that allocates and frees on either stream.
    let mut rng = Rng::new(seed("cuda_async_two_streams", 7));
    let t = Trace { ops: 1000, max_live: 64, max_size: 1 << 20, streams: vec![s1, s2], ..Trace::default() };
    run_trace(&SyncAfterAlloc(r), &t, &mut rng, false, |_| {});
    s1.synchronize().unwrap();
    s2.synchronize().unwrap();
}

#[test]
fn cuda_async_resource_primes_pool_and_compares_by_pool() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let initial = 32 << 20;
    let a = CudaAsyncMemoryResource::new(Some(initial), Some(64 << 20)).unwrap();
    let mut reserved: u64 = 0;
    cu(
        // SAFETY: the pool is alive; the attribute is a cuuint64_t.
        unsafe {
            sys::cuMemPoolGetAttribute(
                a.pool_handle(),
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
                (&mut reserved as *mut u64).cast(),
            )
        },
        "cuMemPoolGetAttribute",
    );
    assert!(reserved >= initial as u64, "pool holds {reserved} bytes after priming with {initial}");

    let b = CudaAsyncMemoryResource::new(None, None).unwrap();
    assert_ne!(a.pool_handle(), b.pool_handle());
    assert!(a.is_equal(&a));
    assert!(!a.is_equal(&b));
    assert!(!a.is_equal(&CudaMemoryResource::new()));
    // Equality survives type erasure.
    let shared: SharedResource = Arc::new(b);
    assert!(shared.is_equal(&shared.clone()));
}

#[test]
fn a_thread_without_a_current_context_gets_the_primary_one() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let cuda = Arc::new(CudaMemoryResource::new());
    let pool = Arc::new(CudaAsyncMemoryResource::new(None, None).unwrap());
    let (c, p) = (cuda.clone(), pool.clone());
    std::thread::spawn(move || {
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: the driver is initialised; ctx is a valid out pointer.
        cu(unsafe { sys::cuCtxGetCurrent(&mut ctx) }, "cuCtxGetCurrent");
        assert!(ctx.is_null(), "a new thread starts with no current context");
        // The first call on the thread makes the primary context current before calling the
        // driver (no call fails on purpose: sanitizers would report it).
        for r in [&*c as &dyn MemoryResource, &*p] {
            let ptr = r.allocate(4096, 256, CudaStreamView::DEFAULT).unwrap();
            check_device_usable(ptr, 4096);
            r.deallocate(ptr, 4096, 256, CudaStreamView::DEFAULT).unwrap();
        }
        // SAFETY: as above.
        cu(unsafe { sys::cuCtxGetCurrent(&mut ctx) }, "cuCtxGetCurrent");
        assert!(!ctx.is_null());
    })
    .join()
    .unwrap();
    // A free on a fresh thread, of memory allocated on this one, finds its context the same way.
    let ptr = pool.allocate(4096, 256, CudaStreamView::DEFAULT).unwrap() as usize;
    let p = pool.clone();
    std::thread::spawn(move || p.deallocate(ptr as *mut u8, 4096, 256, CudaStreamView::DEFAULT).unwrap())
        .join()
        .unwrap();
}

#[test]
fn alignments_above_256_are_refused() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let async_mr = CudaAsyncMemoryResource::new(None, None).unwrap();
    let resources: [&dyn MemoryResource; 4] =
        [&CudaMemoryResource::new(), &ManagedMemoryResource::new(), &PinnedHostMemoryResource::new(), &async_mr];
    for r in resources {
        assert_eq!(r.allocate(64, 512, CudaStreamView::DEFAULT), Err(Error::BadAlignment { alignment: 512, max: 256 }));
        let p = r.allocate(64, 16, CudaStreamView::DEFAULT).unwrap();
        assert_eq!(p as usize % 256, 0);
        r.deallocate(p, 64, 16, CudaStreamView::DEFAULT).unwrap();
    }
}

#[test]
fn device_memory_info_is_sane() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let (free, total) = available_device_memory().unwrap();
    assert!(free > 0 && free <= total, "free {free}, total {total}");
    let half = percent_of_free_device_memory(50).unwrap();
    assert_eq!(half % 256, 0);
    assert!(half > 0 && half <= total / 2 + 256, "50% of free is {half}, total {total}");
}

#[test]
fn per_device_resource_round_trip_on_current_device() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let initial = get_current_device_resource().unwrap();
    assert!(initial.is_equal(&CudaMemoryResource::new()));

    let managed: SharedResource = Arc::new(ManagedMemoryResource::new());
    let prev = set_current_device_resource(managed.clone()).unwrap();
    assert!(Arc::ptr_eq(&prev, &initial));
    let current = get_current_device_resource().unwrap();
    assert!(Arc::ptr_eq(&current, &managed));
    let p = current.allocate(4096, 256, CudaStreamView::DEFAULT).unwrap();
    check_managed_usable(p, 4096);
    current.deallocate(p, 4096, 256, CudaStreamView::DEFAULT).unwrap();

    let prev = reset_current_device_resource().unwrap();
    assert!(Arc::ptr_eq(&prev, &managed));
    assert!(Arc::ptr_eq(&get_current_device_resource().unwrap(), &initial));
}

#[test]
fn streams_create_and_synchronize() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let s = CudaStream::new().unwrap();
    assert!(!s.view().is_default() && !s.view().is_per_thread_default());
    s.synchronize().unwrap();
    CudaStreamView::DEFAULT.synchronize().unwrap();
    CudaStreamView::PER_THREAD.synchronize().unwrap();

    let pool = CudaStreamPool::new(4).unwrap();
    assert_eq!(pool.len(), 4);
    let first: Vec<_> = (0..4).map(|_| pool.get_stream()).collect();
    for i in 0..4 {
        for j in 0..i {
            assert_ne!(first[i], first[j], "round robin handed out a stream twice in one round");
        }
        assert_eq!(pool.get_stream_by_id(i), pool.get_stream_by_id(i + 4));
    }
    assert_eq!(pool.get_stream(), first[0]);
    for v in first {
        v.synchronize().unwrap();
    }
}

#[test]
fn event_orders_one_stream_after_another() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let r = CudaMemoryResource::new();
    let bytes = 16 << 20;
    let p = r.allocate(bytes, 256, CudaStreamView::DEFAULT).unwrap();
    let (a, b) = (CudaStream::new().unwrap(), CudaStream::new().unwrap());
    let e = CudaEvent::new().unwrap();
    // SAFETY: p is live and `bytes` long for the whole test; both memsets finish before the free.
    cu(unsafe { sys::cuMemsetD8Async(p as u64, 0x11, bytes, a.view().as_raw()) }, "cuMemsetD8Async");
    e.record(a.view()).unwrap();
    e.wait_on(b.view()).unwrap();
    // SAFETY: as above.
    cu(unsafe { sys::cuMemsetD8Async(p as u64, 0x22, bytes, b.view().as_raw()) }, "cuMemsetD8Async");
    b.synchronize().unwrap();
    assert!(read_back(p, bytes).iter().all(|&x| x == 0x22), "the second write did not land last");
    a.synchronize().unwrap();
    r.deallocate(p, bytes, 256, CudaStreamView::DEFAULT).unwrap();
}
