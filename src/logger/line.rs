//! One line in RMM's default pattern, `[%6t][%H:%M:%S:%f][%-6l] %v`.

use super::Level;
use std::fmt::{self, Write};

/// `message` at `level`, prefixed with the calling thread's OS id and the local time.
pub(crate) fn format_line(level: Level, message: fmt::Arguments<'_>) -> String {
    let (h, m, s, us) = local_time();
    let mut line = String::with_capacity(64);
    let _ = write!(line, "[{:>6}][{h:02}:{m:02}:{s:02}:{us:06}][{:<6}] {message}", thread_id(), level.name());
    line
}

/// The calling thread's OS id (what spdlog's `%t` prints).
fn thread_id() -> i64 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as i64 }
}

/// Hours, minutes, seconds and microseconds of the local time now (the zone asked once: see
/// [`local_time`](super::local_time)).
fn local_time() -> (u32, u32, u32, u32) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let (h, m, s) = super::local_time::local_hms(now.as_secs());
    (h, m, s, now.subsec_micros())
}
