//! The recorder: a ring of the last `max_entries` events, off until enabled.
//!
//! Off, recording is one relaxed atomic load by the caller ([`Recorder::is_enabled`]). On, an
//! event takes a spin lock and the time (the time-stamp counter, see `clock.rs`) for a push into
//! a ring allocated up front: no system call, no allocation (until the ring first fills, for
//! rings above 65536 entries), and stacks only when asked. Events are stored in the order the
//! lock is taken, each no earlier than the one before it, so the trace's order and its times
//! agree across threads.

use super::clock::Clock;
use super::event::{Action, Event, Frame, Frames};
use crate::error::{Error, Result};
use parking_lot::RwLock;
use rmm_algorithms::SpinMutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The number of events kept when none is given: PyTorch keeps every event by default
/// (`max_entries=sys.maxsize`); a million events (about 64 MB) bound a long run.
pub const DEFAULT_MAX_ENTRIES: usize = 1 << 20;

/// Entries allocated up front at most; a larger ring grows as it fills.
const PREALLOCATED: usize = 1 << 16;

/// A function that returns the caller's stack, innermost frame first: the Python face installs
/// one that reads the interpreter's frames.
pub type StackSource = Arc<dyn Fn() -> Vec<Frame> + Send + Sync>;

/// How to record, for [`Recorder::enable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordOptions {
    /// The most events kept; older ones are dropped first (at least 1).
    pub max_entries: usize,
    /// Record each event's stack through the [`StackSource`] (none is recorded without one).
    pub stacks: bool,
    /// Forget the events recorded so far.
    pub clear: bool,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions { max_entries: DEFAULT_MAX_ENTRIES, stacks: false, clear: false }
    }
}

struct Ring {
    events: VecDeque<Event>,
    max_entries: usize,
    dropped: u64,
    /// The time of the last event pushed: the next is no earlier.
    last: u64,
}

/// Keeps the last events of one device's allocations (see the [module](crate::history)).
pub struct Recorder {
    enabled: AtomicBool,
    stacks: AtomicBool,
    device: i32,
    clock: Clock,
    ring: SpinMutex<Ring>,
    stack_source: RwLock<Option<StackSource>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("enabled", &self.is_enabled())
            .field("device", &self.device)
            .field("max_entries", &self.max_entries())
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder for the events of `device`, off, with room for [`DEFAULT_MAX_ENTRIES`].
    pub fn new(device: i32) -> Self {
        Recorder {
            enabled: AtomicBool::new(false),
            stacks: AtomicBool::new(false),
            device,
            clock: Clock::new(),
            ring: SpinMutex::new(Ring {
                events: VecDeque::new(),
                max_entries: DEFAULT_MAX_ENTRIES,
                dropped: 0,
                last: 0,
            }),
            stack_source: RwLock::new(None),
        }
    }

    /// True while events are recorded: one relaxed load, the whole cost of a recorder that is off.
    #[inline(always)]
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Starts (or goes on) recording with `options`. A smaller `max_entries` than before drops
    /// the oldest events at once. Errors with [`Error::InvalidArgument`] for `max_entries == 0`,
    /// changing nothing.
    pub fn enable(&self, options: RecordOptions) -> Result<()> {
        if options.max_entries == 0 {
            return Err(Error::InvalidArgument("max_entries must be at least 1".into()));
        }
        {
            let mut ring = self.ring.lock();
            if options.clear {
                ring.events.clear();
                ring.dropped = 0;
            }
            ring.max_entries = options.max_entries;
            while ring.events.len() > options.max_entries {
                ring.events.pop_front();
                ring.dropped += 1;
            }
            let want = options.max_entries.min(PREALLOCATED);
            let len = ring.events.len();
            if want > len {
                ring.events.reserve(want - len);
            }
        }
        self.stacks.store(options.stacks, Ordering::Relaxed);
        self.enabled.store(true, Ordering::Release);
        Ok(())
    }

    /// Stops recording; the events recorded stay for a snapshot.
    pub fn disable(&self) {
        self.enabled.store(false, Ordering::Release);
    }

    /// Forgets every event.
    pub fn clear(&self) {
        let mut ring = self.ring.lock();
        ring.events.clear();
        ring.dropped = 0;
    }

    /// Installs (or, with `None`, removes) the function that gives each event its stack while
    /// stacks are recorded.
    pub fn set_stack_source(&self, source: Option<StackSource>) {
        *self.stack_source.write() = source;
    }

    /// True while stacks are asked for.
    pub fn records_stacks(&self) -> bool {
        self.stacks.load(Ordering::Relaxed)
    }

    /// The device whose events this recorder keeps.
    pub fn device(&self) -> i32 {
        self.device
    }

    /// The most events kept.
    pub fn max_entries(&self) -> usize {
        self.ring.lock().max_entries
    }

    /// Events dropped from the ring's front since the last clear.
    pub fn dropped(&self) -> u64 {
        self.ring.lock().dropped
    }

    /// Events kept now.
    pub fn len(&self) -> usize {
        self.ring.lock().events.len()
    }

    /// True when no event is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of the events kept, oldest first, their times in nanoseconds since the recorder
    /// was made.
    pub fn events(&self) -> Vec<Event> {
        let to_ns = self.clock.to_ns();
        let ring = self.ring.lock();
        ring.events.iter().map(|e| Event { time_ns: to_ns(e.time_ns), ..e.clone() }).collect()
    }

    /// The wall-clock time of `event` (from [`events`](Self::events)) in microseconds since the
    /// Unix epoch (PyTorch's `time_us`).
    pub fn unix_time_us(&self, event: &Event) -> u64 {
        self.clock.start_unix_us() + event.time_ns / 1000
    }

    /// Records `action` if recording is on (see [`is_enabled`](Self::is_enabled)).
    #[inline]
    pub fn record(&self, action: Action, addr: usize, size: usize, stream: usize) {
        if self.is_enabled() {
            self.push(action, addr, size, stream);
        }
    }

    /// Records `action` whether or not recording is on: for a caller that has just asked
    /// [`is_enabled`](Self::is_enabled).
    #[inline(never)]
    pub fn push(&self, action: Action, addr: usize, size: usize, stream: usize) {
        let frames = if self.records_stacks() { self.stack() } else { None };
        let mut ring = self.ring.lock();
        // The raw reading until `events` converts it; never before the previous event's.
        let time_ns = self.clock.now().max(ring.last);
        ring.last = time_ns;
        if ring.events.len() >= ring.max_entries {
            ring.events.pop_front();
            ring.dropped += 1;
        }
        ring.events.push_back(Event { action, device: self.device, addr, size, stream, time_ns, frames });
    }

    #[cold]
    fn stack(&self) -> Option<Frames> {
        let source = self.stack_source.read().clone()?;
        Some(Frames::from(source()))
    }
}
