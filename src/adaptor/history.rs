//! Records the allocation history of its upstream for snapshots in the format of PyTorch's
//! memory viewer (see [`crate::history`]). An extension of rmm-rs: RMM 26.10 has no such adaptor.

use crate::adaptor::never_allocated;
use crate::error::{Error, Result};
use crate::history::{self, Action, Recorder};
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use crate::DeviceId;
use parking_lot::RwLock;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Records every allocate and free that passes through (address, size, stream, device, time and,
/// if asked, the caller's stack) into a [`Recorder`], and takes snapshots of the pool below.
///
/// Recording is off until [`Recorder::enable`]; off, a call costs one relaxed atomic load more
/// than the upstream's. A free is recorded before it is forwarded and an allocation after, so
/// that in the trace a block's free always comes before another thread's allocation of the same
/// address; a free the upstream refuses (a misuse) stays in the trace. While recording, the
/// non-waiting free ([`try_deallocate_immediately`](MemoryResource::try_deallocate_immediately))
/// declines, so each free is recorded once, by `deallocate`.
///
/// With [`set_dump_on_oom`](Self::set_dump_on_oom), an allocation that runs out of memory writes
/// the snapshot and the pool's memory map into a folder, and the error's message names both files.
pub struct HistoryResourceAdaptor<U> {
    upstream: U,
    recorder: Arc<Recorder>,
    dump_dir: RwLock<Option<PathBuf>>,
}

impl<U> std::fmt::Debug for HistoryResourceAdaptor<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryResourceAdaptor").field("recorder", &self.recorder).finish_non_exhaustive()
    }
}

impl<U: MemoryResource> HistoryResourceAdaptor<U> {
    /// Wraps `upstream` with a recorder, off, for the current device (device 0 without a driver).
    pub fn new(upstream: U) -> Self {
        let device = DeviceId::current_or_none().map_or(0, |d| d.0.max(0));
        Self::with_recorder(upstream, Arc::new(Recorder::new(device)))
    }

    /// Wraps `upstream`, recording into `recorder` (which others may share or read).
    pub fn with_recorder(upstream: U, recorder: Arc<Recorder>) -> Self {
        HistoryResourceAdaptor { upstream, recorder, dump_dir: RwLock::new(None) }
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }

    /// The recorder: enable, disable, clear, read its events.
    pub fn recorder(&self) -> &Arc<Recorder> {
        &self.recorder
    }

    /// The snapshot of the upstream's segments and the recorded trace, as a pickle for
    /// `torch.cuda._memory_viz` (see [`history::snapshot`]).
    pub fn snapshot_pickle(&self) -> Vec<u8> {
        history::snapshot_pickle(&self.upstream, Some(&self.recorder))
    }

    /// Writes [`snapshot_pickle`](Self::snapshot_pickle) to `path`.
    pub fn dump_snapshot(&self, path: &Path) -> Result<()> {
        history::write_snapshot(path, &self.upstream, Some(&self.recorder))
    }

    /// Writes the snapshot and the memory map into `dir` whenever an allocation runs out of
    /// memory (`None`: no more). The folder must exist; it is checked at the first dump.
    pub fn set_dump_on_oom(&self, dir: Option<PathBuf>) {
        *self.dump_dir.write() = dir;
    }

    /// The folder out-of-memory dumps go to, if any.
    pub fn dump_on_oom(&self) -> Option<PathBuf> {
        self.dump_dir.read().clone()
    }

    /// Records a failed allocation and, for out of memory, writes the dump if asked and names it
    /// in the message.
    #[cold]
    #[inline(never)]
    fn failed(&self, error: Error, bytes: usize, stream: CudaStreamView) -> Error {
        let Error::OutOfMemory { requested, pool, mut reason, verbatim } = error else {
            return error;
        };
        let free = pool.map_or(0, |p| p.free_bytes);
        self.recorder.record(Action::Oom, free, bytes, stream.handle());
        let dir = self.dump_dir.read().clone();
        if let Some(dir) = dir {
            match history::write_oom_dump(&dir, &self.upstream, Some(&self.recorder), bytes) {
                Ok((pickle, svg)) => reason.push_str(&format!(
                    " (memory snapshot written to {}, memory map to {})",
                    pickle.display(),
                    svg.display()
                )),
                Err(e) => reason.push_str(&format!(" (no memory snapshot: {e})")),
            }
        }
        Error::OutOfMemory { requested, pool, reason, verbatim }
    }
}

// SAFETY: blocks come from the upstream unchanged and go back to it; the accessibility answers
// are the upstream's.
unsafe impl<U: MemoryResource> MemoryResource for HistoryResourceAdaptor<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        match self.upstream.allocate(bytes, alignment, stream) {
            Ok(ptr) => {
                if self.recorder.is_enabled() && !ptr.is_null() {
                    self.recorder.push(Action::Alloc, ptr as usize, bytes, stream.handle());
                }
                Ok(ptr)
            }
            Err(e) => Err(self.failed(e, bytes, stream)),
        }
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if never_allocated(ptr, bytes) {
            return Ok(());
        }
        if self.recorder.is_enabled() && !ptr.is_null() {
            self.recorder.push(Action::Free, ptr as usize, bytes, stream.handle());
        }
        self.upstream.deallocate(ptr, bytes, alignment, stream)
    }

    #[inline]
    fn try_allocate_immediately(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Option<*mut u8> {
        let ptr = self.upstream.try_allocate_immediately(bytes, alignment, stream)?;
        if self.recorder.is_enabled() && !ptr.is_null() {
            self.recorder.push(Action::Alloc, ptr as usize, bytes, stream.handle());
        }
        Some(ptr)
    }

    #[inline]
    fn try_deallocate_immediately(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> bool {
        // While recording, `deallocate` records the free (once) and forwards it.
        if self.recorder.is_enabled() || never_allocated(ptr, bytes) {
            return false;
        }
        self.upstream.try_deallocate_immediately(ptr, bytes, alignment, stream)
    }

    adaptor_identity_and_access!(upstream);
}
