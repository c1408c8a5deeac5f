//! Writes every allocation and free to a CSV log in RMM's format, which RMM's replay benchmark
//! reads (RMM's `logging_resource_adaptor`).
//!
//! The file starts with the header [`LOG_HEADER`]; each row is
//! `Thread,Time,Action,Pointer,Size,Stream`:
//! - **Thread**: a decimal id, stable for the life of a thread and distinct between threads (the
//!   replay tool reads it as an unsigned integer; ids are numbered from 1 in order of first use,
//!   not OS thread ids, which the standard library does not expose).
//! - **Time**: wall-clock time of day `HH:MM:SS.ffffff` (microseconds), like RMM's
//!   `%H:%M:%S.%f`. It is UTC: the standard library has no time-zone database. The replay tool
//!   does not read this column.
//! - **Action**: `allocate`, `allocate failure` (the upstream refused; pointer `0x0`) or `free`.
//! - **Pointer** and **Stream**: hexadecimal with `0x`, as RMM prints pointers (`0x0` for null).
//! - **Size**: the requested bytes, decimal.

use crate::adaptor::{same_instance, zero_byte_allocation};
use crate::error::{Error, Result};
use crate::pool::current_thread_number;
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use parking_lot::Mutex;
use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// The CSV header RMM writes as the first line of every log.
pub const LOG_HEADER: &str = "Thread,Time,Action,Pointer,Size,Stream";

/// The environment variable naming the log file when no filename is given (as in RMM).
const LOG_FILE_VAR: &str = "RMM_LOG_FILE";

/// Where rows go, and the first write error, which later writes and `flush` report.
struct Sink {
    out: BufWriter<Box<dyn Write + Send>>,
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

/// Wall-clock time of day in UTC as `HH:MM:SS.ffffff`.
fn time_of_day(now: SystemTime) -> String {
    // A clock set before 1970 has no meaningful time of day; print midnight rather than fail.
    let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since_epoch.as_secs() % 86_400;
    format!("{:02}:{:02}:{:02}.{:06}", secs / 3600, secs / 60 % 60, secs % 60, since_epoch.subsec_micros())
}

impl<U: MemoryResource> LoggingResourceAdaptor<U> {
    /// Wraps `upstream`, logging to `filename`, or when `None` to the file named by the
    /// `RMM_LOG_FILE` environment variable. The file is created, or truncated if it exists.
    ///
    /// Errors: [`Error::InvalidArgument`] when neither names a file; [`Error::Io`] when the file
    /// cannot be created.
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
        let file = File::create(path).map_err(|e| Error::Io { path: shown.clone(), message: e.to_string() })?;
        Ok(Self::with_sink(upstream, Box::new(file), shown))
    }

    /// Wraps `upstream`, logging to `writer` (an in-memory buffer, a pipe, stderr...).
    pub fn with_writer(upstream: U, writer: Box<dyn Write + Send>) -> Self {
        Self::with_sink(upstream, writer, "<writer>".to_string())
    }

    fn with_sink(upstream: U, writer: Box<dyn Write + Send>, path: String) -> Self {
        let mut sink = Sink { out: BufWriter::new(writer), path, error: None };
        let header = writeln!(sink.out, "{LOG_HEADER}");
        sink.record(header);
        LoggingResourceAdaptor { upstream, sink: Mutex::new(sink), auto_flush: false }
    }

    /// With `on`, flushes after every row, so the log is complete even if the process dies (slow).
    pub fn with_auto_flush(mut self, on: bool) -> Self {
        self.auto_flush = on;
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
        let mut sink = self.sink.lock();
        if sink.error.is_some() {
            return;
        }
        // Time is read under the lock so rows appear in time order.
        let written = writeln!(
            sink.out,
            "{},{},{action},{ptr:#x},{bytes},{:#x}",
            current_thread_number(),
            time_of_day(SystemTime::now()),
            stream.handle()
        );
        sink.record(written);
        if self.auto_flush && sink.error.is_none() {
            let flushed = sink.out.flush();
            sink.record(flushed);
        }
    }
}

impl<U: MemoryResource> MemoryResource for LoggingResourceAdaptor<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        if bytes == 0 {
            return zero_byte_allocation(alignment);
        }
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
        if ptr.is_null() {
            return Ok(());
        }
        // Logged before forwarding, as RMM does: once the upstream has the memory back another
        // thread may be handed the same address and log its `allocate` first, which would make
        // the log unreplayable. The price is that a free the upstream rejects is logged too.
        self.log("free", ptr as usize, bytes, stream);
        self.upstream.deallocate(ptr, bytes, alignment, stream)
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        same_instance(self, other)
    }

    fn is_device_accessible(&self) -> bool {
        self.upstream.is_device_accessible()
    }

    fn is_host_accessible(&self) -> bool {
        self.upstream.is_host_accessible()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn time_of_day_format() {
        let t = UNIX_EPOCH + Duration::from_micros(((13 * 3600 + 4 * 60 + 5) * 1_000_000 + 42) + 86_400_000_000 * 3);
        assert_eq!(time_of_day(t), "13:04:05.000042");
        assert_eq!(time_of_day(UNIX_EPOCH), "00:00:00.000000");
    }

    #[test]
    fn thread_ids_are_stable_and_distinct() {
        let here = current_thread_number();
        assert_eq!(here, current_thread_number());
        let there = std::thread::spawn(current_thread_number).join().unwrap();
        assert_ne!(here, there);
        assert_ne!(here, 0);
    }
}
