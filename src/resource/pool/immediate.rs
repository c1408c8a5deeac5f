//! The pool's calls that never wait: the fast paths of allocation and free without their
//! fallbacks, for callers that hold a lock of their own (Python's GIL) and give it up only around
//! calls that may wait.

use super::PoolMemoryResource;
use crate::resource::{effective_alignment, MemoryResource};
use crate::stream::CudaStreamView;
use rmm_algorithms::{rounded_size, StreamIdentity};

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// A block from the stream's own free blocks in its home shard, if that shard's lock is free
    /// and the stream's set needs no CUDA call (its identity is trusted, no other stream waits
    /// for it to publish). `None` otherwise, with nothing changed but the shard's note of which
    /// stream called last.
    #[inline]
    pub(super) fn allocate_immediately(
        &self,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView,
    ) -> Option<*mut u8> {
        if bytes == 0 {
            return None;
        }
        let align = effective_alignment(alignment).ok()?;
        let size = rounded_size(bytes)?;
        let key = stream.key();
        let mut core = self.shards.try_lock(self.shards.home(key))?;
        let (set, identity) = core.set_and_identity_of(key);
        if identity != StreamIdentity::Trusted || core.is_wanted(set) {
            return None;
        }
        core.allocate(set, bytes, size, align).map(|a| a as *mut u8)
    }

    /// Frees a block of the stream's home shard there, if its lock is free and the free needs no
    /// CUDA call (the set knows its stream, and no other stream waits for it or shares the shard,
    /// so nothing is published). False otherwise, with the block still allocated.
    #[inline]
    pub(super) fn deallocate_immediately(&self, ptr: *mut u8, bytes: usize, stream: CudaStreamView) -> bool {
        if ptr.is_null() {
            return false;
        }
        let key = stream.key();
        let Some(mut core) = self.shards.try_lock(self.shards.home(key)) else {
            return false;
        };
        let (set, identity) = core.set_and_identity_of(key);
        let shared = core.shared_by_streams();
        if identity == StreamIdentity::Unknown || self.free_publishes(&core, set, shared) {
            return false;
        }
        matches!(core.try_deallocate_shared(ptr as usize, bytes, set, shared), Some(Ok(())))
    }
}
