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

    /// The owner of memory no stream has used yet (fresh chunks): any stream may take it at once.
    pub const FRESH: StreamKey = StreamKey(0b111);

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

/// A small number unique to the calling thread, counting from 1 in order of first use: tells
/// per-thread default streams apart, and is the Thread column of the logging adaptor.
///
/// While the thread's locals are being torn down every call gets a fresh number instead of
/// panicking; a pool then treats each such call as another stream, which only orders more.
pub fn current_thread_number() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    thread_local!(static NUMBER: usize = NEXT.fetch_add(1, Ordering::Relaxed));
    NUMBER.try_with(|n| *n).unwrap_or_else(|_| NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Orders work between streams so a block freed on one stream can be handed to another.
///
/// The pool never touches a stream the current call does not name: a stream that freed blocks may
/// have been destroyed since, and a destroyed handle must not reach the driver. So a hand-over has
/// two halves. [`record`](Self::record) runs inside a call on the owner stream (which is therefore
/// alive) and captures all work enqueued on it so far; [`wait`](Self::wait) runs inside a call on
/// the taking stream and makes it wait for what was captured. Neither runs per allocation; `record`
/// runs per free only where several streams share the blocks (see `PoolMemoryResource`).
pub trait StreamOrder: Send + Sync {
    /// Captures all work enqueued on `owner` so far. Called only from a call on `owner`.
    fn record(&self, owner: StreamKey) -> Result<()>;

    /// Makes work enqueued on `waiter` from now on wait for what the last `record(owner)` captured.
    /// Called only from a call on `waiter`, after `record(owner)` succeeded.
    fn wait(&self, owner: StreamKey, waiter: StreamKey) -> Result<()>;

    /// Blocks until all work that may use the pool's memory has finished, on every stream,
    /// destroyed ones included.
    fn synchronize_all(&self) -> Result<()>;

    /// False when streams need no ordering at all (memory only the host touches): then any
    /// stream's free blocks may be taken at once.
    fn is_needed(&self) -> bool {
        true
    }
}

/// For memory only the host uses: host code runs in program order, so there is nothing to order.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostOrder;

impl StreamOrder for HostOrder {
    fn record(&self, _owner: StreamKey) -> Result<()> {
        Ok(())
    }
    fn wait(&self, _owner: StreamKey, _waiter: StreamKey) -> Result<()> {
        Ok(())
    }
    fn synchronize_all(&self) -> Result<()> {
        Ok(())
    }
    fn is_needed(&self) -> bool {
        false
    }
}
