//! Allocation history and snapshots in the format of PyTorch's memory viewer.
//!
//! A [`Recorder`] keeps the last `max_entries` allocate and free events (address, size, stream,
//! device, time, and optionally the caller's stack from a [`StackSource`]: the Python face's
//! reads the interpreter's frames, [`native_stack`] the native call stack) in a ring.
//! [`HistoryResourceAdaptor`](crate::adaptor::HistoryResourceAdaptor) feeds it; recording is off
//! until [`Recorder::enable`], and costs nothing where no such adaptor is in the stack (the pools
//! themselves record nothing).
//!
//! A snapshot joins the recorder's trace to the segments of the pool under the adaptor (its
//! upstream chunks and the blocks that tile them, read by
//! [`MemoryResource::memory_segments`](crate::resource::MemoryResource::memory_segments)) in the
//! dictionary layout of PyTorch's `torch.cuda.memory._snapshot()`; [`snapshot_pickle`] writes it
//! as a Python pickle (protocol 2, see [`pickle`]) that `torch.cuda._memory_viz` and
//! pytorch.org/memory_viz read. [`memory_map_svg`] draws the segments as a picture, which the
//! adaptor writes beside the snapshot when an allocation runs out of memory, if asked.

mod clock;
mod event;
pub(crate) mod format;
mod memory_map;
mod native_stack;
pub mod pickle;
mod recorder;
mod snapshot;

pub use event::{Action, Event, Frame, Frames};
pub use memory_map::memory_map_svg;
pub use native_stack::native_stack;
pub use recorder::{RecordOptions, Recorder, StackSource, DEFAULT_MAX_ENTRIES};
pub use snapshot::{snapshot, snapshot_pickle, write_oom_dump, write_snapshot};
