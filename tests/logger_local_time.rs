//! Log lines take their local time from a zone asked once, not from `localtime_r` per line:
//! glibc's and musl's `localtime_r` read `TZ` through `getenv`, which races with `setenv` on other
//! threads (Python's `os.environ`). Shown two ways:
//! - after the zone was asked, changing `TZ` (and calling `tzset`, as Python's `time.tzset()`
//!   does) changes nothing in the lines: formatting no longer consults the C library's zone (the
//!   old code printed the new zone's hour at once);
//! - threads formatting lines while another thread calls `setenv("TZ", ...)` in a loop (the race
//!   itself; glibc reads `TZ` in `localtime_r` only at first, so the old code rarely crashed here,
//!   which is why the first test is the one that pins the change).

use rmm::adaptor::LoggingResourceAdaptor;
use rmm::logger::{Level, Logger, Sink};
use rmm::resource::HostMemoryResource;
use rmm::{CudaStreamView, MemoryResource};
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;
use std::time::{SystemTime, UNIX_EPOCH};

extern "C" {
    fn tzset();
}

/// Sets `TZ` as C code (Python) does: `setenv` and `tzset`, bypassing std's environment lock.
fn set_tz(zone: &str) {
    let (name, value) = (CString::new("TZ").unwrap(), CString::new(zone).unwrap());
    // SAFETY: NUL-terminated strings; the race with readers is what the tests are about.
    unsafe {
        libc::setenv(name.as_ptr(), value.as_ptr(), 1);
        tzset();
    }
}

/// The zone is asked under UTC, before any test logs.
fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        set_tz("UTC0");
        drop(Logger::new(Sink::Null));
    });
}

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("rmm-local-time-{}-{name}", std::process::id()))
}

/// UTC `HH:MM` now.
fn utc_hh_mm() -> String {
    let day = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() % 86_400;
    format!("{:02}:{:02}", day / 3600, day / 60 % 60)
}

/// The `HH:MM` of a default-pattern line `[tid][HH:MM:SS:ffffff][level] msg` and of a logging
/// adaptor row `tid,HH:MM:SS.ffffff,...`.
fn line_hh_mm(line: &str) -> String {
    line.split("][").nth(1).unwrap()[..5].to_string()
}
fn row_hh_mm(row: &str) -> String {
    row.split(',').nth(1).unwrap()[..5].to_string()
}

#[test]
fn changing_tz_after_the_zone_was_asked_changes_no_line() {
    setup();
    let (log_path, csv_path) = (temp("log"), temp("csv"));
    for _attempt in 0..3 {
        let before = utc_hh_mm();
        let logger = Logger::new(Sink::file(&log_path, true).unwrap());
        let adaptor = LoggingResourceAdaptor::new(HostMemoryResource::new(), Some(&csv_path)).unwrap();
        logger.log(Level::Info, format_args!("under UTC"));
        let p = adaptor.allocate(256, 256, CudaStreamView::DEFAULT).unwrap();
        set_tz("<+0530>-5:30");
        logger.log(Level::Info, format_args!("under +05:30"));
        adaptor.deallocate(p, 256, 256, CudaStreamView::DEFAULT).unwrap();
        adaptor.flush().unwrap();
        set_tz("UTC0");
        let after = utc_hh_mm();
        if before != after {
            continue; // a minute turned meanwhile: the lines may differ for that reason alone
        }
        let text = std::fs::read_to_string(&log_path).unwrap();
        let lines: Vec<String> = text.lines().map(line_hh_mm).collect();
        let csv = std::fs::read_to_string(&csv_path).unwrap();
        let rows: Vec<String> = csv.lines().skip(1).map(row_hh_mm).collect();
        std::fs::remove_file(&log_path).ok();
        std::fs::remove_file(&csv_path).ok();
        assert_eq!(lines, [before.clone(), before.clone()], "{text}");
        assert_eq!(rows, [before.clone(), before.clone()], "{csv}");
        return;
    }
    panic!("the minute turned in each of three attempts");
}

#[test]
fn formatting_while_another_thread_sets_tz() {
    setup();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..20_000 {
                set_tz(if i % 2 == 0 { "<+0530>-5:30" } else { "EST5EDT" });
            }
            set_tz("UTC0");
            stop.store(true, Ordering::Relaxed);
        });
        for _ in 0..4 {
            s.spawn(|| {
                let logger = Logger::new(Sink::Null);
                let adaptor = LoggingResourceAdaptor::with_writer(HostMemoryResource::new(), Box::new(std::io::sink()));
                while !stop.load(Ordering::Relaxed) {
                    logger.log(Level::Info, format_args!("line"));
                    let p = adaptor.allocate(256, 256, CudaStreamView::DEFAULT).unwrap();
                    adaptor.deallocate(p, 256, 256, CudaStreamView::DEFAULT).unwrap();
                }
            });
        }
    });
}
