//! The pool inside CUDA graph capture, on a GPU (elsewhere each test prints `skipped: no CUDA
//! device`): a captured graph that allocates, sets and copies memory (memset and copy nodes, no
//! kernel) and frees, replayed 1000 times with eager allocations on other streams in between, in
//! each capture mode, for the classic pool and the virtual-memory pool.

mod common;

use common::gpu;
use cudarc::driver::sys;
use rmm::resource::{CudaMemoryResource, PoolMemoryResource, VirtualPoolMemoryResource};
use rmm::{CudaStream, CudaStreamView, MemoryResource};
use std::sync::Arc;

const MIB: usize = 1 << 20;
const REPLAYS: usize = 1000;

fn cu(status: sys::CUresult, call: &str) {
    assert_eq!(status, sys::CUresult::CUDA_SUCCESS, "{call} failed");
}

fn memset(ptr: usize, bytes: usize, value: u8, s: CudaStreamView) {
    // SAFETY: ptr..ptr+bytes is a live device allocation; the stream is valid.
    cu(unsafe { sys::cuMemsetD8Async(ptr as u64, value, bytes, s.as_raw()) }, "cuMemsetD8Async");
}

fn copy(dst: usize, src: usize, bytes: usize, s: CudaStreamView) {
    // SAFETY: both ranges are live device allocations of `bytes`; the stream is valid.
    cu(unsafe { sys::cuMemcpyDtoDAsync_v2(dst as u64, src as u64, bytes, s.as_raw()) }, "cuMemcpyDtoDAsync");
}

/// Whether `p..p+len` and `q..q+n` overlap.
fn in_range(p: usize, len: usize, q: usize, n: usize) -> bool {
    p < q + n && q < p + len
}

fn read(ptr: usize, bytes: usize) -> Vec<u8> {
    let mut out = vec![0u8; bytes];
    // SAFETY: a synchronous copy from a live device allocation into a host buffer of that size.
    cu(unsafe { sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), ptr as u64, bytes) }, "cuMemcpyDtoH");
    out
}

/// What the test needs of a pool with capture support.
trait CapturePool: MemoryResource {
    fn begin(&self, s: CudaStreamView) -> u64;
    fn end(&self, s: CudaStreamView);
    fn release(&self, id: u64);
    fn check(&self);
}

/// Both pools have the same capture methods, inherent to each.
macro_rules! capture_pool {
    ($t:ty) => {
        impl CapturePool for $t {
            fn begin(&self, s: CudaStreamView) -> u64 {
                self.begin_capture(s).unwrap()
            }
            fn end(&self, s: CudaStreamView) {
                self.end_capture(s)
            }
            fn release(&self, id: u64) {
                // SAFETY: the tests call this only after destroying every graph of capture `id`.
                unsafe { self.release_capture(id) }.unwrap()
            }
            fn check(&self) {
                self.check_invariants().unwrap()
            }
        }
    };
}

capture_pool!(PoolMemoryResource<Arc<CudaMemoryResource>>);
capture_pool!(VirtualPoolMemoryResource);

/// Captures on a stream of its own, in `mode`: allocate `a`, set it, allocate `b`, copy `a` into
/// it and `b` into `out`, free both, allocate `c` (the capture's own memory again), set it, copy
/// it into `out2`, free it. Then replays the graph `REPLAYS` times on another stream, with eager
/// allocations on two more streams in between that must never get the capture's blocks, and
/// checks `out` and `out2` after every replay.
fn replay_capture(pool: &dyn CapturePool, mode: sys::CUstreamCaptureMode) {
    let n = 3 * MIB + 4096;
    let cs = CudaStream::with_flags(true).unwrap();
    let launch = CudaStream::with_flags(true).unwrap();
    let eager: Vec<CudaStream> = (0..2).map(|_| CudaStream::with_flags(true).unwrap()).collect();
    let out = pool.allocate(n, 256, launch.view()).unwrap() as usize;
    let out2 = pool.allocate(4096, 256, launch.view()).unwrap() as usize;
    launch.synchronize().unwrap();

    // SAFETY: a live stream, not capturing.
    cu(unsafe { sys::cuStreamBeginCapture_v2(cs.view().as_raw(), mode) }, "cuStreamBeginCapture");
    let id = pool.begin(cs.view());
    let a = pool.allocate(n, 256, cs.view()).unwrap() as usize;
    memset(a, n, 0x5a, cs.view());
    // Eager work on another stream of this thread while the capture runs: in every mode the
    // pool's calls for it must leave the capture valid.
    let during = pool.allocate(MIB, 256, eager[0].view()).unwrap() as usize;
    assert!(!in_range(during, MIB, a, n), "an eager block overlaps the capture's block");
    memset(during, MIB, 1, eager[0].view());
    pool.deallocate(during as *mut u8, MIB, 256, eager[0].view()).unwrap();
    let b = pool.allocate(n, 256, cs.view()).unwrap() as usize;
    copy(b, a, n, cs.view());
    copy(out, b, n, cs.view());
    pool.deallocate(a as *mut u8, n, 256, cs.view()).unwrap();
    pool.deallocate(b as *mut u8, n, 256, cs.view()).unwrap();
    let c = pool.allocate(4096, 256, cs.view()).unwrap() as usize;
    memset(c, 4096, 0x33, cs.view());
    copy(out2, c, 4096, cs.view());
    pool.deallocate(c as *mut u8, 4096, 256, cs.view()).unwrap();
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    // SAFETY: the stream is capturing; graph is a valid out pointer.
    cu(unsafe { sys::cuStreamEndCapture(cs.view().as_raw(), &mut graph) }, "cuStreamEndCapture");
    pool.end(cs.view());
    let mut exec: sys::CUgraphExec = std::ptr::null_mut();
    // SAFETY: a graph just captured; exec is a valid out pointer.
    cu(unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) }, "cuGraphInstantiate");
    let captured = [a, b, c];
    let in_capture = |p: usize| captured.iter().any(|&x| in_range(p, n, x, n));

    for i in 0..REPLAYS {
        memset(out, n, 0, launch.view());
        memset(out2, 4096, 0, launch.view());
        // SAFETY: a live executable graph and stream.
        cu(unsafe { sys::cuGraphLaunch(exec, launch.view().as_raw()) }, "cuGraphLaunch");
        // Eager allocations on other streams while the graph may run: never the capture's blocks.
        for (k, s) in eager.iter().enumerate() {
            let bytes = (1 + (i * 7 + k * 3) % 5) * MIB;
            let p = pool.allocate(bytes, 256, s.view()).unwrap() as usize;
            assert!(!in_capture(p), "replay {i}: an eager block {p:#x} overlaps the capture's memory");
            memset(p, bytes, (i % 251) as u8, s.view());
            pool.deallocate(p as *mut u8, bytes, 256, s.view()).unwrap();
        }
        if i % 100 == 99 || i == REPLAYS - 1 {
            launch.synchronize().unwrap();
            assert!(read(out, n).iter().all(|&x| x == 0x5a), "replay {i}: out");
            assert!(read(out2, 4096).iter().all(|&x| x == 0x33), "replay {i}: out2");
        }
    }
    launch.synchronize().unwrap();
    for s in &eager {
        s.synchronize().unwrap();
    }
    // SAFETY: nothing runs the graph any more; each is destroyed once.
    unsafe {
        cu(sys::cuGraphExecDestroy(exec), "cuGraphExecDestroy");
        cu(sys::cuGraphDestroy(graph), "cuGraphDestroy");
    }
    pool.release(id);
    pool.deallocate(out as *mut u8, n, 256, launch.view()).unwrap();
    pool.deallocate(out2 as *mut u8, 4096, 256, launch.view()).unwrap();
    pool.check();
}

/// One capture at a time in this process: a capture in global mode is invalidated by a call that
/// is unsafe during capture from any thread (a synchronisation, a cuMemAlloc), which the other
/// test, run by the harness on another thread, makes between its captures.
static ONE_CAPTURE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

const MODES: [sys::CUstreamCaptureMode; 3] = [
    sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
    sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
    sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
];

#[test]
fn pool_capture_replayed_1000_times_in_every_mode() {
    if !gpu() {
        return;
    }
    let _alone = ONE_CAPTURE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for mode in MODES {
        let pool = PoolMemoryResource::new(Arc::new(CudaMemoryResource::new()), 16 * MIB, None).unwrap();
        replay_capture(&pool, mode);
    }
}

#[test]
fn virtual_pool_capture_replayed_1000_times_in_every_mode() {
    if !gpu() {
        return;
    }
    let _alone = ONE_CAPTURE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for mode in MODES {
        let pool = match VirtualPoolMemoryResource::new(1 << 30, 16 * MIB) {
            Ok(p) => p,
            Err(e) => {
                println!("skipped: no virtual memory management ({e})");
                return;
            }
        };
        replay_capture(&pool, mode);
    }
}
