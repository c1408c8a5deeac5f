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

/// Hours, minutes, seconds and microseconds of the local time now.
fn local_time() -> (i32, i32, i32, u32) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = now.as_secs() as libc::time_t;
    // SAFETY: an all-zero tm is a valid value to be overwritten.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live locals; localtime_r is the thread-safe form.
    let ok = unsafe { !libc::localtime_r(&secs, &mut tm).is_null() };
    if !ok {
        let day = now.as_secs() % 86_400;
        return ((day / 3600) as i32, (day / 60 % 60) as i32, (day % 60) as i32, now.subsec_micros());
    }
    (tm.tm_hour, tm.tm_min, tm.tm_sec, now.subsec_micros())
}
