//! The C symbol the C++ loggers' patterns call for the local time of a line
//! (`include/rapids_logger/detail/pattern.hpp`), so that C++ and Rust lines agree.

/// The UTC offset in seconds of the local time `secs` after the epoch:
/// [`rmm::logger::log_utc_offset`], which never panics.
#[no_mangle]
pub extern "C" fn rmm_rs_log_utc_offset(secs: i64) -> i64 {
    rmm::logger::log_utc_offset(secs)
}
