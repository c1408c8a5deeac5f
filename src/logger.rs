//! The library's logger, shared with the C++ face: RMM's `rmm::default_logger()`.
//!
//! One process-wide [`Logger`] ([`default_logger`]) writes to one [`Sink`]: the file named by the
//! `RMM_DEBUG_LOG_FILE` environment variable (emptied when first used), else standard error, as
//! RMM's default sink. Rust code logs through the macros [`log_trace!`](crate::log_trace) ..
//! [`log_critical!`](crate::log_critical); the C++ macros `RMM_LOG_TRACE` .. `RMM_LOG_CRITICAL`
//! format their line in C++ and hand it to the same logger through the bridge, so both land, whole
//! and in order, in one place. The level (default info) and the flush level (default off) are
//! the same for both sides: `rmm::default_logger().set_level(...)` in C++ is
//! [`Logger::set_level`] here.
//!
//! Lines have RMM's default pattern `[%6t][%H:%M:%S:%f][%-6l] %v`: OS thread id, local time
//! with microseconds, the level's spdlog name, the message. The time zone is asked once, not per
//! line, so formatting never reads the environment while other threads may change it
//! ([`log_utc_offset`] says how).

mod file;
mod level;
mod line;
mod local_time;
mod sink;

pub use file::{create_log_folders, open_log_file, LogFileMode, LOG_FILE_PERMISSIONS};
pub use level::Level;
pub(crate) use local_time::{init as init_local_time, local_hms};
pub use local_time::{log_utc_offset, HORIZON_DAYS};
pub use sink::Sink;

use parking_lot::Mutex;
use std::fmt;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

/// The environment variable naming the default logger's file.
pub const LOG_FILE_VAR: &str = "RMM_DEBUG_LOG_FILE";

/// A level-filtered writer of formatted lines to one [`Sink`].
pub struct Logger {
    level: AtomicI32,
    flush_level: AtomicI32,
    sink: Mutex<Sink>,
}

impl Logger {
    /// A logger at level info that never flushes by itself, writing to `sink`.
    pub fn new(sink: Sink) -> Logger {
        local_time::init();
        Logger {
            level: AtomicI32::new(Level::Info as i32),
            flush_level: AtomicI32::new(Level::Off as i32),
            sink: Mutex::new(sink),
        }
    }

    /// Messages below this level are dropped.
    pub fn level(&self) -> Level {
        Level::from_i32(self.level.load(Ordering::Relaxed))
    }

    /// Sets [`level`](Self::level).
    pub fn set_level(&self, level: Level) {
        self.level.store(level as i32, Ordering::Relaxed);
    }

    /// Messages at or above this level flush the sink after they are written.
    pub fn flush_level(&self) -> Level {
        Level::from_i32(self.flush_level.load(Ordering::Relaxed))
    }

    /// Sets [`flush_level`](Self::flush_level).
    pub fn flush_on(&self, level: Level) {
        self.flush_level.store(level as i32, Ordering::Relaxed);
    }

    /// True when a message at `level` would be written.
    pub fn should_log(&self, level: Level) -> bool {
        level != Level::Off && level >= self.level()
    }

    /// Formats `message` with the default pattern and writes it if `level` passes the filter.
    pub fn log(&self, level: Level, message: fmt::Arguments<'_>) {
        if self.should_log(level) {
            self.write_line(level, &line::format_line(level, message));
        }
    }

    /// Writes a line formatted elsewhere (by the C++ face, which filtered it already), adding the
    /// end of line; flushes when `level` reaches the flush level.
    pub fn write_line(&self, level: Level, line: &str) {
        let mut sink = self.sink.lock();
        sink.write_line(line);
        if level >= self.flush_level() && level != Level::Off {
            sink.flush();
        }
    }

    /// Flushes the sink.
    pub fn flush(&self) {
        self.sink.lock().flush();
    }

    /// Replaces the sink, returning the previous one.
    pub fn set_sink(&self, sink: Sink) -> Sink {
        std::mem::replace(&mut *self.sink.lock(), sink)
    }
}

/// The process-wide logger; its sink is chosen from `RMM_DEBUG_LOG_FILE` on first use.
pub fn default_logger() -> &'static Logger {
    static LOGGER: OnceLock<Logger> = OnceLock::new();
    LOGGER.get_or_init(|| Logger::new(Sink::from_env(LOG_FILE_VAR)))
}

/// Logs a `format!`-style message at `$level` ([`Level`]) to the [default logger](default_logger).
#[macro_export]
macro_rules! rmm_log {
    ($level:expr, $($arg:tt)+) => {
        $crate::logger::default_logger().log($level, ::std::format_args!($($arg)+))
    };
}

/// Logs a `format!`-style message at trace level to the default logger.
#[macro_export]
macro_rules! log_trace { ($($arg:tt)+) => { $crate::rmm_log!($crate::logger::Level::Trace, $($arg)+) }; }
/// Logs a `format!`-style message at debug level to the default logger.
#[macro_export]
macro_rules! log_debug { ($($arg:tt)+) => { $crate::rmm_log!($crate::logger::Level::Debug, $($arg)+) }; }
/// Logs a `format!`-style message at info level to the default logger.
#[macro_export]
macro_rules! log_info { ($($arg:tt)+) => { $crate::rmm_log!($crate::logger::Level::Info, $($arg)+) }; }
/// Logs a `format!`-style message at warn level to the default logger.
#[macro_export]
macro_rules! log_warn { ($($arg:tt)+) => { $crate::rmm_log!($crate::logger::Level::Warn, $($arg)+) }; }
/// Logs a `format!`-style message at error level to the default logger.
#[macro_export]
macro_rules! log_error { ($($arg:tt)+) => { $crate::rmm_log!($crate::logger::Level::Error, $($arg)+) }; }
/// Logs a `format!`-style message at critical level to the default logger.
#[macro_export]
macro_rules! log_critical { ($($arg:tt)+) => { $crate::rmm_log!($crate::logger::Level::Critical, $($arg)+) }; }

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_path(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("rmm-logger-unit-{}-{name}", std::process::id()))
    }

    #[test]
    fn filters_below_the_level() {
        let path = temp_path("filter");
        let logger = Logger::new(Sink::file(&path, true).unwrap());
        logger.log(Level::Debug, format_args!("hidden {}", 1));
        logger.log(Level::Info, format_args!("shown {}", 2));
        logger.set_level(Level::Error);
        logger.log(Level::Warn, format_args!("hidden {}", 3));
        logger.log(Level::Critical, format_args!("shown {}", 4));
        logger.set_level(Level::Off);
        logger.log(Level::Critical, format_args!("hidden {}", 5));
        logger.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].ends_with("][info  ] shown 2"), "{}", lines[0]);
        assert!(lines[1].ends_with("][critical] shown 4"), "{}", lines[1]);
    }

    #[test]
    fn lines_have_rmms_default_pattern() {
        let l = line::format_line(Level::Warn, format_args!("x={}", 7));
        // [%6t][%H:%M:%S:%f][%-6l] %v
        let b: Vec<&str> = l.splitn(4, ']').collect();
        assert!(b[0].starts_with('[') && b[0].len() > 6, "{l}");
        assert!(b[0][1..].trim_start().parse::<u64>().is_ok(), "{l}");
        let time = &b[1][1..];
        assert_eq!(time.len(), "HH:MM:SS:ffffff".len(), "{l}");
        assert_eq!(b[2], "[warning");
        assert_eq!(b[3], " x=7");
    }

    #[test]
    fn sink_from_the_environment() {
        let var = "RMM_LOGGER_UNIT_TEST_FILE";
        assert!(matches!(Sink::from_env(var), Sink::Stderr));
        let path = temp_path("env");
        std::fs::write(&path, "old\n").unwrap();
        std::env::set_var(var, &path);
        let sink = Sink::from_env(var);
        std::env::remove_var(var);
        assert!(matches!(&sink, Sink::File { path: p, .. } if *p == path));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "", "emptied as RMM's default sink");
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn flush_level_and_sink_swap() {
        let logger = Logger::new(Sink::Null);
        assert_eq!(logger.flush_level(), Level::Off);
        logger.flush_on(Level::Warn);
        assert_eq!(logger.flush_level(), Level::Warn);
        let path = temp_path("swap");
        let old = logger.set_sink(Sink::file(&path, true).unwrap());
        assert!(matches!(old, Sink::Null));
        logger.write_line(Level::Warn, "preformatted");
        // Flushed by the flush level: readable without an explicit flush.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "preformatted\n");
        std::fs::remove_file(&path).ok();
    }
}
