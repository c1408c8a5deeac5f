//! The logging adaptor's rows are byte for byte RMM's (`%t,%H:%M:%S.%f,<action>,%p,%zu,<stream>`)
//! and reach a line sink whole, header first; auto-flush flushes the header and every row. The
//! tracking adaptor's snapshot carries the stacks the C++ map shows.

use parking_lot::Mutex;
use rmm::adaptor::logging::{log_thread_id, LogSink};
use rmm::adaptor::{LimitingResourceAdaptor, LoggingResourceAdaptor, TrackingResourceAdaptor, LOG_HEADER};
use rmm::resource::HostMemoryResource;
use rmm::{CudaStreamView, MemoryResource};
use std::sync::Arc;

/// Keeps every line and counts flushes.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<(Vec<String>, usize)>>);

impl LogSink for Lines {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        assert!(!line.contains('\n'), "a line arrives without its end of line: {line:?}");
        self.0.lock().0.push(line.to_string());
        Ok(())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.lock().1 += 1;
        Ok(())
    }
}

/// Checks `row` against RMM's layout and returns (action, pointer, size, stream) as printed.
fn fields(row: &str) -> (String, String, String, String) {
    let f: Vec<&str> = row.split(',').collect();
    assert_eq!(f.len(), 6, "{row:?}");
    assert_eq!(f[0], log_thread_id().to_string(), "the OS thread id: {row:?}");
    let t = f[1].as_bytes();
    assert!(
        t.len() == 15
            && t.iter().enumerate().all(|(i, &c)| match i {
                2 | 5 => c == b':',
                8 => c == b'.',
                _ => c.is_ascii_digit(),
            }),
        "HH:MM:SS.ffffff: {row:?}"
    );
    (f[2].into(), f[3].into(), f[4].into(), f[5].into())
}

#[test]
fn rows_are_rmms_byte_for_byte() {
    let lines = Lines::default();
    let log = LoggingResourceAdaptor::with_log_sink(
        LimitingResourceAdaptor::new(HostMemoryResource::new(), 4096),
        Box::new(lines.clone()),
        "lines".into(),
    );
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let s = unsafe { CudaStreamView::from_handle(0x2) };
    let p = log.allocate_sync(100, 256).unwrap();
    let q = log.allocate(200, 256, s).unwrap();
    assert!(log.allocate(1 << 20, 256, s).is_err());
    log.deallocate(q, 200, 256, s).unwrap();
    log.deallocate_sync(p, 100, 256).unwrap();
    let got = lines.0.lock().0.clone();
    assert_eq!(got[0], LOG_HEADER);
    let rows: Vec<_> = got[1..].iter().map(|r| fields(r)).collect();
    let want =
        |a: &str, ptr: String, size: usize, stream: &str| (a.to_string(), ptr, size.to_string(), stream.to_string());
    assert_eq!(
        rows,
        vec![
            want("allocate", format!("{:#x}", p as usize), 100, "0"),
            want("allocate", format!("{:#x}", q as usize), 200, "0x2"),
            want("allocate failure", "(nil)".into(), 1 << 20, "0x2"),
            want("free", format!("{:#x}", q as usize), 200, "0x2"),
            want("free", format!("{:#x}", p as usize), 100, "0"),
        ]
    );
}

#[test]
fn auto_flush_flushes_the_header_and_every_row() {
    let lines = Lines::default();
    let log = LoggingResourceAdaptor::with_log_sink(HostMemoryResource::new(), Box::new(lines.clone()), "lines".into())
        .with_auto_flush(true);
    assert_eq!(lines.0.lock().1, 1, "the header is flushed at construction");
    let p = log.allocate_sync(64, 256).unwrap();
    assert_eq!(lines.0.lock().1, 2);
    log.deallocate_sync(p, 64, 256).unwrap();
    assert_eq!(lines.0.lock().1, 3);

    let quiet = Lines::default();
    let log = LoggingResourceAdaptor::with_log_sink(HostMemoryResource::new(), Box::new(quiet.clone()), "q".into());
    let p = log.allocate_sync(64, 256).unwrap();
    log.deallocate_sync(p, 64, 256).unwrap();
    assert_eq!(quiet.0.lock().1, 0, "without auto-flush only flush() flushes");
    log.flush().unwrap();
    assert_eq!(quiet.0.lock().1, 1);
    assert_eq!(quiet.0.lock().0.len(), 3);
}

#[test]
fn tracking_snapshot_has_a_stack_only_when_captured() {
    for capture in [false, true] {
        let t = TrackingResourceAdaptor::new(HostMemoryResource::new(), capture);
        let p = t.allocate_sync(300, 256).unwrap();
        let snap = t.outstanding_allocations();
        assert_eq!(snap.len(), 1);
        assert_eq!((snap[0].ptr, snap[0].bytes), (p as usize, 300));
        assert_eq!(snap[0].stack.is_some(), capture);
        if let Some(bt) = &snap[0].stack {
            assert_eq!(bt.status(), std::backtrace::BacktraceStatus::Captured);
        }
        t.deallocate_sync(p, 300, 256).unwrap();
        assert!(t.outstanding_allocations().is_empty());
    }
}
