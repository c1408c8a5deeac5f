//! Process exit with pools still alive: a static pool, a thread-local pool (dropped while the
//! process exits) and a per-device current resource, all holding live allocations, must neither
//! crash nor hang the exit, whether the program calls `exit(0)` or returns normally.
//!
//! Each test runs this very test binary again as a child, selecting itself by name, with
//! `RMM_RS_EXIT_CHILD` set: the child sets everything up and ends; the parent asserts exit status
//! 0 within a time limit and that the child reached its end (so a filter that matched nothing
//! cannot pass).

use cudarc::driver::sys;
use rmm::adaptor::StatisticsResourceAdaptor;
use rmm::device::DeviceId;
use rmm::per_device_resource::set_per_device_resource;
use rmm::resource::{CudaMemoryResource, HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStream, CudaStreamView, MemoryResource, SharedResource};
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

const MIB: usize = 1 << 20;
const CHILD_VAR: &str = "RMM_RS_EXIT_CHILD";
const REACHED: &str = "exit child: reached the end";
/// Far more than a clean exit needs; a hang shows up as this limit running out.
const LIMIT: Duration = Duration::from_secs(60);

/// How the child ends.
#[derive(Clone, Copy)]
enum End {
    /// `std::process::exit(0)` from inside the test: no unwinding, statics stay, the calling
    /// thread's thread-locals are destroyed during `exit`.
    Exit,
    /// The test returns and the harness's `main` returns.
    Return,
}

/// Runs test `name` of this binary as a child in mode `mode` and checks how it ended.
fn run_child(name: &str, mode: &str) {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} ({mode}): the child did not exit within {LIMIT:?} (hang at exit)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (mut out, mut err) = (String::new(), String::new());
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    println!("{name} ({mode}): {status} after {:?}", start.elapsed());
    assert!(status.success(), "{name} ({mode}) ended with {status}\nstdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains(REACHED), "{name} ({mode}): the child never ran its body\nstdout:\n{out}\nstderr:\n{err}");
}

/// The child's side: `Some(mode)` when this process is the child.
fn child_mode() -> Option<String> {
    std::env::var(CHILD_VAR).ok()
}

/// Ends the child as `end` says, after saying it got there.
fn finish(end: End) {
    println!("{REACHED}");
    if let End::Exit = end {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        std::process::exit(0);
    }
}

fn end_of(mode: &str) -> End {
    if mode == "exit" {
        End::Exit
    } else {
        End::Return
    }
}

type HostPool = PoolMemoryResource<Arc<HostMemoryResource>>;

thread_local! {
    /// Dropped while the thread (or, with `exit`, the process) ends, with blocks still handed out.
    static HOST_LOCAL: HostPool = PoolMemoryResource::new(Arc::new(HostMemoryResource::new()), MIB, None).unwrap();
}

/// Leaves a static pool, a thread-local pool and a per-device resource alive with live blocks.
fn host_child(end: End) {
    static STATIC_POOL: OnceLock<HostPool> = OnceLock::new();
    let pool =
        STATIC_POOL.get_or_init(|| PoolMemoryResource::new(Arc::new(HostMemoryResource::new()), MIB, None).unwrap());
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let streams = [CudaStreamView::DEFAULT, unsafe { CudaStreamView::from_handle(0x1000) }, CudaStreamView::PER_THREAD];
    for (i, &s) in streams.iter().enumerate() {
        let p = pool.allocate(1000 * (i + 1), 256, s).unwrap();
        let q = pool.allocate(3 * MIB, 256, s).unwrap(); // grows the pool
        pool.deallocate(p, 1000 * (i + 1), 256, s).unwrap();
        let _ = q; // stays handed out
    }
    HOST_LOCAL.with(|local| {
        let _live = local.allocate(4096, 256, CudaStreamView::DEFAULT).unwrap();
    });
    // A device id no real device has: the table is keyed by id and needs no driver.
    let current: SharedResource = Arc::new(StatisticsResourceAdaptor::new(
        PoolMemoryResource::new(Arc::new(HostMemoryResource::new()), MIB, None).unwrap(),
    ));
    let _live = current.allocate(5000, 256, CudaStreamView::DEFAULT).unwrap();
    set_per_device_resource(DeviceId(-4242), current);
    // Another thread still allocating from the static pool while the process ends.
    std::thread::spawn(move || loop {
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        if let Ok(p) = pool.allocate(512, 256, unsafe { CudaStreamView::from_handle(0x2000) }) {
            // SAFETY: a stream name for resources over host memory: no driver call sees it.
            let _ = pool.deallocate(p, 512, 256, unsafe { CudaStreamView::from_handle(0x2000) });
        }
    });
    finish(end);
}

#[test]
fn host_pools_alive_at_exit_do_not_crash_or_hang() {
    match child_mode() {
        Some(mode) => host_child(end_of(&mode)),
        None => {
            run_child("host_pools_alive_at_exit_do_not_crash_or_hang", "exit");
            run_child("host_pools_alive_at_exit_do_not_crash_or_hang", "return");
        }
    }
}

type DevicePool = PoolMemoryResource<CudaMemoryResource>;

thread_local! {
    static DEVICE_LOCAL: OnceLock<DevicePool> = const { OnceLock::new() };
}

fn fill_async(ptr: *mut u8, bytes: usize, value: u8, s: CudaStreamView) {
    // SAFETY: ptr..ptr+bytes is a live device allocation; the stream is alive.
    let status = unsafe { sys::cuMemsetD8Async(ptr as u64, value, bytes, s.as_raw()) };
    assert_eq!(status, sys::CUresult::CUDA_SUCCESS, "cuMemsetD8Async");
}

/// The same on the device: pools over device memory with events recorded between two streams,
/// work still queued, and the pool set as the current device's resource.
fn device_child(end: End) {
    static STATIC_POOL: OnceLock<DevicePool> = OnceLock::new();
    let pool = STATIC_POOL.get_or_init(|| PoolMemoryResource::new(CudaMemoryResource::new(), 64 * MIB, None).unwrap());
    // Streams leak on purpose: their work is still queued when the process ends.
    let (a, b) = (Box::leak(Box::new(CudaStream::new().unwrap())), Box::leak(Box::new(CudaStream::new().unwrap())));
    let p = pool.allocate(32 * MIB, 256, a.view()).unwrap();
    fill_async(p, 32 * MIB, 1, a.view());
    pool.deallocate(p, 32 * MIB, 256, a.view()).unwrap();
    // b asks for a's blocks; a's next call publishes them (records an event); b then waits on it.
    let q = pool.allocate(48 * MIB, 256, b.view()).unwrap();
    let r = pool.allocate(MIB, 256, a.view()).unwrap();
    let s = pool.allocate(32 * MIB, 256, b.view()).unwrap();
    for (ptr, bytes, stream) in [(q, 48 * MIB, b.view()), (r, MIB, a.view()), (s, 32 * MIB, b.view())] {
        fill_async(ptr, bytes, 2, stream); // still running when the process ends
    }
    DEVICE_LOCAL.with(|local| {
        let local = local.get_or_init(|| PoolMemoryResource::new(CudaMemoryResource::new(), 16 * MIB, None).unwrap());
        let live = local.allocate(8 * MIB, 256, a.view()).unwrap();
        fill_async(live, 8 * MIB, 3, a.view());
    });
    let current: SharedResource = Arc::new(StatisticsResourceAdaptor::new(
        PoolMemoryResource::new(CudaMemoryResource::new(), 16 * MIB, None).unwrap(),
    ));
    let live = current.allocate(4 * MIB, 256, b.view()).unwrap();
    fill_async(live, 4 * MIB, 4, b.view());
    rmm::per_device_resource::set_current_device_resource(current).unwrap();
    finish(end);
}

#[test]
fn device_pools_alive_at_exit_do_not_crash_or_hang() {
    match child_mode() {
        Some(mode) => device_child(end_of(&mode)),
        None => {
            if !rmm::cuda_available() {
                println!("skipped: no CUDA device");
                return;
            }
            for _ in 0..3 {
                run_child("device_pools_alive_at_exit_do_not_crash_or_hang", "exit");
                run_child("device_pools_alive_at_exit_do_not_crash_or_hang", "return");
            }
        }
    }
}
