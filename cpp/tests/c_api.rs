//! The legacy C API (`include/rmm/rmm_api.h`: `cpp/src/c_api.rs` over `rmm-legacy`) called as C
//! calls it: through the `extern "C"` functions, with raw pointers. The API is one process-wide
//! state, so every test takes `LOCK` and leaves the API finalised.

#[path = "../../tests/common/mod.rs"]
mod common;

use cudarc::driver::sys;
use rmm::device::DeviceId;
use rmm::per_device_resource::{get_per_device_resource, set_per_device_resource};
use rmm::resource::{same_type, CudaMemoryResource, ManagedMemoryResource, PoolMemoryResource};
use rmm::{CudaStream, RawStream};
use rmm_cpp::c_api::*;
use rmm_legacy::reinitialize;
use std::ffi::{c_char, c_long, c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::{Arc, Mutex, MutexGuard};

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

const HERE: *const c_char = c"tests/c_api.rs".as_ptr();
const S0: RawStream = null_mut();

fn opts(mode: RmmAllocationMode, pool: usize, logging: bool) -> RmmOptions {
    RmmOptions::new(mode, pool, logging)
}

fn init(mode: RmmAllocationMode, pool: usize) {
    let mut o = opts(mode, pool, false);
    // SAFETY: `o` is a live RmmOptions on this frame; rmmInitialize only reads it.
    assert_eq!(unsafe { rmmInitialize(&mut o) }, RmmError::SUCCESS);
}

fn alloc(bytes: usize, stream: RawStream) -> *mut c_void {
    let mut p = null_mut();
    // SAFETY: `p` is a writable local; every caller passes S0 (the legacy default stream) or the
    // handle of a CudaStream it still holds; HERE is a 'static C string.
    assert_eq!(unsafe { rmmAlloc(&mut p, bytes, stream, HERE, line!()) }, RmmError::SUCCESS);
    p
}

fn free(p: *mut c_void, stream: RawStream) -> RmmError {
    // SAFETY: every caller passes S0 or the handle of a CudaStream it still holds; HERE is a
    // 'static C string; `p` is only looked up in the API's table of live blocks, never dereferenced
    // unless it is one.
    unsafe { rmmFree(p, stream, HERE, line!()) }
}

fn name(code: RmmError) -> String {
    // SAFETY: rmmGetErrorString returns a 'static NUL-terminated byte string for every code,
    // unknown ones included.
    unsafe { CStr::from_ptr(rmmGetErrorString(code)) }.to_str().unwrap().to_owned()
}

#[test]
fn error_strings_name_every_code() {
    let names = [
        "RMM_SUCCESS",
        "RMM_ERROR_CUDA_ERROR",
        "RMM_ERROR_INVALID_ARGUMENT",
        "RMM_ERROR_NOT_INITIALIZED",
        "RMM_ERROR_OUT_OF_MEMORY",
        "RMM_ERROR_UNKNOWN",
        "RMM_ERROR_IO",
    ];
    assert_eq!(names.len() as i32, RmmError::COUNT);
    for (i, n) in names.iter().enumerate() {
        assert_eq!(name(RmmError(i as i32)), *n);
    }
    for bad in [RmmError::COUNT, -1, i32::MAX] {
        assert_eq!(name(RmmError(bad)), "Internal error. Unknown error code.");
    }
}

#[test]
fn every_call_before_initialize_is_not_initialized() {
    let _g = lock();
    // SAFETY: a null options pointer is allowed: nothing is written.
    assert!(!unsafe { rmmIsInitialized(null_mut()) });
    assert_eq!(rmmFinalize(), RmmError::NOT_INITIALIZED);
    let mut p = 0x1234 as *mut c_void;
    // SAFETY: `p` is a writable local; S0 is the legacy default stream; HERE is a 'static C string.
    assert_eq!(unsafe { rmmAlloc(&mut p, 256, S0, HERE, line!()) }, RmmError::NOT_INITIALIZED);
    assert!(p.is_null(), "a failed rmmAlloc leaves *ptr null");
    // SAFETY: rmmAlloc allows a null out pointer and a null file name; S0 is the legacy default
    // stream.
    assert_eq!(unsafe { rmmAlloc(null_mut(), 256, S0, null(), 0) }, RmmError::NOT_INITIALIZED);
    let mut q = null_mut();
    // SAFETY: `q` is a readable and writable local holding null; S0 is the legacy default stream;
    // HERE is a 'static C string.
    assert_eq!(unsafe { rmmRealloc(&mut q, 256, S0, HERE, line!()) }, RmmError::NOT_INITIALIZED);
    assert_eq!(free(null_mut(), S0), RmmError::NOT_INITIALIZED);
    let (mut f, mut t) = (0usize, 0usize);
    // SAFETY: `f` and `t` are writable usize locals.
    assert_eq!(unsafe { rmmGetInfo(&mut f, &mut t, S0) }, RmmError::NOT_INITIALIZED);
    let mut off: c_long = 0;
    // SAFETY: `off` is a writable c_long local; 0x1000 is only looked up in the API's table, never
    // read.
    assert_eq!(unsafe { rmmGetAllocationOffset(&mut off, 0x1000 as *mut c_void, S0) }, RmmError::NOT_INITIALIZED);
}

#[test]
fn bad_options_are_refused_and_initialize_nothing() {
    let _g = lock();
    for mode in [4, 8, -1] {
        let mut o = opts(RmmAllocationMode(mode), 0, false);
        // SAFETY: `o` is a live RmmOptions on this frame; rmmInitialize only reads it.
        assert_eq!(unsafe { rmmInitialize(&mut o) }, RmmError::INVALID_ARGUMENT);
        // SAFETY: a null options pointer is allowed: nothing is written.
        assert!(!unsafe { rmmIsInitialized(null_mut()) });
    }
    let mut o = opts(RmmAllocationMode::POOL_ALLOCATION, usize::MAX, false);
    // SAFETY: `o` is a live RmmOptions on this frame; rmmInitialize only reads it.
    assert_eq!(unsafe { rmmInitialize(&mut o) }, RmmError::INVALID_ARGUMENT);
    // SAFETY: a null options pointer is allowed: nothing is written.
    assert!(!unsafe { rmmIsInitialized(null_mut()) });
}

#[test]
fn reinitialize_refuses_bad_options_and_needs_a_device() {
    let _g = lock();
    assert_eq!(reinitialize(opts(RmmAllocationMode(4), 0, false)), RmmError::INVALID_ARGUMENT);
    // SAFETY: a null options pointer is allowed: nothing is written.
    assert!(!unsafe { rmmIsInitialized(null_mut()) });
    if !rmm::cuda_available() {
        assert_eq!(reinitialize(RmmOptions::default()), RmmError::CUDA_ERROR);
        // SAFETY: a null options pointer is allowed: nothing is written.
        assert!(!unsafe { rmmIsInitialized(null_mut()) });
    }
}

#[test]
fn without_a_device_initialize_is_a_cuda_error() {
    if rmm::cuda_available() {
        return;
    }
    let _g = lock();
    for mode in 0..4 {
        let mut o = opts(RmmAllocationMode(mode), 1 << 20, false);
        // SAFETY: `o` is a live RmmOptions on this frame; rmmInitialize only reads it.
        assert_eq!(unsafe { rmmInitialize(&mut o) }, RmmError::CUDA_ERROR);
    }
    // SAFETY: a null options pointer is allowed: the defaults are used.
    assert_eq!(unsafe { rmmInitialize(null_mut()) }, RmmError::CUDA_ERROR);
    // SAFETY: a null options pointer is allowed: nothing is written.
    assert!(!unsafe { rmmIsInitialized(null_mut()) });
}

#[test]
fn log_calls_check_their_arguments() {
    let _g = lock();
    // SAFETY: a null file name is allowed: the call refuses it before reading.
    assert_eq!(unsafe { rmmWriteLog(null()) }, RmmError::INVALID_ARGUMENT);
    // SAFETY: a null buffer is allowed: with a non-zero size the call refuses it and writes
    // nothing.
    assert_eq!(unsafe { rmmGetLog(null_mut(), 10) }, RmmError::INVALID_ARGUMENT);
    // SAFETY: with a size of 0 nothing is written, so the null buffer is never touched.
    assert_eq!(unsafe { rmmGetLog(null_mut(), 0) }, RmmError::SUCCESS);
    // SAFETY: a C string literal: 'static and NUL-terminated.
    assert_eq!(unsafe { rmmWriteLog(c"/dev/null/rmm.csv".as_ptr()) }, RmmError::IO);
    // Not initialised: the log is the header line alone.
    let n = rmmLogSize();
    let mut buf = vec![0u8; n];
    // SAFETY: `buf` holds exactly `n` writable bytes and outlives the call.
    assert_eq!(unsafe { rmmGetLog(buf.as_mut_ptr().cast(), n) }, RmmError::SUCCESS);
    let text = String::from_utf8(buf).unwrap();
    assert!(text.starts_with("Event Type,Device ID,Address,Stream,Size (bytes)"), "{text}");
    assert_eq!(text.lines().count(), 1);
}

// ---- on a GPU ----

#[test]
fn initialize_twice_keeps_the_first_options_and_finalize_restores_the_resource() {
    let _g = lock();
    if !common::gpu() {
        return;
    }
    let device = DeviceId::current().unwrap();
    let before = get_per_device_resource(device);
    init(RmmAllocationMode::POOL_ALLOCATION, 4 << 20);
    let mut second = opts(RmmAllocationMode::CUDA_MANAGED_MEMORY, 0, true);
    // SAFETY: `second` is a live RmmOptions on this frame; rmmInitialize only reads it.
    assert_eq!(unsafe { rmmInitialize(&mut second) }, RmmError::SUCCESS, "a repeat rmmInitialize is a no-op");
    let mut seen = RmmOptions::default();
    // SAFETY: `seen` is a writable RmmOptions local for the options in use.
    assert!(unsafe { rmmIsInitialized(&mut seen) });
    assert_eq!(seen, opts(RmmAllocationMode::POOL_ALLOCATION, 4 << 20, false));
    assert!(same_type::<PoolMemoryResource<CudaMemoryResource>>(&*get_per_device_resource(device)));
    assert_eq!(rmmFinalize(), RmmError::SUCCESS);
    assert!(Arc::ptr_eq(&get_per_device_resource(device), &before));
    assert_eq!(rmmFinalize(), RmmError::NOT_INITIALIZED);

    // Each mode installs the resource it names.
    init(RmmAllocationMode::CUDA_MANAGED_MEMORY, 0);
    assert!(same_type::<ManagedMemoryResource>(&*get_per_device_resource(device)));
    assert_eq!(rmmFinalize(), RmmError::SUCCESS);
    init(RmmAllocationMode(3), 1 << 20);
    assert!(same_type::<PoolMemoryResource<ManagedMemoryResource>>(&*get_per_device_resource(device)));
    assert_eq!(rmmFinalize(), RmmError::SUCCESS);
}

#[test]
fn reinitialize_applies_new_options_and_keeps_old_blocks_valid() {
    let _g = lock();
    if !common::gpu() {
        return;
    }
    let device = DeviceId::current().unwrap();
    let before = get_per_device_resource(device);
    assert_eq!(reinitialize(RmmOptions::default()), RmmError::SUCCESS, "not initialised: it initialises");
    let old = alloc(4096, S0);
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 13) as u8).collect();
    upload(old, &data);

    let pool = opts(RmmAllocationMode::POOL_ALLOCATION, 4 << 20, false);
    assert_eq!(reinitialize(pool), RmmError::SUCCESS);
    let mut seen = RmmOptions::default();
    // SAFETY: `seen` is a writable RmmOptions local for the options in use.
    assert!(unsafe { rmmIsInitialized(&mut seen) });
    assert_eq!(seen, pool);
    let installed = get_per_device_resource(device);
    assert!(same_type::<PoolMemoryResource<CudaMemoryResource>>(&*installed));
    assert_eq!(reinitialize(pool), RmmError::SUCCESS);
    assert!(Arc::ptr_eq(&get_per_device_resource(device), &installed), "the same options are a no-op");

    let new = alloc(4096, S0);
    let mut offset: c_long = -1;
    // SAFETY: `offset` is a writable c_long local; `new` is a live block of this API.
    assert_eq!(unsafe { rmmGetAllocationOffset(&mut offset, new, S0) }, RmmError::SUCCESS);
    assert_eq!(download(old, data.len()), data, "the block from before is untouched");
    assert_eq!(free(old, S0), RmmError::SUCCESS, "and freed through the resource it came from");
    assert_eq!(free(new, S0), RmmError::SUCCESS);
    // Bad options leave the session as it was.
    assert_eq!(reinitialize(opts(RmmAllocationMode(8), 0, false)), RmmError::INVALID_ARGUMENT);
    assert!(Arc::ptr_eq(&get_per_device_resource(device), &installed));
    assert_eq!(rmmFinalize(), RmmError::SUCCESS);
    assert!(Arc::ptr_eq(&get_per_device_resource(device), &before), "finalize restores the first resource");
}

/// Copies `data` to `p` and waits for the copy: a copy from pageable memory may still be running
/// when cuMemcpyHtoD returns, and the API's streams do not wait for the default stream.
fn upload(p: *mut c_void, data: &[u8]) {
    // SAFETY: `p` is a live device allocation of at least `data.len()` bytes (each caller allocated
    // that many) and `data` is `data.len()` readable bytes.
    assert_eq!(unsafe { sys::cuMemcpyHtoD_v2(p as u64, data.as_ptr().cast(), data.len()) }, common::CU_OK);
    // SAFETY: takes no pointers: it waits for the copy above, so `data` may be dropped after.
    assert_eq!(unsafe { sys::cuCtxSynchronize() }, common::CU_OK);
}

fn download(p: *mut c_void, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    // SAFETY: `out` is `n` writable bytes; `p` is a live device allocation of at least `n` bytes
    // whose writes each caller has synchronised.
    assert_eq!(unsafe { sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), p as u64, n) }, common::CU_OK);
    out
}

#[test]
fn realloc_keeps_the_data_in_every_mode() {
    let _g = lock();
    if !common::gpu() {
        return;
    }
    for mode in 0..4 {
        init(RmmAllocationMode(mode), 8 << 20);
        let stream = CudaStream::new().unwrap();
        let s = stream.view().as_raw();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 + mode as u32) as u8).collect();
        let mut p = alloc(data.len(), s);
        upload(p, &data);
        let first = p;
        // SAFETY: `p` is a local holding a live block of 10_000 bytes of this API; `s` is the handle
        // of `stream`, alive for this iteration; HERE is a 'static C string.
        assert_eq!(unsafe { rmmRealloc(&mut p, 50_000, s, HERE, line!()) }, RmmError::SUCCESS);
        assert_ne!(p, first);
        assert_eq!(free(first, s), RmmError::INVALID_ARGUMENT, "realloc freed the old pointer");
        stream.synchronize().unwrap();
        assert_eq!(download(p, data.len()), data, "mode {mode}: grown copy differs");
        // SAFETY: `p` is a local holding the live block of 50_000 bytes; `s` is `stream`'s live
        // handle; HERE is a 'static C string.
        assert_eq!(unsafe { rmmRealloc(&mut p, 1000, s, HERE, line!()) }, RmmError::SUCCESS);
        stream.synchronize().unwrap();
        assert_eq!(download(p, 1000), data[..1000], "mode {mode}: shrunk copy differs");
        // Realloc of a pointer this API does not know changes nothing.
        let mut foreign = 0x1000 as *mut c_void;
        // SAFETY: `foreign` is a readable and writable local; its value 0x1000 is only looked up in
        // the API's table, never dereferenced.
        assert_eq!(unsafe { rmmRealloc(&mut foreign, 10, s, HERE, line!()) }, RmmError::INVALID_ARGUMENT);
        assert_eq!(foreign as usize, 0x1000);
        // new_size 0 frees and leaves null; a null *ptr allocates.
        // SAFETY: `p` is a local holding the live 1000-byte block; `s` is `stream`'s live handle;
        // HERE is a 'static C string.
        assert_eq!(unsafe { rmmRealloc(&mut p, 0, s, HERE, line!()) }, RmmError::SUCCESS);
        assert!(p.is_null());
        // SAFETY: `p` is a local holding null, so nothing is copied; `s` is `stream`'s live handle;
        // HERE is a 'static C string.
        assert_eq!(unsafe { rmmRealloc(&mut p, 300, s, HERE, line!()) }, RmmError::SUCCESS);
        assert!(!p.is_null());
        assert_eq!(free(p, s), RmmError::SUCCESS);
        assert_eq!(rmmFinalize(), RmmError::SUCCESS);
    }
}

#[test]
fn pool_allocations_come_from_one_chunk() {
    let _g = lock();
    if !common::gpu() {
        return;
    }
    init(RmmAllocationMode::POOL_ALLOCATION, 16 << 20);
    let a = alloc(1 << 20, S0);
    let b = alloc(1 << 20, S0);
    let (mut oa, mut ob): (c_long, c_long) = (-1, -1);
    // SAFETY: `oa` is a writable c_long local; `a` is a live block of this API.
    assert_eq!(unsafe { rmmGetAllocationOffset(&mut oa, a, S0) }, RmmError::SUCCESS);
    // SAFETY: `ob` is a writable c_long local; `b` is a live block of this API.
    assert_eq!(unsafe { rmmGetAllocationOffset(&mut ob, b, S0) }, RmmError::SUCCESS);
    assert_eq!(ob - oa, b as c_long - a as c_long, "both lie in the pool's one 16 MiB chunk");
    assert!(oa.max(ob) > 0 && oa.max(ob) < 16 << 20);
    let mut inner: c_long = -1;
    // SAFETY: `a` is a live block of 1 MiB, so 1000 bytes in lies inside it.
    let mid = unsafe { a.cast::<u8>().add(1000) }.cast();
    // SAFETY: `inner` is a writable c_long local; `mid` lies inside the live block `a`.
    assert_eq!(unsafe { rmmGetAllocationOffset(&mut inner, mid, S0) }, RmmError::SUCCESS);
    assert_eq!(inner, oa + 1000);
    // SAFETY: a null offset pointer is allowed: the call refuses it and writes nothing.
    assert_eq!(unsafe { rmmGetAllocationOffset(null_mut(), a, S0) }, RmmError::INVALID_ARGUMENT);
    // SAFETY: `a` is a live block of 1 MiB: 1 << 20 bytes in is one past its end, which `add`
    // allows.
    let end = unsafe { a.cast::<u8>().add(1 << 20) }.cast();
    let _ = free(b, S0);
    // SAFETY: `inner` is a writable c_long local; `end` is only looked up in the API's table, never
    // read.
    assert_eq!(unsafe { rmmGetAllocationOffset(&mut inner, end, S0) }, RmmError::INVALID_ARGUMENT);
    let (mut f, mut t) = (0usize, 0usize);
    // SAFETY: `f` and `t` are writable usize locals.
    assert_eq!(unsafe { rmmGetInfo(&mut f, &mut t, S0) }, RmmError::SUCCESS);
    assert!(t > 0 && f <= t, "free {f} total {t}");
    // SAFETY: a null free-size pointer is allowed (the call refuses it); `t` is a writable local.
    assert_eq!(unsafe { rmmGetInfo(null_mut(), &mut t, S0) }, RmmError::INVALID_ARGUMENT);
    assert_eq!(free(a, S0), RmmError::SUCCESS);
    assert_eq!(rmmFinalize(), RmmError::SUCCESS);
}

#[test]
fn zero_bytes_null_pointers_and_unknown_frees() {
    let _g = lock();
    if !common::gpu() {
        return;
    }
    init(RmmAllocationMode::POOL_ALLOCATION, 4 << 20);
    let mut p = 0x1234 as *mut c_void;
    // SAFETY: `p` is a writable local; S0 is the legacy default stream; HERE is a 'static C string.
    assert_eq!(unsafe { rmmAlloc(&mut p, 0, S0, HERE, line!()) }, RmmError::SUCCESS);
    assert!(p.is_null(), "0 bytes give null");
    assert_eq!(free(null_mut(), S0), RmmError::SUCCESS);
    // SAFETY: a null out pointer is allowed for 0 bytes; S0 is the legacy default stream; HERE is a
    // 'static C string.
    assert_eq!(unsafe { rmmAlloc(null_mut(), 0, S0, HERE, line!()) }, RmmError::SUCCESS);
    // SAFETY: a null out pointer is refused before anything is written; S0 is the legacy default
    // stream; HERE is a 'static C string.
    assert_eq!(unsafe { rmmAlloc(null_mut(), 8, S0, HERE, line!()) }, RmmError::INVALID_ARGUMENT);
    // SAFETY: rmmRealloc refuses a null pointer before reading through it; S0 is the legacy default
    // stream; HERE is a 'static C string.
    assert_eq!(unsafe { rmmRealloc(null_mut(), 8, S0, HERE, line!()) }, RmmError::INVALID_ARGUMENT);

    let q = alloc(4096, S0);
    let mut local = 0u64;
    // SAFETY: `q` is a live block of 4096 bytes, so 256 bytes in lies inside it.
    for bad in [unsafe { q.cast::<u8>().add(256) }.cast(), (&mut local as *mut u64).cast(), 0x10 as *mut c_void] {
        assert_eq!(free(bad, S0), RmmError::INVALID_ARGUMENT);
    }
    assert_eq!(free(q, S0), RmmError::SUCCESS, "q stayed live through the bad frees");
    assert_eq!(free(q, S0), RmmError::INVALID_ARGUMENT, "double free");
    // The pool keeps working.
    let whole = alloc(4 << 20, S0);
    assert_eq!(free(whole, S0), RmmError::SUCCESS);
    assert_eq!(rmmFinalize(), RmmError::SUCCESS);
}

#[test]
fn huge_requests_are_out_of_memory_and_leave_null() {
    let _g = lock();
    if !common::gpu() {
        return;
    }
    init(RmmAllocationMode::POOL_ALLOCATION, 4 << 20);
    // Larger than any pool can hold: refused by the pool before the driver is asked.
    let mut p = 0x1234 as *mut c_void;
    // SAFETY: `p` is a writable local; S0 is the legacy default stream; HERE is a 'static C string.
    assert_eq!(unsafe { rmmAlloc(&mut p, usize::MAX, S0, HERE, line!()) }, RmmError::OUT_OF_MEMORY);
    assert!(p.is_null());
    let q = alloc(100, S0);
    let mut r = q;
    // SAFETY: `r` is a local holding `q`, a live block of this API; S0 is the legacy default
    // stream; HERE is a 'static C string.
    assert_eq!(unsafe { rmmRealloc(&mut r, usize::MAX, S0, HERE, line!()) }, RmmError::OUT_OF_MEMORY);
    assert_eq!(r, q, "a failed realloc leaves the pointer");
    assert_eq!(free(q, S0), RmmError::SUCCESS, "and its allocation live");
    assert_eq!(rmmFinalize(), RmmError::SUCCESS);
}

#[test]
fn finalize_frees_what_is_still_live() {
    let _g = lock();
    if !common::gpu() {
        return;
    }
    init(RmmAllocationMode::CUDA_DEFAULT_ALLOCATION, 0);
    let (free0, _) = rmm::available_device_memory().unwrap();
    let stream = CudaStream::new().unwrap();
    let left: Vec<_> = (0..4).map(|_| alloc(64 << 20, stream.view().as_raw())).collect();
    drop(stream); // the stream is gone before finalize: its frees must not name it
    assert_eq!(rmmFinalize(), RmmError::SUCCESS);
    let (free1, _) = rmm::available_device_memory().unwrap();
    if common::under_sanitizer() {
        println!("under compute-sanitizer: free device memory is not compared ({free0} -> {free1})");
    } else {
        assert!(free1 + (8 << 20) >= free0, "256 MiB left live were not freed: {free0} -> {free1}");
    }
    init(RmmAllocationMode::CUDA_DEFAULT_ALLOCATION, 0);
    assert_eq!(free(left[0], S0), RmmError::INVALID_ARGUMENT, "a new session does not know them");
    assert_eq!(rmmFinalize(), RmmError::SUCCESS);
}

#[test]
fn many_threads_at_once() {
    let _g = lock();
    if !common::gpu() {
        return;
    }
    init(RmmAllocationMode::POOL_ALLOCATION, 64 << 20);
    let seed = common::seed("c_api many_threads_at_once", 14);
    std::thread::scope(|scope| {
        for t in 0..8u64 {
            scope.spawn(move || {
                let stream = CudaStream::new().unwrap();
                let s = stream.view().as_raw();
                let mut rng = common::Rng::new(seed + t);
                let mut live: Vec<*mut c_void> = Vec::new();
                for _ in 0..5000 {
                    if live.is_empty() || rng.below(3) != 0 && live.len() < 64 {
                        let bytes = rng.log_uniform(1, 1 << 20);
                        let p = alloc(bytes, s);
                        // Written before a realloc copies it (initcheck: no uninitialised reads).
                        // SAFETY: `p` is a live allocation of `bytes` bytes used on this stream.
                        unsafe { rmm::copy::fill_async(p.cast(), t as u8, bytes, stream.view()) }.unwrap();
                        live.push(p);
                    } else if rng.below(2) == 0 {
                        let i = rng.below(live.len());
                        let mut p = live[i];
                        let bytes = rng.log_uniform(1, 1 << 20);
                        // SAFETY: `p` is a local holding a live block of this API; `s` is the
                        // handle of this thread's `stream`, alive until the closure ends; HERE is a
                        // 'static C string.
                        assert_eq!(unsafe { rmmRealloc(&mut p, bytes, s, HERE, line!()) }, RmmError::SUCCESS);
                        // A grown block's tail is unwritten, and the next realloc may copy it.
                        // SAFETY: `p` is a live allocation of `bytes` bytes used on this stream.
                        unsafe { rmm::copy::fill_async(p.cast(), t as u8, bytes, stream.view()) }.unwrap();
                        live[i] = p;
                    } else {
                        let p = live.swap_remove(rng.below(live.len()));
                        assert_eq!(free(p, s), RmmError::SUCCESS);
                    }
                }
                for p in live {
                    assert_eq!(free(p, s), RmmError::SUCCESS);
                }
                stream.synchronize().unwrap();
            });
        }
    });
    assert_eq!(rmmFinalize(), RmmError::SUCCESS);
}

#[test]
fn logging_records_each_call_with_its_site() {
    let _g = lock();
    if !common::gpu() {
        return;
    }
    let mut o = opts(RmmAllocationMode::POOL_ALLOCATION, 4 << 20, true);
    // SAFETY: `o` is a live RmmOptions on this frame; rmmInitialize only reads it.
    assert_eq!(unsafe { rmmInitialize(&mut o) }, RmmError::SUCCESS);
    let mut p = alloc(1000, S0);
    // Written before the realloc copies it (initcheck).
    upload(p, &[1; 1000]);
    // SAFETY: `p` is a local holding a live 1000-byte block of this API; S0 is the legacy default
    // stream; HERE is a 'static C string.
    assert_eq!(unsafe { rmmRealloc(&mut p, 2000, S0, HERE, 77) }, RmmError::SUCCESS);
    assert_eq!(free(p, S0), RmmError::SUCCESS);
    let dir = std::env::temp_dir().join(format!("rmm_c_api_log_{}.csv", std::process::id()));
    let path = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
    // SAFETY: `path` is a live CString: NUL-terminated.
    assert_eq!(unsafe { rmmWriteLog(path.as_ptr()) }, RmmError::SUCCESS);
    let text = std::fs::read_to_string(&dir).unwrap();
    let _ = std::fs::remove_file(&dir);
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(rows[0].starts_with("Alloc,") && rows[1].starts_with("Realloc,") && rows[2].starts_with("Free,"));
    assert!(rows[1].ends_with("tests/c_api.rs:77"), "{}", rows[1]);
    assert!(rows[1].contains(&format!("{p:p}")), "{} names {p:p}", rows[1]);
    assert_eq!(rmmLogSize(), text.len());
    assert_eq!(rmmFinalize(), RmmError::SUCCESS);
    assert!(text.len() > rmmLogSize(), "finalize empties the log");
}

/// C code may leave any byte in the `bool` field (C reads it as true when not 0): a byte of 2
/// turns logging on, and `rmmIsInitialized` hands back a valid `bool` (1).
#[test]
fn a_logging_byte_of_two_is_true() {
    let _g = lock();
    if !common::gpu() {
        return;
    }
    let mut o = opts(RmmAllocationMode::CUDA_DEFAULT_ALLOCATION, 0, false);
    // Written as a C caller would: a raw byte, not a Rust value (the field is one byte in C).
    // SAFETY: `enable_logging` is a one-byte field of `o`.
    unsafe { std::ptr::addr_of_mut!(o.enable_logging).cast::<u8>().write(2) };
    // SAFETY: `o` is a live RmmOptions on this frame (its logging byte is a u8, so 2 is a valid
    // value); rmmInitialize only reads it.
    assert_eq!(unsafe { rmmInitialize(&mut o) }, RmmError::SUCCESS);
    let p = alloc(1000, S0);
    assert_eq!(free(p, S0), RmmError::SUCCESS);
    let mut seen = RmmOptions::default();
    // SAFETY: `seen` is a writable RmmOptions local for the options in use.
    assert!(unsafe { rmmIsInitialized(&mut seen) });
    // SAFETY: as above, read as the byte it is.
    assert_eq!(unsafe { std::ptr::addr_of!(seen.enable_logging).cast::<u8>().read() }, 1);
    let mut buf = vec![0u8; rmmLogSize()];
    // SAFETY: `buf` holds exactly `buf.len()` writable bytes and outlives the call.
    assert_eq!(unsafe { rmmGetLog(buf.as_mut_ptr().cast(), buf.len()) }, RmmError::SUCCESS);
    let text = String::from_utf8(buf).unwrap();
    assert_eq!(text.lines().count(), 3, "the header, the alloc and the free: {text}");
    assert_eq!(rmmFinalize(), RmmError::SUCCESS);
}

/// A realloc whose free of the old block fails after the copy gives the new block back: the
/// caller's pointer stays valid and live, nothing else is outstanding.
#[test]
fn realloc_whose_old_free_fails_leaks_nothing() {
    use rmm::resource::CallbackMemoryResource;
    use rmm::resource::HostMemoryResource;
    use rmm::{Error, MemoryResource, Misuse};
    use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

    let _g = lock();
    if !common::gpu() {
        return;
    }
    init(RmmAllocationMode::CUDA_DEFAULT_ALLOCATION, 0);
    let device = DeviceId::current().unwrap();
    let host = Arc::new(HostMemoryResource::new());
    let outstanding = Arc::new(AtomicIsize::new(0));
    let refuse = Arc::new(AtomicUsize::new(0));
    let (h1, h2, o1, o2, r) = (host.clone(), host, outstanding.clone(), outstanding.clone(), refuse.clone());
    // SAFETY: the callbacks hand out and free blocks of a host resource, which meets the
    // resource contract; refusing a free changes nothing.
    let counted = unsafe {
        CallbackMemoryResource::new(
            move |bytes, alignment, stream| {
                let p = h1.allocate(bytes, alignment, stream)?;
                o1.fetch_add(1, Ordering::SeqCst);
                Ok(p)
            },
            move |ptr: *mut u8, bytes, alignment, stream| {
                if r.load(Ordering::SeqCst) == ptr as usize {
                    return Err(Error::Misuse(Misuse::UnknownPointer { ptr: ptr as usize }));
                }
                h2.deallocate(ptr, bytes, alignment, stream)?;
                o2.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            },
        )
    };
    let created = set_per_device_resource(device, Arc::new(counted));

    let mut p = alloc(1000, S0);
    // SAFETY: `p` is a live host block of 1000 bytes.
    unsafe { std::ptr::write_bytes(p.cast::<u8>(), 7, 1000) };
    let first = p;
    refuse.store(p as usize, Ordering::SeqCst);
    // SAFETY: `p` is a local holding a live 1000-byte host block of this API; S0 is the legacy
    // default stream; HERE is a 'static C string.
    assert_eq!(unsafe { rmmRealloc(&mut p, 5000, S0, HERE, line!()) }, RmmError::INVALID_ARGUMENT);
    assert_eq!(p, first, "the caller keeps its pointer");
    assert_eq!(outstanding.load(Ordering::SeqCst), 1, "the new block was given back");
    // SAFETY: `p` is still a live host block of 1000 bytes.
    assert!(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), 1000) }.iter().all(|&b| b == 7));
    refuse.store(0, Ordering::SeqCst);
    assert_eq!(free(p, S0), RmmError::SUCCESS, "the old block is still live");
    assert_eq!(outstanding.load(Ordering::SeqCst), 0);

    set_per_device_resource(device, created);
    assert_eq!(rmmFinalize(), RmmError::SUCCESS);
}

const KEPT: &str = "another user's file\n";

/// Like every log file of the library, the event log is never written through a symbolic link.
#[test]
fn the_c_api_event_log_refuses_a_link() {
    let _serial = lock();
    let dir = std::env::temp_dir().join(format!("rmm-c-api-log-link-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // `victim` holds another user's file; `log` is a symbolic link to it.
    let (victim, log) = (dir.join("victim"), dir.join("rmm.log"));
    std::fs::write(&victim, KEPT).unwrap();
    std::os::unix::fs::symlink(&victim, &log).unwrap();
    let name = std::ffi::CString::new(log.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated name.
    assert_eq!(unsafe { rmmWriteLog(name.as_ptr()) }, RmmError::IO);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), KEPT);
    let fresh = std::ffi::CString::new(dir.join("events.csv").to_str().unwrap()).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { rmmWriteLog(fresh.as_ptr()) }, RmmError::SUCCESS);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_pointers_to_realloc_and_offset_are_refused() {
    // The C API copies only from blocks it handed out (rmmRealloc): any other address, mapped or
    // not, is refused before anything reads it.
    let _g = lock();
    if !common::gpu() {
        return;
    }
    init(RmmAllocationMode::POOL_ALLOCATION, 4 << 20);
    let mut local = 0u64;
    for bad in [8usize, 0x1000, (&mut local as *mut u64) as usize, usize::MAX - 15] {
        let mut p = bad as *mut c_void;
        // SAFETY: `p` is a readable and writable local; its value `bad` is only looked up in the
        // API's table, never dereferenced; S0 is the legacy default stream; HERE is a 'static C
        // string.
        assert_eq!(unsafe { rmmRealloc(&mut p, 64, S0, HERE, line!()) }, RmmError::INVALID_ARGUMENT, "{bad:#x}");
        assert_eq!(p as usize, bad, "the caller's pointer is left as it was");
        let mut offset: std::ffi::c_long = 0;
        // SAFETY: `offset` is a writable c_long local; `bad` is only looked up in the API's table,
        // never read.
        assert_eq!(unsafe { rmmGetAllocationOffset(&mut offset, bad as *mut c_void, S0) }, RmmError::INVALID_ARGUMENT);
        assert_eq!(free(bad as *mut c_void, S0), RmmError::INVALID_ARGUMENT);
    }
    let q = alloc(4096, S0);
    assert_eq!(free(q, S0), RmmError::SUCCESS);
    assert_eq!(rmmFinalize(), RmmError::SUCCESS);
}
