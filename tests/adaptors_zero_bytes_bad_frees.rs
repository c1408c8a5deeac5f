//! The adaptors and the binning resource follow RMM 26.10 on 0-byte requests and bad frees: what
//! they count, what they log and what they pass to the upstream. Host memory only.

use parking_lot::Mutex;
use rmm::adaptor::{
    Counter, LimitingResourceAdaptor, LoggingResourceAdaptor, StatisticsResourceAdaptor, TrackingResourceAdaptor,
};
use rmm::logger::{default_logger, Sink};
use rmm::resource::{BinningMemoryResource, HostMemoryResource};
use rmm::SharedResource;
use rmm::{CudaStreamView, MemoryResource, Result};
use std::sync::Arc;

const S: CudaStreamView = CudaStreamView::DEFAULT;

/// Host memory that records every call it gets: `("alloc" | "free", bytes)`.
#[derive(Debug, Default)]
struct Recorder {
    inner: HostMemoryResource,
    calls: Mutex<Vec<(&'static str, usize)>>,
}

impl Recorder {
    fn calls(&self) -> Vec<(&'static str, usize)> {
        self.calls.lock().clone()
    }
}

// SAFETY: every call goes unchanged to the host resource, whose promises these are.
unsafe impl MemoryResource for Recorder {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        self.calls.lock().push(("alloc", bytes));
        self.inner.allocate(bytes, alignment, stream)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        self.calls.lock().push(("free", bytes));
        self.inner.deallocate(ptr, bytes, alignment, stream)
    }

    fn is_device_accessible(&self) -> bool {
        false
    }

    fn is_host_accessible(&self) -> bool {
        true
    }
}

fn c(value: i64, peak: i64, total: i64) -> Counter {
    Counter { value, peak, total }
}

#[test]
fn statistics_counts_zero_byte_allocations_and_passes_them_upstream() {
    let stats = StatisticsResourceAdaptor::new(Recorder::default());
    let a = stats.allocate(0, 256, S).unwrap();
    let b = stats.allocate(0, 256, S).unwrap();
    assert_eq!(stats.allocations_counter(), c(2, 2, 2));
    assert_eq!(stats.bytes_counter(), c(0, 0, 0));
    stats.deallocate(a, 0, 256, S).unwrap();
    stats.deallocate(b, 0, 256, S).unwrap();
    assert_eq!(stats.allocations_counter(), c(0, 2, 2));
    assert_eq!(stats.bytes_counter(), c(0, 0, 0));
    assert_eq!(stats.upstream().calls(), [("alloc", 0), ("alloc", 0), ("free", 0), ("free", 0)]);
}

#[test]
fn tracking_limiting_and_logging_pass_zero_bytes_upstream_counting_nothing() {
    let tracking = TrackingResourceAdaptor::new(Recorder::default(), false);
    let p = tracking.allocate(0, 256, S).unwrap();
    assert_eq!((tracking.allocation_count(), tracking.allocated_bytes()), (0, 0));
    tracking.deallocate(p, 0, 256, S).unwrap();
    assert_eq!(tracking.upstream().calls(), [("alloc", 0), ("free", 0)]);

    let limiting = LimitingResourceAdaptor::new(Recorder::default(), 1024);
    let p = limiting.allocate(0, 256, S).unwrap();
    assert_eq!(limiting.allocated_bytes(), 0);
    limiting.deallocate(p, 0, 256, S).unwrap();
    assert_eq!(limiting.allocated_bytes(), 0);
    assert_eq!(limiting.upstream().calls(), [("alloc", 0), ("free", 0)]);

    let dir = tempdir();
    let path = dir.join("log.csv");
    let logging = LoggingResourceAdaptor::new(Recorder::default(), Some(&path)).unwrap();
    let p = logging.allocate(0, 256, S).unwrap();
    logging.deallocate(p, 0, 256, S).unwrap();
    logging.flush().unwrap();
    assert_eq!(logging.upstream().calls(), [("alloc", 0), ("free", 0)]);
    let log = std::fs::read_to_string(&path).unwrap();
    let rows: Vec<&str> = log.lines().skip(1).map(|l| l.split(',').nth(2).unwrap()).collect();
    assert_eq!(rows, ["allocate", "free"], "{log}");
    assert!(log.lines().nth(1).unwrap().ends_with(",(nil),0,0"), "{log}");
}

#[test]
fn binning_sends_zero_bytes_to_the_smallest_bin() {
    let up = Arc::new(HostMemoryResource::new());
    let bin = Arc::new(Recorder::default());
    let binning = BinningMemoryResource::new(up.clone());
    binning.add_bin(1024, Some(bin.clone() as SharedResource)).unwrap();
    binning.add_bin(4096, None).unwrap();
    let p = binning.allocate(0, 256, S).unwrap();
    binning.deallocate(p, 0, 256, S).unwrap();
    assert_eq!(bin.calls(), [("alloc", 0), ("free", 0)]);
    drop(binning);
    assert_eq!(up.outstanding(), (0, 0));
}

/// A tracking adaptor over another: memory the inner one handed out directly and that is freed
/// through the outer one goes back to the inner one, and neither is left with anything outstanding.
#[test]
fn tracking_forwards_a_free_it_never_tracked() {
    let inner = Arc::new(TrackingResourceAdaptor::new(HostMemoryResource::new(), false));
    let outer = TrackingResourceAdaptor::new(inner.clone(), false);
    let mine = outer.allocate(300, 256, S).unwrap();
    let direct = inner.allocate(100, 256, S).unwrap();
    let log = capture_default_log(|| outer.deallocate(direct, 100, 256, S).unwrap());
    assert!(
        log.contains("Deallocating a pointer that was not tracked. Ptr: ")
            && log.contains(" [100B], Current Num. Allocations: 1"),
        "{log}"
    );
    // RMM subtracts the size given; the 300 bytes still outstanding absorb it.
    assert_eq!((outer.allocation_count(), outer.allocated_bytes()), (1, 200));
    assert_eq!((inner.allocation_count(), inner.allocated_bytes()), (1, 300));
    outer.deallocate(mine, 300, 256, S).unwrap();
    assert_eq!((outer.allocation_count(), outer.allocated_bytes()), (0, 0), "no underflow");
    assert_eq!((inner.allocation_count(), inner.allocated_bytes()), (0, 0));
    assert_eq!(inner.upstream().outstanding(), (0, 0));
}

#[test]
fn tracking_logs_a_wrong_size_and_frees_with_the_allocated_size() {
    let tracking = TrackingResourceAdaptor::new(Recorder::default(), false);
    let p = tracking.allocate(1000, 256, S).unwrap();
    let log = capture_default_log(|| tracking.deallocate(p, 600, 256, S).unwrap());
    assert!(log.contains("Alloc bytes (1000) and Dealloc bytes (600) do not match"), "{log}");
    assert_eq!((tracking.allocation_count(), tracking.allocated_bytes()), (0, 0));
    assert_eq!(tracking.upstream().calls(), [("alloc", 1000), ("free", 1000)]);
    assert_eq!(tracking.upstream().inner.outstanding(), (0, 0));
}

#[test]
fn tracking_keeps_its_state_when_the_upstream_refuses_the_free() {
    let tracking = TrackingResourceAdaptor::new(HostMemoryResource::new(), false);
    let p = tracking.allocate(512, 256, S).unwrap();
    let mut local = 0u8;
    let foreign = &mut local as *mut u8;
    // The host resource refuses a pointer it never handed out: the error comes back, and the
    // bytes subtracted for it are restored.
    let log = capture_default_log(|| assert!(tracking.deallocate(foreign, 100, 256, S).is_err()));
    assert!(log.contains("not tracked"), "{log}");
    assert_eq!((tracking.allocation_count(), tracking.allocated_bytes()), (1, 512));
    tracking.deallocate(p, 512, 256, S).unwrap();
    assert_eq!((tracking.allocation_count(), tracking.allocated_bytes()), (0, 0));
}

/// Runs `f` with the default logger writing to a file, and returns what it wrote. One test at a
/// time swaps the sink.
fn capture_default_log(f: impl FnOnce()) -> String {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _one = ONE_AT_A_TIME.lock();
    let dir = tempdir();
    let path = dir.join("default.log");
    let before = default_logger().set_sink(Sink::file(&path, true).unwrap());
    f();
    default_logger().set_sink(before);
    std::fs::read_to_string(&path).unwrap()
}

fn tempdir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let d =
        std::env::temp_dir().join(format!("rmm-adaptors-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&d).unwrap();
    d
}
