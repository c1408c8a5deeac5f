//! Allocation during CUDA stream capture, for both pools of the pool family: the five calls of the
//! pools' capture support (`rmm::resource::pool::capture` in the core).

use super::ffi::Outcome;
use super::outcome::{answer, Context};
use super::pool::{PoolResource, Pools};
use super::resource::stream_view;
use rmm::Error;

impl PoolResource {
    /// Marks `stream` (a `cudaStream_t` as an integer), being captured, as capturing into memory
    /// private to its capture; the capture's id. A logic error for a stream not capturing.
    ///
    /// # Safety
    /// `stream` names a live stream (or a default one) for the call: RMM's contract for
    /// `cuda_stream_view`, which the C++ caller keeps.
    pub(crate) unsafe fn capture_begin(&self, stream: usize) -> Outcome {
        answer("begin_capture", Context::Construct, || {
            // SAFETY: the caller's contract: `stream` is live for the call.
            let stream = unsafe { stream_view(stream) };
            let id = match self.pools()? {
                Pools::Classic(p) => p.begin_capture(stream)?,
                Pools::Virtual(v) => v.begin_capture(stream)?,
            };
            Ok(usize::try_from(id)
                .map_err(|_| Error::InvalidArgument(format!("capture id {id} does not fit a size_t")))?)
        })
    }

    /// The capture on `stream` ended: its calls go back to the shared memory.
    ///
    /// # Safety
    /// As for [`capture_begin`](Self::capture_begin).
    pub(crate) unsafe fn capture_end(&self, stream: usize) -> Outcome {
        answer("end_capture", Context::Construct, || {
            // SAFETY: the caller's contract: `stream` is live for the call.
            let stream = unsafe { stream_view(stream) };
            match self.pools()? {
                Pools::Classic(p) => p.end_capture(stream),
                Pools::Virtual(v) => v.end_capture(stream),
            }
            Ok(0)
        })
    }

    /// Gives capture `id`'s private memory back to the pool; a logic error, with nothing changed,
    /// while the capture is marked on a stream or holds live blocks, or for an unknown id.
    pub(crate) fn capture_release(&self, id: u64) -> Outcome {
        answer("release_capture", Context::Construct, || {
            // The C++ caller's duty, written on `release_capture` in the headers: every graph of
            // the capture is destroyed (C++ code is outside Rust's checks).
            match self.pools()? {
                // SAFETY: the caller's duty above.
                Pools::Classic(p) => unsafe { p.release_capture(id)? },
                // SAFETY: the caller's duty above.
                Pools::Virtual(v) => unsafe { v.release_capture(id)? },
            }
            Ok(0)
        })
    }

    /// The ids of the captures whose private memory the pool keeps, into `out`.
    pub(crate) fn capture_ids(&self, out: &mut Vec<u64>) -> Outcome {
        answer("captures", Context::Construct, || {
            *out = match self.pools()? {
                Pools::Classic(p) => p.captures(),
                Pools::Virtual(v) => v.captures(),
            };
            Ok(out.len())
        })
    }

    /// Bytes of private memory the pool keeps for capture `id` (0 for an unknown one).
    pub(crate) fn capture_pool_bytes(&self, id: u64) -> Outcome {
        answer("capture_pool_size", Context::Construct, || {
            Ok(match self.pools()? {
                Pools::Classic(p) => p.capture_pool_size(id),
                Pools::Virtual(v) => v.capture_pool_size(id),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::ffi::ErrorKind;
    use super::super::plain::new_host_memory_resource;
    use super::super::pool::{new_moved_from_pool_resource, new_pool_memory_resource};

    #[test]
    fn calls_on_a_moved_from_pool_are_logic_errors() {
        let moved = new_moved_from_pool_resource();
        let mut ids = Vec::new();
        // SAFETY: the legacy default stream (handle 0) lives for the whole program.
        let (begun, ended) = unsafe { (moved.capture_begin(0), moved.capture_end(0)) };
        for out in [begun, ended, moved.capture_release(1), moved.capture_ids(&mut ids), moved.capture_pool_bytes(1)] {
            assert_eq!(out.kind, ErrorKind::Logic, "{}", out.message);
            assert!(out.message.contains("moved from"), "{}", out.message);
        }
    }

    #[test]
    fn a_pool_without_captures_answers_and_refuses_an_unknown_release() {
        let host = new_host_memory_resource();
        let pool = new_pool_memory_resource(host.resource(), 0, 0, false);
        let mut ids = vec![7];
        assert!(pool.capture_ids(&mut ids).is_ok());
        assert!(ids.is_empty());
        assert_eq!(pool.capture_pool_bytes(3).ptr, 0);
        // SAFETY: the legacy default stream (handle 0) lives for the whole program.
        let ended = unsafe { pool.capture_end(0) };
        assert!(ended.is_ok(), "ending a stream never marked does nothing");
        let refused = pool.capture_release(3);
        assert_eq!(refused.kind, ErrorKind::Logic);
        assert!(refused.message.contains("capture 3"), "{}", refused.message);
    }
}
