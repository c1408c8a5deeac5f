//! The pool's last resort before growing past what its streams' free memory could give, or
//! reporting out-of-memory (steps 4 and 6 of the slow path, `slow_path.rs`), and the first step of
//! a release: a synchronisation of everything, after which every free block is fresh memory any
//! stream may take.
//!
//! Only blocks freed before the synchronisation starts are covered by it. A block freed while it
//! runs may still be used by work queued after it began, so every shard's free blocks are sealed
//! first (moved to a set no stream may take from), and only those become fresh afterwards. One
//! synchronisation runs at a time: a thread that needs one while another runs waits for it, then
//! first tries the memory it made fresh, instead of sealing the others' blocks away.

use super::PoolMemoryResource;
use crate::resource::MemoryResource;
use rmm_algorithms::{next_retirement_number, StreamKey};

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// Synchronises every stream; the blocks free when it starts become fresh memory once it
    /// succeeds (see the top of this file). Fails without a call while a stream is marked as
    /// capturing. The caller holds `sync_lock`. Whether it succeeded.
    pub(super) fn synchronise_sealed(&self) -> bool {
        let sealed = StreamKey::sealed(next_retirement_number());
        for shard in self.shards.all().iter() {
            shard.lock().seal(sealed);
        }
        // A synchronisation of everything is illegal while a stream captures: count it as failed.
        let synced = !self.capture_in_progress() && self.streams.order().synchronize_all().is_ok();
        for shard in self.shards.all().iter() {
            shard.lock().unseal(sealed, synced);
        }
        synced
    }

    /// Free bytes of replaced streams in every shard, which only a synchronisation hands over.
    pub(super) fn free_bytes_waiting_for_sync(&self) -> usize {
        self.shards.all().iter().map(|shard| shard.lock().free_bytes_waiting_for_sync()).sum()
    }
}
