//! Writes every allocation and free to a CSV log in RMM's format, which RMM's replay benchmark
//! reads (RMM's `logging_resource_adaptor`).
//!
//! The log starts with the header [`LOG_HEADER`]; each row is
//! `Thread,Time,Action,Pointer,Size,Stream`, byte for byte as RMM writes it (its logger pattern
//! `%t,%H:%M:%S.%f,%v` and its message `<action>,%p,%zu,<stream>`):
//! - **Thread**: the OS thread id (`gettid`), decimal, as spdlog's `%t`.
//! - **Time**: local time of day `HH:MM:SS.ffffff` (microseconds), as `%H:%M:%S.%f`.
//! - **Action**: `allocate`, `allocate failure` (the upstream refused; null pointer) or `free`.
//! - **Pointer**: as glibc's `%p`: `0x` and lowercase hex, `(nil)` for null.
//! - **Size**: the requested bytes, decimal.
//! - **Stream**: as C++ prints a `cudaStream_t` in hex: `0x` and lowercase hex, `0` for the null
//!   (legacy default) stream.

use crate::error::{Error, Result};
use crate::logger::{create_log_folders, init_local_time, local_hms, open_log_file, LogFileMode};
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use parking_lot::Mutex;
use std::fmt;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// The CSV header RMM writes as the first line of every log.
pub const LOG_HEADER: &str = "Thread,Time,Action,Pointer,Size,Stream";

/// The environment variable naming the log file when no filename is given (as in RMM).
const LOG_FILE_VAR: &str = "RMM_LOG_FILE";

/// Where a log's lines go, one call per line. A C++ `std::ostream` or rapids_logger sinks reach
/// the adaptor through this (see the bridge); files and [`Write`]rs through
/// [`LoggingResourceAdaptor::new`] and [`LoggingResourceAdaptor::with_writer`].
pub trait LogSink: Send {
    /// Writes one line, without its end of line.
    fn write_line(&mut self, line: &str) -> std::io::Result<()>;
    /// Pushes buffered lines out.
    fn flush(&mut self) -> std::io::Result<()>;
}

/// A [`Write`]r as a [`LogSink`]: lines end with `\n` and are buffered until flushed.
struct WriterSink(BufWriter<Box<dyn Write + Send>>);

impl LogSink for WriterSink {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        writeln!(self.0, "{line}")
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Where rows go, and the first write error, which later writes and `flush` report.
struct Sink {
    out: Box<dyn LogSink>,
    /// Names the destination in errors.
    path: String,
    error: Option<Error>,
}

impl Sink {
    fn record(&mut self, result: std::io::Result<()>) {
        if let Err(e) = result {
            self.error.get_or_insert_with(|| Error::Io { path: self.path.clone(), message: e.to_string() });
        }
    }
}

/// Logs every allocation and free of its upstream as a CSV row (see the module docs for the
/// format).
///
/// A failed write never fails the allocation or free it describes: the first write error is kept,
/// writing stops (the log is incomplete from then on), and [`flush`](Self::flush) returns the
/// error from then on.
pub struct LoggingResourceAdaptor<U> {
    upstream: U,
    sink: Mutex<Sink>,
    auto_flush: bool,
}

impl<U: fmt::Debug> fmt::Debug for LoggingResourceAdaptor<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoggingResourceAdaptor")
            .field("upstream", &self.upstream)
            .field("auto_flush", &self.auto_flush)
            .finish_non_exhaustive()
    }
}

/// The calling thread's id as the Thread column shows it: the OS thread id, as spdlog's `%t`.
pub fn log_thread_id() -> u64 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid takes no arguments and cannot fail.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        tid as u64
    }
    #[cfg(not(target_os = "linux"))]
    {
        rmm_algorithms::current_thread_number() as u64
    }
}

/// A pointer as glibc's `%p` prints it: `(nil)` for null, else `0x` and lowercase hex.
pub fn format_log_pointer(ptr: usize) -> String {
    if ptr == 0 {
        "(nil)".to_string()
    } else {
        format!("{ptr:#x}")
    }
}

/// A stream handle as RMM prints it (`std::hex << cudaStream_t`): `0` for null, else `0x` and hex.
pub fn format_log_stream(handle: usize) -> String {
    if handle == 0 {
        "0".to_string()
    } else {
        format!("{handle:#x}")
    }
}

/// Local time of day as `HH:MM:SS.ffffff`, as spdlog's `%H:%M:%S.%f`, from the zone the logger
/// asked once (no time-zone call per row: see [`crate::logger`]).
fn time_of_day(now: SystemTime) -> String {
    // A clock set before 1970 has no meaningful time of day; print midnight rather than fail.
    let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let (h, m, s) = local_hms(since_epoch.as_secs());
    format!("{h:02}:{m:02}:{s:02}.{:06}", since_epoch.subsec_micros())
}

impl<U: MemoryResource> LoggingResourceAdaptor<U> {
    /// Wraps `upstream`, logging to `filename`, or when `None` to the file named by the
    /// `RMM_LOG_FILE` environment variable. The file is created, or truncated if it exists, and the
    /// missing folders above it are created as RMM's do; a symbolic link at the path is refused
    /// ([`open_log_file`]).
    ///
    /// Errors: [`Error::InvalidArgument`] when neither names a file; [`Error::Io`] when the file
    /// cannot be created or is a symbolic link.
    pub fn new(upstream: U, filename: Option<&Path>) -> Result<Self> {
        let from_env;
        let path = match filename {
            Some(p) => p,
            None => {
                from_env = std::env::var_os(LOG_FILE_VAR).ok_or_else(|| {
                    Error::InvalidArgument(format!("no log file: pass a filename or set {LOG_FILE_VAR}"))
                })?;
                Path::new(&from_env)
            }
        };
        let shown = path.display().to_string();
        create_log_folders(path);
        let file = open_log_file(path, LogFileMode::Truncate)?;
        Ok(Self::with_log_sink(upstream, Box::new(WriterSink(BufWriter::new(Box::new(file)))), shown))
    }

    /// Wraps `upstream`, logging to `writer` (an in-memory buffer, a pipe, stderr...).
    pub fn with_writer(upstream: U, writer: Box<dyn Write + Send>) -> Self {
        Self::with_log_sink(upstream, Box::new(WriterSink(BufWriter::new(writer))), "<writer>".to_string())
    }

    /// Wraps `upstream`, handing each line to `sink`; `name` names it in errors.
    pub fn with_log_sink(upstream: U, sink: Box<dyn LogSink>, name: String) -> Self {
        init_local_time();
        let mut sink = Sink { out: sink, path: name, error: None };
        let header = sink.out.write_line(LOG_HEADER);
        sink.record(header);
        LoggingResourceAdaptor { upstream, sink: Mutex::new(sink), auto_flush: false }
    }

    /// With `on`, flushes after every row, so the log is complete even if the process dies (slow).
    /// As RMM's `auto_flush`, it also flushes the header at once.
    pub fn with_auto_flush(mut self, on: bool) -> Self {
        self.auto_flush = on;
        if on {
            let mut sink = self.sink.lock();
            if sink.error.is_none() {
                let flushed = sink.out.flush();
                sink.record(flushed);
            }
        }
        self
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }

    /// The header line (without newline), as RMM's `header()`.
    pub fn header(&self) -> &'static str {
        LOG_HEADER
    }

    /// Writes buffered rows out. Returns the first write error this log has met, if any.
    pub fn flush(&self) -> Result<()> {
        let mut sink = self.sink.lock();
        if sink.error.is_none() {
            let flushed = sink.out.flush();
            sink.record(flushed);
        }
        sink.error.clone().map_or(Ok(()), Err)
    }

    fn log(&self, action: &str, ptr: usize, bytes: usize, stream: CudaStreamView) {
        let thread = log_thread_id();
        let (ptr, stream) = (format_log_pointer(ptr), format_log_stream(stream.handle()));
        let mut sink = self.sink.lock();
        if sink.error.is_some() {
            return;
        }
        // Time is read under the lock so rows appear in time order.
        let line = format!("{thread},{},{action},{ptr},{bytes},{stream}", time_of_day(SystemTime::now()));
        let written = sink.out.write_line(&line);
        sink.record(written);
        if self.auto_flush && sink.error.is_none() {
            let flushed = sink.out.flush();
            sink.record(flushed);
        }
    }
}

// SAFETY: blocks come from the upstream unchanged and go back to it; the accessibility answers
// are the upstream's (logging only reads the addresses).
unsafe impl<U: MemoryResource> MemoryResource for LoggingResourceAdaptor<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        // A zero-byte request goes to the upstream and is logged, as in RMM (whose log shows
        // every request); the upstream answers it (null).
        match self.upstream.allocate(bytes, alignment, stream) {
            Ok(ptr) => {
                self.log("allocate", ptr as usize, bytes, stream);
                Ok(ptr)
            }
            Err(e) => {
                self.log("allocate failure", 0, bytes, stream);
                Err(e)
            }
        }
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        // A null pointer (a zero-byte allocation's) is logged and forwarded too, as in RMM; the
        // upstream ignores it.
        // Logged before forwarding, as RMM does: once the upstream has the memory back another
        // thread may be handed the same address and log its `allocate` first, which would make
        // the log unreplayable. The price is that a free the upstream rejects is logged too.
        self.log("free", ptr as usize, bytes, stream);
        self.upstream.deallocate(ptr, bytes, alignment, stream)
    }

    adaptor_identity_and_access!(upstream);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn time_of_day_format() {
        let t = UNIX_EPOCH + Duration::from_micros(((13 * 3600 + 4 * 60 + 5) * 1_000_000 + 42) + 86_400_000_000 * 3);
        let s = time_of_day(t);
        let (h, m, sec) = local_hms(3 * 86_400 + 13 * 3600 + 4 * 60 + 5);
        assert_eq!(s, format!("{h:02}:{m:02}:{sec:02}.000042"));
        assert_eq!((m, sec), (4, 5), "whole-hour zones shift only the hour");
    }

    #[test]
    fn pointers_and_streams_print_as_rmm() {
        assert_eq!(format_log_pointer(0), "(nil)");
        assert_eq!(format_log_pointer(0x7f00_dead_0000), "0x7f00dead0000");
        assert_eq!(format_log_stream(0), "0");
        assert_eq!(format_log_stream(0x2), "0x2");
    }

    #[test]
    fn thread_ids_are_stable_and_distinct() {
        let here = log_thread_id();
        assert_eq!(here, log_thread_id());
        let there = std::thread::spawn(log_thread_id).join().unwrap();
        assert_ne!(here, there);
        #[cfg(target_os = "linux")]
        {
            let link = std::fs::read_link("/proc/thread-self").unwrap();
            assert_eq!(link.file_name().unwrap().to_str().unwrap(), here.to_string(), "the OS thread id");
        }
    }
}
