//! The C++ default logger (`rmm::default_logger()`) over the Rust one ([`rmm::logger`]): its
//! level and flush level are the Rust logger's, and the lines it formats go to the Rust sink.

use super::outcome::guard;
use rmm::logger::{default_logger, Level};

/// The default logger's level.
pub(crate) fn logger_level() -> i32 {
    guard("logger_level", |_| Level::Info as i32, || default_logger().level() as i32)
}

/// Sets the default logger's level.
pub(crate) fn logger_set_level(level: i32) {
    guard("logger_set_level", drop, || default_logger().set_level(Level::from_i32(level)));
}

/// The default logger's flush level.
pub(crate) fn logger_flush_level() -> i32 {
    guard("logger_flush_level", |_| Level::Off as i32, || default_logger().flush_level() as i32)
}

/// Sets the default logger's flush level.
pub(crate) fn logger_set_flush_level(level: i32) {
    guard("logger_set_flush_level", drop, || default_logger().flush_on(Level::from_i32(level)));
}

/// Writes a line that C++ formatted and filtered.
pub(crate) fn logger_write(level: i32, line: &[u8]) {
    guard("logger_write", drop, || default_logger().write_line(Level::from_i32(level), &String::from_utf8_lossy(line)));
}

/// Flushes the default logger's sink.
pub(crate) fn logger_flush() {
    guard("logger_flush", drop, || default_logger().flush());
}
