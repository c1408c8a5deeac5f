//! The lock around a pool's state: one atomic exchange to take it, a plain release store to give it
//! back.
//!
//! A pool's critical sections are a few tens of nanoseconds, while a locked read-modify-write costs
//! 5–20 ns on current server CPUs; parking_lot's mutex spends two of them per lock/unlock (its unlock
//! must look for parked threads). This lock spends one. Waiters spin briefly, then yield the CPU, so
//! a holder stuck in a slow upstream call does not burn the waiters' cores.

use parking_lot::lock_api::{GuardSend, RawMutex};
use std::sync::atomic::{AtomicBool, Ordering};

/// A test-and-test-and-set lock with yielding back-off.
pub struct RawSpinLock {
    locked: AtomicBool,
}

/// How many polls a waiter spins before it starts yielding the CPU.
const SPINS_BEFORE_YIELD: u32 = 64;

// SAFETY: `lock` returns only after this thread changed `locked` from false to true with Acquire
// ordering, and `unlock` stores false with Release ordering, so at most one holder exists and the
// holder's writes are visible to the next one.
unsafe impl RawMutex for RawSpinLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawSpinLock { locked: AtomicBool::new(false) };
    type GuardMarker = GuardSend;

    #[inline]
    fn lock(&self) {
        if self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.lock_contended();
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.locked.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    #[inline]
    unsafe fn unlock(&self) {
        self.locked.store(false, Ordering::Release);
    }
}

impl RawSpinLock {
    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        let mut polls = 0u32;
        loop {
            // Poll with plain loads so waiters share the cache line until it is released.
            while self.locked.load(Ordering::Relaxed) {
                if polls < SPINS_BEFORE_YIELD {
                    polls += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return;
            }
        }
    }
}

/// A mutex built on [`RawSpinLock`].
pub type SpinMutex<T> = parking_lot::lock_api::Mutex<RawSpinLock, T>;
