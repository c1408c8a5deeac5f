//! The rest of a free once its fast path (`fast_path.rs`) declined it: a null pointer, a misuse,
//! a block of another shard, or a free on a stream marked as capturing.

use super::PoolMemoryResource;
use crate::error::{Error, Result};
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use rmm_algorithms::StreamKey;

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// The rest of a free after [`deallocate_at_home`](Self::deallocate_at_home) returned false:
    /// a null pointer, a misuse, or a block of another shard.
    #[cold]
    #[inline(never)]
    pub(super) fn deallocate_beyond_home(&self, ptr: *mut u8, bytes: usize, stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        let key = stream.key();
        let mut home = self.shards.home(key);
        if self.shards.is_capture_home(home) {
            if self.deallocate_captured(ptr as usize, bytes, key)? {
                return Ok(());
            }
            home = self.shards.home(key);
        }
        {
            let mut core = self.shards.lock(home);
            let set = self.streams.set_for_free(&mut core, key, &self.captures);
            let shared = core.shared_by_streams();
            if let Some(freed) = core.try_deallocate_shared(ptr as usize, bytes, set, shared) {
                if freed.is_ok() {
                    self.publish_after_free(&mut core, set, shared);
                }
                return freed.map_err(Error::Misuse);
            }
        }
        self.deallocate_elsewhere(home, ptr as usize, bytes, key)
    }

    /// Frees a block that the home shard of `key` did not hand out: finds the owner shard and frees
    /// it there. The block joins `key`'s set in that shard and, for device memory, is published at
    /// once: `key` rarely visits that shard, and this call is the one moment `key` is known alive.
    #[cold]
    #[inline(never)]
    fn deallocate_elsewhere(&self, home: usize, ptr: usize, bytes: usize, key: StreamKey) -> Result<()> {
        let owner = self.shards.owner(ptr);
        let Some(shard) = owner else {
            return Err(Error::Misuse(crate::error::Misuse::UnknownPointer { ptr }));
        };
        // A capturing stream not announced records nothing: its free goes to its capture.
        if self.found_capturing(key).is_some() && self.deallocate_captured(ptr, bytes, key)? {
            return Ok(());
        }
        if self.shards.is_capture_home(shard) {
            return self.deallocate_capture_block(ptr, bytes);
        }
        let mut core = self.shards.lock(shard);
        let set = self.streams.set_for_free(&mut core, key, &self.captures);
        core.deallocate(ptr, bytes, set).map_err(Error::Misuse)?;
        if shard != home && self.streams.ordered() {
            self.publish(&mut core, set);
        }
        Ok(())
    }
}
