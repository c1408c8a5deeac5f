//! `history_resource_adaptor` (an rmm-rs addition) in the adaptor family: its constructor, recording switch and dumps.

use super::adaptors::AdaptorResource;
use super::ffi::Outcome;
use super::outcome::{answer, Context};
use super::resource::AnyResource;
use rmm::adaptor::HistoryResourceAdaptor;
use rmm::history::RecordOptions;
use rmm::resource::SharedResource;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The C++ class name, which a query asked of another kind of resource names.
const KIND: &str = "history_resource_adaptor";

type History = HistoryResourceAdaptor<SharedResource>;

/// A history adaptor over `upstream`, not recording yet; its stacks are native call stacks.
pub(crate) fn new_history_adaptor(upstream: &AnyResource) -> Box<AdaptorResource> {
    AdaptorResource::make(KIND, || {
        let adaptor = History::new(upstream.shared()?.clone());
        adaptor.recorder().set_stack_source(Some(Arc::new(rmm::history::native_stack)));
        Ok(Arc::new(adaptor) as SharedResource)
    })
}

impl AdaptorResource {
    fn history(&self, query: &str) -> rmm::Result<&History> {
        self.resource().kind::<History>(query, KIND)
    }

    /// Starts (`enabled`) or stops recording, with native stacks if `stacks`; `max_entries` 0 is an
    /// invalid argument.
    pub(crate) fn history_record(&self, enabled: bool, max_entries: usize, clear: bool, stacks: bool) -> Outcome {
        answer("record_history", Context::Construct, || {
            let recorder = self.history("record_history")?.recorder();
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
    pub(crate) fn history_is_recording(&self) -> Outcome {
        answer("is_recording", Context::Construct, || {
            Ok(usize::from(self.history("is_recording")?.recorder().is_enabled()))
        })
    }

    /// The number of events kept.
    pub(crate) fn history_length(&self) -> Outcome {
        answer("history_length", Context::Construct, || Ok(self.history("history_length")?.recorder().len()))
    }

    /// Writes the snapshot's pickle to `path`.
    pub(crate) fn history_dump_snapshot(&self, path: &str) -> Outcome {
        answer("dump_snapshot", Context::Construct, || {
            self.history("dump_snapshot")?.dump_snapshot(Path::new(path))?;
            Ok(0)
        })
    }

    /// The snapshot's pickle, into `out`.
    pub(crate) fn history_snapshot(&self, out: &mut Vec<u8>) -> Outcome {
        answer("snapshot", Context::Construct, || {
            *out = self.history("snapshot")?.snapshot_pickle();
            Ok(out.len())
        })
    }

    /// Dumps into the folder `dir` on out-of-memory (`""`: no more).
    pub(crate) fn history_dump_on_oom(&self, dir: &str) -> Outcome {
        answer("dump_on_oom", Context::Construct, || {
            let h = self.history("dump_on_oom")?;
            h.set_dump_on_oom((!dir.is_empty()).then(|| PathBuf::from(dir)));
            Ok(0)
        })
    }
}
