//! Local time of day for log lines, without asking the C library per line.
//!
//! `localtime_r` reads the `TZ` environment variable through `getenv` (glibc on its first call and
//! after anything calls `tzset`, musl on every call), and a `getenv` while another thread runs
//! `setenv` (Python's `os.environ[...] = ...`, any C library) may read freed memory. So the zone is
//! asked once, at the first line or the first logging adaptor, under a `OnceLock`: the UTC offset
//! then and every change of it over the next [`HORIZON_DAYS`] days (daylight saving), each found
//! to the second. Formatting a line afterwards only adds the cached offset: it calls no time-zone
//! function and reads no environment. The C++ loggers ask the same table
//! ([`log_utc_offset`]), so C++ and Rust lines agree.
//!
//! What this changes: a later change of `TZ` (with `tzset`) is not followed (it was only followed
//! after a `tzset` before, too), and past the horizon the last offset stays.

use std::sync::OnceLock;

/// How far ahead the zone's offset changes are looked up, in days.
pub const HORIZON_DAYS: i64 = 400;

const DAY: i64 = 86_400;

/// The zone as asked once: the offset from `start` on, then each change (second, new offset).
struct Zone {
    start_offset: i64,
    changes: Vec<(i64, i64)>,
}

impl Zone {
    /// The UTC offset in seconds at `secs` after the epoch.
    fn offset_at(&self, secs: i64) -> i64 {
        let later = self.changes.iter().take_while(|&&(from, _)| from <= secs).last();
        later.map_or(self.start_offset, |&(_, offset)| offset)
    }

    /// Asks the C library for the offsets from `start` to `HORIZON_DAYS` days later: one question
    /// a day, and where two days differ a bisection to the second of the change.
    fn ask(start: i64) -> Zone {
        let start_offset = c_library_offset(start);
        let mut zone = Zone { start_offset, changes: Vec::new() };
        let (mut t, mut current) = (start, start_offset);
        let end = start.saturating_add(HORIZON_DAYS * DAY);
        while t < end {
            let next = t.saturating_add(DAY).min(end);
            // Several changes within a day are found one after the other.
            while c_library_offset(next) != current {
                let (mut same, mut changed) = (t, next);
                while changed - same > 1 {
                    let mid = same + (changed - same) / 2;
                    if c_library_offset(mid) == current {
                        same = mid;
                    } else {
                        changed = mid;
                    }
                }
                current = c_library_offset(changed);
                zone.changes.push((changed, current));
                t = changed;
            }
            t = next;
        }
        zone
    }
}

/// The zone, asked at the first call.
fn zone() -> &'static Zone {
    static ZONE: OnceLock<Zone> = OnceLock::new();
    ZONE.get_or_init(|| Zone::ask(now_secs()))
}

/// Seconds since the epoch now (0 for a clock before 1970).
fn now_secs() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
}

/// The C library's UTC offset at `secs` (0 where it cannot tell). Called only while the zone is
/// asked.
fn c_library_offset(secs: i64) -> i64 {
    #[cfg(unix)]
    {
        // time_t is 64 bits wide on the targets the crate builds for (64-bit Linux).
        let t = secs as libc::time_t;
        // SAFETY: an all-zero `tm` is a valid value (integers and a null zone name pointer).
        let mut tm: libc::tm = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers are to live locals for the call; localtime_r writes only `tm`.
        if !unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
            return tm.tm_gmtoff as i64;
        }
    }
    let _ = secs;
    0
}

/// Asks the zone now if it has not been asked: constructors of loggers call this so that their
/// first line does not.
pub(crate) fn init() {
    zone();
}

/// Hours, minutes and seconds of the local time `secs` after the epoch.
pub(crate) fn local_hms(secs: u64) -> (u32, u32, u32) {
    let secs = i64::try_from(secs).unwrap_or(i64::MAX);
    let local = secs.saturating_add(zone().offset_at(secs));
    let day = local.rem_euclid(DAY) as u32;
    (day / 3600, day / 60 % 60, day % 60)
}

/// The UTC offset in seconds of the local time `secs` after the epoch, for the C++ loggers'
/// patterns (`rapids_logger/detail/pattern.hpp`, which call the C face's `rmm_rs_log_utc_offset`),
/// from the same table as the Rust lines. Never panics: a failed lookup is UTC.
pub fn log_utc_offset(secs: i64) -> i64 {
    // No panic may reach the C++ caller; nothing here panics, but a failed lookup is UTC.
    std::panic::catch_unwind(|| zone().offset_at(secs)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_the_changes() {
        let zone = Zone { start_offset: 3600, changes: vec![(100, 7200), (200, 3600)] };
        assert_eq!(zone.offset_at(0), 3600);
        assert_eq!(zone.offset_at(99), 3600);
        assert_eq!(zone.offset_at(100), 7200);
        assert_eq!(zone.offset_at(199), 7200);
        assert_eq!(zone.offset_at(200), 3600);
        assert_eq!(zone.offset_at(i64::MAX), 3600);
    }
}
