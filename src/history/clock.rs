//! The clock of event times: read on every recorded event, so it must be cheap. On x86_64 it is
//! the time-stamp counter (a few cycles, against about 20 ns for `clock_gettime`); a reading is
//! turned into nanoseconds only for a snapshot, at the rate the counter ran against the
//! monotonic clock since the recorder was made. Elsewhere it reads the monotonic clock.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A clock started when made.
#[derive(Debug)]
pub(super) struct Clock {
    start: Instant,
    start_ticks: u64,
    start_unix_us: u64,
}

/// The raw reading: time-stamp counter ticks (x86_64) or nanoseconds since `start`.
#[inline(always)]
fn ticks(start: Instant) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let _ = start;
        // SAFETY: RDTSC has no preconditions and touches no memory; every x86_64 CPU has it.
        #[allow(unused_unsafe)]
        unsafe {
            core::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        start.elapsed().as_nanos() as u64
    }
}

impl Clock {
    /// A clock starting now.
    pub(super) fn new() -> Self {
        let start = Instant::now();
        let start_unix_us = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
        Clock { start, start_ticks: ticks(start), start_unix_us }
    }

    /// The current reading (see [`to_ns`](Self::to_ns)).
    #[inline(always)]
    pub(super) fn now(&self) -> u64 {
        ticks(self.start)
    }

    /// A converter of readings to nanoseconds since the clock started, at the rate measured now.
    pub(super) fn to_ns(&self) -> impl Fn(u64) -> u64 {
        let elapsed_ns = self.start.elapsed().as_nanos() as f64;
        let ticks_now = self.now();
        let start_ticks = self.start_ticks;
        let per_tick = if cfg!(target_arch = "x86_64") {
            let spanned = ticks_now.saturating_sub(start_ticks);
            if spanned == 0 {
                1.0
            } else {
                elapsed_ns / spanned as f64
            }
        } else {
            1.0
        };
        let origin = if cfg!(target_arch = "x86_64") { start_ticks } else { 0 };
        move |reading| (reading.saturating_sub(origin) as f64 * per_tick) as u64
    }

    /// Microseconds since the Unix epoch when the clock started.
    pub(super) fn start_unix_us(&self) -> u64 {
        self.start_unix_us
    }
}
