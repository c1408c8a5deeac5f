//! A snapshot in the layout of PyTorch's `torch.cuda.memory._snapshot()`:
//!
//! ```text
//! {'segments': [{'device', 'address', 'total_size', 'allocated_size', 'active_size',
//!                'requested_size', 'stream', 'segment_type', 'segment_pool_id',
//!                'is_expandable', 'frames',
//!                'blocks': [{'address', 'size', 'requested_size', 'state', 'frames'}, ...]}, ...],
//!  'device_traces': [[{'action', 'addr', 'size', 'stream', 'time_us', 'frames'}, ...], ...],
//!  'allocator_settings': {...}}
//! ```
//!
//! Segments are the pool's chunks, their blocks `active_allocated` (handed out) or `inactive`
//! (free), each block handed out with the stack of its allocation where the trace still has it.
//! `device_traces[d]` holds device `d`'s events, oldest first; a free becomes PyTorch's
//! `free_requested` and `free_completed` (stream-ordered reuse makes the block reusable at once).

use super::event::{Action, Event, Frames};
use super::memory_map::memory_map_svg;
use super::pickle::{to_pickle, Value};
use super::recorder::Recorder;
use crate::error::{Error, Result};
use crate::logger::{open_log_file, LogFileMode};
use crate::resource::{BlockState, MemoryResource, MemorySegment};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Segments of 1 MiB or less are PyTorch's "small" pool.
const SMALL_SEGMENT: usize = 1 << 20;

fn frames_value(frames: Option<&Frames>) -> Value {
    let Some(frames) = frames else {
        return Value::List(Vec::new());
    };
    Value::List(
        frames
            .iter()
            .map(|f| {
                Value::dict([
                    ("filename", Value::str(f.filename.clone())),
                    ("line", Value::int(f.line)),
                    ("name", Value::str(f.name.clone())),
                ])
            })
            .collect(),
    )
}

/// The stack of each block still handed out at the end of `events` (its last allocation).
fn live_frames(events: &[Event]) -> HashMap<usize, Frames> {
    let mut live = HashMap::new();
    for e in events {
        match e.action {
            Action::Alloc => {
                if let Some(f) = &e.frames {
                    live.insert(e.addr, f.clone());
                } else {
                    live.remove(&e.addr);
                }
            }
            Action::Free => {
                live.remove(&e.addr);
            }
            Action::Oom => {}
        }
    }
    live
}

fn segment_value(seg: &MemorySegment, device: i32, frames: &HashMap<usize, Frames>) -> Value {
    let blocks = seg
        .blocks
        .iter()
        .map(|b| {
            let allocated = b.state == BlockState::Allocated;
            Value::dict([
                ("address", Value::int(b.address as u64)),
                ("size", Value::int(b.size as u64)),
                ("requested_size", Value::int(b.requested_size as u64)),
                ("state", Value::str(if allocated { "active_allocated" } else { "inactive" })),
                ("frames", frames_value(if allocated { frames.get(&b.address) } else { None })),
            ])
        })
        .collect();
    let allocated = seg.allocated_size() as u64;
    Value::dict([
        ("device", Value::int(device)),
        ("address", Value::int(seg.address as u64)),
        ("total_size", Value::int(seg.total_size as u64)),
        ("allocated_size", Value::int(allocated)),
        ("active_size", Value::int(allocated)),
        ("requested_size", Value::int(seg.requested_size() as u64)),
        ("stream", Value::int(0)),
        ("segment_type", Value::str(if seg.total_size <= SMALL_SEGMENT { "small" } else { "large" })),
        ("segment_pool_id", Value::Tuple(vec![Value::int(0), Value::int(seg.capture)])),
        ("is_expandable", Value::Bool(seg.expandable)),
        ("frames", Value::List(Vec::new())),
        ("blocks", Value::List(blocks)),
    ])
}

fn event_values(recorder: &Recorder, e: &Event, out: &mut Vec<Value>) {
    for name in e.action.torch_names() {
        let mut entry = vec![
            ("action", Value::str(*name)),
            ("addr", Value::int(if e.action == Action::Oom { 0 } else { e.addr as u64 })),
            ("size", Value::int(e.size as u64)),
            ("stream", Value::int(e.stream as u64)),
            ("time_us", Value::int(recorder.unix_time_us(e))),
            ("frames", frames_value(e.frames.as_ref())),
        ];
        if e.action == Action::Oom {
            entry.push(("device_free", Value::int(e.addr as u64)));
        }
        out.push(Value::dict(entry));
    }
}

/// The snapshot of `resource`'s segments (none for a resource that keeps none, see
/// [`MemoryResource::memory_segments`]) and `recorder`'s trace, as PyTorch's dictionary. The
/// segments are on the recorder's device (device 0 without a recorder, or where no driver is).
pub fn snapshot(resource: &dyn MemoryResource, recorder: Option<&Recorder>) -> Value {
    let device = recorder.map_or(0, Recorder::device).max(0);
    let events = recorder.map(Recorder::events).unwrap_or_default();
    let frames = live_frames(&events);
    let segments: Vec<Value> =
        resource.memory_segments().unwrap_or_default().iter().map(|s| segment_value(s, device, &frames)).collect();
    let mut traces: Vec<Value> = (0..device).map(|_| Value::List(Vec::new())).collect();
    let mut trace = Vec::with_capacity(events.len() * 2);
    if let Some(r) = recorder {
        for e in &events {
            event_values(r, e, &mut trace);
        }
    }
    traces.push(Value::List(trace));
    let settings = Value::dict([
        ("allocator", Value::str(concat!("rmm-rs ", env!("CARGO_PKG_VERSION")))),
        ("max_entries", Value::int(recorder.map_or(0, Recorder::max_entries) as u64)),
        ("dropped_entries", Value::int(recorder.map_or(0, Recorder::dropped))),
        ("expandable_segments", Value::Bool(false)),
    ]);
    Value::dict([
        ("segments", Value::List(segments)),
        ("device_traces", Value::List(traces)),
        ("allocator_settings", settings),
    ])
}

/// [`snapshot`] as a pickle, what `torch.cuda.memory._dump_snapshot` writes.
pub fn snapshot_pickle(resource: &dyn MemoryResource, recorder: Option<&Recorder>) -> Vec<u8> {
    to_pickle(&snapshot(resource, recorder))
}

/// Writes `bytes` to `path` as a log file is opened: dumps often go to a shared folder, where a
/// symbolic link planted at the path is refused rather than followed.
fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = open_log_file(path, LogFileMode::Truncate)?;
    file.write_all(bytes).map_err(|e| Error::Io { path: path.display().to_string(), message: e.to_string() })
}

/// Writes [`snapshot_pickle`] to `path`, never through a symbolic link at `path` (see
/// [`open_log_file`]).
pub fn write_snapshot(path: &Path, resource: &dyn MemoryResource, recorder: Option<&Recorder>) -> Result<()> {
    write_file(path, &snapshot_pickle(resource, recorder))
}

/// Writes the snapshot and the memory map of `resource` into `dir` after a failed request of
/// `requested` bytes: `rmm_oom_<pid>_<n>.pickle` and `rmm_oom_<pid>_<n>.svg`, `n` counting
/// dumps of this process, each opened as [`write_snapshot`] opens its file. Returns the two paths.
pub fn write_oom_dump(
    dir: &Path,
    resource: &dyn MemoryResource,
    recorder: Option<&Recorder>,
    requested: usize,
) -> Result<(PathBuf, PathBuf)> {
    static DUMPS: AtomicU64 = AtomicU64::new(0);
    let n = DUMPS.fetch_add(1, Ordering::Relaxed);
    let stem = format!("rmm_oom_{}_{n}", std::process::id());
    let pickle = dir.join(format!("{stem}.pickle"));
    let svg = dir.join(format!("{stem}.svg"));
    let segments = resource.memory_segments().unwrap_or_default();
    write_snapshot(&pickle, resource, recorder)?;
    let caption = format!("out of memory: {requested} bytes requested");
    write_file(&svg, memory_map_svg(&segments, &caption).as_bytes())?;
    Ok((pickle, svg))
}
