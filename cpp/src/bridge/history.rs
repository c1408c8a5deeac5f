//! `history_resource_adaptor` (an rmm-rs addition): its constructor, recording switch and dumps.

use super::ffi::Outcome;
use super::handle::{query_outcome, RustResource};
use rmm::adaptor::HistoryResourceAdaptor;
use rmm::history::RecordOptions;
use rmm::resource::SharedResource;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The C++ class name, which a query asked of another kind of resource names.
const KIND: &str = "history_resource_adaptor";

type History = HistoryResourceAdaptor<SharedResource>;

/// A history adaptor over `upstream`, not recording yet; its stacks are native call stacks.
pub(crate) fn new_history_adaptor(upstream: &RustResource) -> Box<RustResource> {
    RustResource::make(KIND, || {
        let adaptor = History::new(upstream.shared()?.clone());
        adaptor.recorder().set_stack_source(Some(Arc::new(rmm::history::native_stack)));
        Ok(Arc::new(adaptor) as SharedResource)
    })
}

fn history<'a>(r: &'a RustResource, query: &str) -> rmm::Result<&'a History> {
    r.kind::<History>(query, KIND)
}

/// Starts (`enabled`) or stops recording, with native stacks if `stacks`; `max_entries` 0 is an
/// invalid argument.
pub(crate) fn history_record(
    r: &RustResource,
    enabled: bool,
    max_entries: usize,
    clear: bool,
    stacks: bool,
) -> Outcome {
    query_outcome("record_history", || {
        let recorder = history(r, "record_history")?.recorder();
        if enabled {
            recorder.enable(RecordOptions { max_entries, stacks, clear })?;
        } else {
            recorder.disable();
            if clear {
                recorder.clear();
            }
        }
        Ok(0)
    })
}

/// 1 while recording, else 0.
pub(crate) fn history_is_recording(r: &RustResource) -> Outcome {
    query_outcome("is_recording", || Ok(usize::from(history(r, "is_recording")?.recorder().is_enabled())))
}

/// The number of events kept.
pub(crate) fn history_length(r: &RustResource) -> Outcome {
    query_outcome("history_length", || Ok(history(r, "history_length")?.recorder().len()))
}

/// Writes the snapshot's pickle to `path`.
pub(crate) fn history_dump_snapshot(r: &RustResource, path: &str) -> Outcome {
    query_outcome("dump_snapshot", || history(r, "dump_snapshot")?.dump_snapshot(Path::new(path)).map(|()| 0))
}

/// The snapshot's pickle, into `out`.
pub(crate) fn history_snapshot(r: &RustResource, out: &mut Vec<u8>) -> Outcome {
    query_outcome("snapshot", || {
        *out = history(r, "snapshot")?.snapshot_pickle();
        Ok(out.len())
    })
}

/// Dumps into the folder `dir` on out-of-memory (`""`: no more).
pub(crate) fn history_dump_on_oom(r: &RustResource, dir: &str) -> Outcome {
    query_outcome("dump_on_oom", || {
        let h = history(r, "dump_on_oom")?;
        h.set_dump_on_oom((!dir.is_empty()).then(|| PathBuf::from(dir)));
        Ok(0)
    })
}
