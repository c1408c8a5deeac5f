//! The event log of `enable_logging`: one row per successful alloc, realloc and free, read back as
//! CSV with `rmmWriteLog`, `rmmLogSize` and `rmmGetLog`. The columns are the original's. The log is
//! emptied by `rmmInitialize` and `rmmFinalize`.

use super::codes::{code, RmmError};
use super::guarded;
use parking_lot::Mutex;
use rmm::device::available_device_memory;
use rmm::logger::{open_log_file, LogFileMode};
use rmm::stream::CudaStreamView;
use std::ffi::{c_char, CStr};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What happened.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    Alloc,
    Realloc,
    Free,
}

struct Event {
    kind: Kind,
    device: i32,
    ptr: usize,
    stream: usize,
    size: usize,
    free: usize,
    total: usize,
    live: usize,
    start: Duration,
    end: Duration,
    location: String,
}

static EVENTS: Mutex<Vec<Event>> = Mutex::new(Vec::new());

/// Times are seconds since the first use of the log.
fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

/// Where a call was made from, as the `RMM_*` macros pass it.
#[derive(Clone, Copy)]
pub(crate) struct Site {
    pub file: *const c_char,
    pub line: u32,
}

impl Site {
    fn describe(self) -> String {
        let file = if self.file.is_null() {
            String::new()
        } else {
            // SAFETY: the entry points' callers pass null or a NUL-terminated string (`__FILE__`).
            unsafe { CStr::from_ptr(self.file) }.to_string_lossy().into_owned()
        };
        format!("{file}:{}", self.line)
    }
}

/// What a row needs of the session it is logged in (the session implements it; the log does not
/// depend on the session module, which clears the log).
pub(crate) trait LogContext {
    /// Whether the session was initialised with logging.
    fn logging_enabled(&self) -> bool;
    /// The session's device.
    fn device(&self) -> i32;
    /// How many allocations are live.
    fn live_count(&self) -> usize;
}

/// A call being timed; [`Timer::record`] adds its row when the session logs.
pub(crate) struct Timer {
    start: Instant,
}

impl Timer {
    pub fn start() -> Timer {
        base();
        Timer { start: Instant::now() }
    }

    /// Adds a row for a call that succeeded, if the session was initialised with logging.
    pub fn record(self, s: &impl LogContext, kind: Kind, ptr: usize, size: usize, stream: CudaStreamView, site: Site) {
        if !s.logging_enabled() {
            return;
        }
        let end = Instant::now();
        let (free, total) = available_device_memory().unwrap_or((0, 0));
        let event = Event {
            kind,
            device: s.device(),
            ptr,
            stream: stream.handle(),
            size,
            free,
            total,
            live: s.live_count(),
            start: self.start - base(),
            end: end - base(),
            location: site.describe(),
        };
        EVENTS.lock().push(event);
    }
}

/// Empties the log.
pub(crate) fn clear() {
    EVENTS.lock().clear();
}

/// A pointer as C++'s `operator<<(void*)` prints it: `0` for null, else hexadecimal.
fn address(p: usize) -> String {
    if p == 0 {
        "0".into()
    } else {
        format!("{p:#x}")
    }
}

fn to_csv() -> String {
    let mut csv =
        String::from("Event Type,Device ID,Address,Stream,Size (bytes),Free Memory,Total Memory,Current Allocs,Start,End,Elapsed,Location\n");
    for e in EVENTS.lock().iter() {
        let _ = writeln!(
            csv,
            "{:?},{},{},{},{},{},{},{},{},{},{},{}",
            e.kind,
            e.device,
            address(e.ptr),
            address(e.stream),
            e.size,
            e.free,
            e.total,
            e.live,
            e.start.as_secs_f64(),
            e.end.as_secs_f64(),
            (e.end - e.start).as_secs_f64(),
            e.location
        );
    }
    csv
}

/// `rmmError_t rmmWriteLog(const char* filename)`: writes the log as CSV to `filename`, replacing
/// it (never through a symbolic link, as every log file). `RMM_ERROR_IO` when it cannot be
/// written or is a link, `RMM_ERROR_INVALID_ARGUMENT` for a null name.
///
/// # Safety
/// `filename` is null or a NUL-terminated string.
pub unsafe fn rmmWriteLog(filename: *const c_char) -> RmmError {
    guarded(RmmError::UNKNOWN, || {
        if filename.is_null() {
            return RmmError::INVALID_ARGUMENT;
        }
        // SAFETY: not null (checked above); the caller passes a NUL-terminated string.
        let path = unsafe { CStr::from_ptr(filename) }.to_string_lossy().into_owned();
        let file = open_log_file(Path::new(&path), LogFileMode::Truncate).map_err(|_| RmmError::IO);
        code(file.and_then(|mut f| f.write_all(to_csv().as_bytes()).map_err(|_| RmmError::IO)))
    })
}

/// `size_t rmmLogSize(void)`: the length in bytes of the CSV log (no terminating NUL counted).
pub fn rmmLogSize() -> usize {
    guarded(0, || to_csv().len())
}

/// `rmmError_t rmmGetLog(char* buffer, size_t buffer_size)`: copies the first `buffer_size` bytes
/// of the CSV log to `buffer` (no NUL is added, as in the original; size the buffer with
/// `rmmLogSize() + 1` and terminate it). `RMM_ERROR_INVALID_ARGUMENT` for a null buffer with a
/// non-zero size.
///
/// # Safety
/// `buffer` is null or points to `buffer_size` writable bytes.
pub unsafe fn rmmGetLog(buffer: *mut c_char, buffer_size: usize) -> RmmError {
    guarded(RmmError::UNKNOWN, || {
        if buffer_size == 0 {
            return RmmError::SUCCESS;
        }
        if buffer.is_null() {
            return RmmError::INVALID_ARGUMENT;
        }
        let csv = to_csv();
        let n = csv.len().min(buffer_size);
        // SAFETY: the caller gives `buffer_size` writable bytes at `buffer` (not null, checked
        // above), and `n` is no more than that nor than the source's length.
        unsafe { std::ptr::copy_nonoverlapping(csv.as_ptr(), buffer.cast::<u8>(), n) };
        RmmError::SUCCESS
    })
}
