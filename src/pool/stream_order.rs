//! The seam between the pool algorithm and whatever orders work on streams.

use crate::error::Result;

/// Identifies a stream to the pool. Handles of real streams are used as they are; the legacy
/// default stream is 0; the per-thread default stream of each thread gets a key of its own (see
/// [`StreamKey::per_thread`]) because the same handle names a different stream on every thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamKey(pub usize);

impl StreamKey {
    /// Low bits no real stream handle has (handles are aligned pointers), marking per-thread keys.
    const PER_THREAD_TAG: usize = 0b011;

    /// The key of the per-thread default stream of thread number `thread`.
    pub const fn per_thread(thread: usize) -> Self {
        StreamKey((thread << 3) | Self::PER_THREAD_TAG)
    }

    /// The thread number if this is a per-thread default stream key.
    pub const fn per_thread_owner(self) -> Option<usize> {
        if self.0 & 0b111 == Self::PER_THREAD_TAG {
            Some(self.0 >> 3)
        } else {
            None
        }
    }
}

/// Orders work between streams so a block freed on one stream can be handed to another.
///
/// The pool calls this only on its slow paths (taking another stream's free blocks, returning memory
/// to the upstream), never per allocation or per free: that is why a free costs no CUDA call.
pub trait StreamOrder: Send + Sync {
    /// After this returns, work enqueued on `waiter` waits for all work enqueued on `owner` so far.
    /// Since every free on `owner` was enqueued before this call, its blocks are then safe for
    /// `waiter`.
    fn order(&self, owner: StreamKey, waiter: StreamKey) -> Result<()>;

    /// Blocks until all work that may still use the pool's memory has finished.
    fn synchronize_all(&self) -> Result<()>;
}

/// For memory only the host uses: host code runs in program order, so there is nothing to order.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostOrder;

impl StreamOrder for HostOrder {
    fn order(&self, _owner: StreamKey, _waiter: StreamKey) -> Result<()> {
        Ok(())
    }
    fn synchronize_all(&self) -> Result<()> {
        Ok(())
    }
}

/// A small number unique to the calling thread, used to tell per-thread default streams apart.
pub fn current_thread_number() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    thread_local!(static NUMBER: usize = NEXT.fetch_add(1, Ordering::Relaxed));
    NUMBER.with(|n| *n)
}

impl StreamKey {
    /// The key of a stream as seen from the calling thread: the legacy default stream (0 or
    /// `cudaStreamLegacy`) is 0, the per-thread default stream is this thread's own key.
    #[inline]
    pub fn from_view(stream: crate::stream::CudaStreamView) -> Self {
        if stream.is_default() {
            StreamKey(0)
        } else if stream.is_per_thread_default() {
            StreamKey::per_thread(current_thread_number())
        } else {
            StreamKey(stream.handle())
        }
    }
}
