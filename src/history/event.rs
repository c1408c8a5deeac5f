//! One recorded event: what happened, where, when, and (optionally) from where in the program.

use std::sync::Arc;

/// What an event records, named as PyTorch's trace names it (see [`Action::torch_names`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A block was handed out.
    Alloc,
    /// A block was freed (PyTorch's `free_requested` followed by `free_completed`: the block is
    /// reusable in stream order at once).
    Free,
    /// An allocation failed for want of memory.
    Oom,
}

impl Action {
    /// The `action` values of PyTorch's trace entries this event becomes.
    pub fn torch_names(self) -> &'static [&'static str] {
        match self {
            Action::Alloc => &["alloc"],
            Action::Free => &["free_requested", "free_completed"],
            Action::Oom => &["oom"],
        }
    }
}

/// One frame of a stack, innermost first in a [`Frames`] list (PyTorch's order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The source file.
    pub filename: String,
    /// The line in it.
    pub line: u32,
    /// The function.
    pub name: String,
}

/// A captured stack, shared between the event and the snapshot's block.
pub type Frames = Arc<[Frame]>;

/// One allocate, free or out-of-memory event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// What happened.
    pub action: Action,
    /// The device of the recorder.
    pub device: i32,
    /// The block's address; for [`Action::Oom`], the free bytes of the pool that refused (0 when
    /// not known), PyTorch's `device_free`.
    pub addr: usize,
    /// The bytes asked for (allocate, out of memory) or given back (free).
    pub size: usize,
    /// The stream's handle (0: the legacy default stream).
    pub stream: usize,
    /// Nanoseconds since the recorder was made (monotonic; see [`Recorder::unix_time_us`]).
    ///
    /// [`Recorder::unix_time_us`]: crate::history::Recorder::unix_time_us
    pub time_ns: u64,
    /// The caller's stack, when stacks are recorded.
    pub frames: Option<Frames>,
}
