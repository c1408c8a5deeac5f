//! Allocation during CUDA stream capture, for `pool_memory_resource` and
//! `virtual_pool_memory_resource` alike: the five calls of the pools' capture support
//! (`rmm::resource::pool::capture` in the core), each a query that names its kind on a resource of
//! another kind.

use super::ffi::Outcome;
use super::handle::{query_outcome, Pool, RustResource};
use rmm::resource::VirtualPoolMemoryResource;
use rmm::{CudaStreamView, Error, Result};

/// The kinds these calls answer for, for the message of a resource of another kind.
const KINDS: &str = "pool_memory_resource or virtual_pool_memory_resource";

/// One of the two pools behind a handle.
enum Capturing<'a> {
    Pool(&'a Pool),
    Virtual(&'a VirtualPoolMemoryResource),
}

/// The pool behind `r`, or the logic error of `query` asked of another kind.
fn capturing<'a>(r: &'a RustResource, query: &str) -> Result<Capturing<'a>> {
    if let Ok(p) = r.kind::<Pool>(query, KINDS) {
        return Ok(Capturing::Pool(p));
    }
    r.kind::<VirtualPoolMemoryResource>(query, KINDS).map(Capturing::Virtual)
}

/// Marks `stream` (a `cudaStream_t` as an integer), being captured, as capturing into memory
/// private to its capture; the capture's id. A logic error for a stream not capturing.
///
/// # Safety
/// `stream` names a live stream for the call: RMM's contract for `cuda_stream_view`, which the
/// C++ caller keeps.
pub(crate) unsafe fn capture_begin(r: &RustResource, stream: usize) -> Outcome {
    query_outcome("begin_capture", || {
        // SAFETY: the caller's contract: `stream` is live for the call.
        let stream = unsafe { CudaStreamView::from_handle(stream) };
        let id = match capturing(r, "begin_capture")? {
            Capturing::Pool(p) => p.begin_capture(stream)?,
            Capturing::Virtual(v) => v.begin_capture(stream)?,
        };
        usize::try_from(id).map_err(|_| Error::InvalidArgument(format!("capture id {id} does not fit a size_t")))
    })
}

/// The capture on `stream` ended: its calls go back to the shared memory.
///
/// # Safety
/// As for [`capture_begin`].
pub(crate) unsafe fn capture_end(r: &RustResource, stream: usize) -> Outcome {
    query_outcome("end_capture", || {
        // SAFETY: the caller's contract: `stream` is live for the call.
        let stream = unsafe { CudaStreamView::from_handle(stream) };
        match capturing(r, "end_capture")? {
            Capturing::Pool(p) => p.end_capture(stream),
            Capturing::Virtual(v) => v.end_capture(stream),
        }
        Ok(0)
    })
}

/// Gives capture `id`'s private memory back to the pool; a logic error, with nothing changed,
/// while the capture is marked on a stream or holds live blocks, or for an unknown id.
pub(crate) fn capture_release(r: &RustResource, id: u64) -> Outcome {
    query_outcome("release_capture", || {
        // The C++ caller's duty, written on `release_capture` in the headers: every graph of the
        // capture is destroyed (C++ code is outside Rust's checks).
        match capturing(r, "release_capture")? {
            // SAFETY: the caller's duty above.
            Capturing::Pool(p) => unsafe { p.release_capture(id)? },
            // SAFETY: the caller's duty above.
            Capturing::Virtual(v) => unsafe { v.release_capture(id)? },
        }
        Ok(0)
    })
}

/// The ids of the captures whose private memory the pool keeps, into `out`.
pub(crate) fn capture_ids(r: &RustResource, out: &mut Vec<u64>) -> Outcome {
    query_outcome("captures", || {
        *out = match capturing(r, "captures")? {
            Capturing::Pool(p) => p.captures(),
            Capturing::Virtual(v) => v.captures(),
        };
        Ok(out.len())
    })
}

/// Bytes of private memory the pool keeps for capture `id` (0 for an unknown one).
pub(crate) fn capture_pool_bytes(r: &RustResource, id: u64) -> Outcome {
    query_outcome("capture_pool_size", || {
        Ok(match capturing(r, "capture_pool_size")? {
            Capturing::Pool(p) => p.capture_pool_size(id),
            Capturing::Virtual(v) => v.capture_pool_size(id),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::super::ffi::ErrorKind;
    use super::super::plain::new_host_memory_resource;
    use super::super::pool::new_pool_memory_resource;
    use super::*;

    #[test]
    fn calls_on_another_kind_are_logic_errors_naming_the_pools() {
        let host = new_host_memory_resource();
        let mut ids = Vec::new();
        // SAFETY: the legacy default stream (0) is always alive.
        let (begun, ended) = unsafe { (capture_begin(&host, 0), capture_end(&host, 0)) };
        for out in [begun, ended, capture_release(&host, 1), capture_ids(&host, &mut ids), capture_pool_bytes(&host, 1)]
        {
            assert_eq!(out.kind, ErrorKind::Logic, "{}", out.message);
            assert!(out.message.contains(KINDS), "{}", out.message);
        }
    }

    #[test]
    fn a_pool_without_captures_answers_and_refuses_an_unknown_release() {
        let host = new_host_memory_resource();
        let pool = new_pool_memory_resource(&host, 0, 0, false);
        let mut ids = vec![7];
        assert!(capture_ids(&pool, &mut ids).is_ok());
        assert!(ids.is_empty());
        assert_eq!(capture_pool_bytes(&pool, 3).ptr, 0);
        // SAFETY: the legacy default stream (0) is always alive.
        let ended = unsafe { capture_end(&pool, 0) };
        assert!(ended.is_ok(), "ending a stream never marked does nothing");
        let refused = capture_release(&pool, 3);
        assert_eq!(refused.kind, ErrorKind::Logic);
        assert!(refused.message.contains("capture 3"), "{}", refused.message);
    }
}
