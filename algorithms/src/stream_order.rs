//! The seam between the pool algorithm and whatever orders work on streams.

use crate::error::Result;
pub use crate::stream_identity::StreamIdentity;
pub use crate::stream_key::{StreamKey, StreamKind};

/// A small number unique to the calling thread, counting from 1 in order of first use: tells
/// per-thread default streams apart, and is the Thread column of the logging adaptor.
///
/// While the thread's locals are being torn down every call gets a fresh number instead of
/// panicking; a pool then treats each such call as another stream, which only orders more.
#[inline]
pub fn current_thread_number() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    thread_local!(static NUMBER: usize = NEXT.fetch_add(1, Ordering::Relaxed));
    NUMBER.try_with(|n| *n).unwrap_or_else(|_| NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The relaxed stream capture mode, as [`StreamOrder::relax_capture_mode`] numbers modes (0
/// global, 1 thread-local, 2 relaxed, as the driver does).
pub const CAPTURE_MODE_RELAXED: u32 = 2;

/// A number unique to each retirement, for [`StreamKey::retired_after_capture`] and
/// [`StreamKey::retired_after_sync`], and for [`StreamIdentity::Unrepeatable`].
pub fn next_retirement_number() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Orders work between streams so a block freed on one stream can be handed to another.
///
/// The pool never touches a stream the current call does not name: a stream that freed blocks may
/// have been destroyed since, and a destroyed handle must not reach the driver. So a hand-over has
/// two halves. [`record`](Self::record) runs inside a call on the owner stream (which is therefore
/// alive) and captures all work enqueued on it so far; [`wait`](Self::wait) runs inside a call on
/// the taking stream and makes it wait for what was captured. Neither runs per allocation; `record`
/// runs per free only where several streams share the blocks (see `PoolMemoryResource`).
///
/// A handle may name several streams over time (see [`StreamKey`]), so a capture belongs to the
/// stream `identity` names (see [`identity`](Self::identity)): a wait for another identity's
/// capture must fail, since the handle's last capture then covers some other stream's work.
pub trait StreamOrder: Send + Sync {
    /// Captures all work enqueued on `owner` (the stream `identity` names) so far. Called only
    /// from a call on `owner`.
    fn record(&self, owner: StreamKey, identity: StreamIdentity) -> Result<()>;

    /// Makes work enqueued on `waiter` from now on wait for what the last `record(owner, identity)`
    /// captured; an error when the last capture on `owner` was of another identity. Called only
    /// from a call on `waiter`, after `record(owner, identity)` succeeded.
    fn wait(&self, owner: StreamKey, identity: StreamIdentity, waiter: StreamKey) -> Result<()>;

    /// Blocks until all work that may use the pool's memory has finished, on every stream,
    /// destroyed ones included.
    fn synchronize_all(&self) -> Result<()>;

    /// False when streams need no ordering at all (memory only the host touches): then any
    /// stream's free blocks may be taken at once.
    fn is_needed(&self) -> bool {
        true
    }

    /// Which stream `key` names now: [`StreamIdentity::Trusted`] when the key cannot name another
    /// stream without the pool being told first (see [`retire`](Self::retire)), else an identity
    /// the driver never gives two streams (never [`Unknown`](StreamIdentity::Unknown) nor
    /// [`Stale`](StreamIdentity::Stale)). `known` is what the last answer for this key's sets was
    /// (or [`StreamIdentity::Unknown`]); an implementation may return it as soon as
    /// it sees the same stream. The pool asks when a stream first uses a set of free lists, and
    /// again on each allocation from the sets of a stream that is not trusted; a different answer
    /// means the stream was destroyed and its handle reused, and the old stream's blocks then wait
    /// for [`synchronize_all`](Self::synchronize_all). Called only from a call on `key`.
    fn identity(&self, _key: StreamKey, _known: StreamIdentity) -> StreamIdentity {
        StreamIdentity::Trusted
    }

    /// `owner` is about to be destroyed (it is still alive): capture all work enqueued on it, so
    /// that a later [`wait`](Self::wait) for `retired` (a key no stream has) orders the waiter
    /// after it, and forget `owner`'s own capture (a new stream may get its handle). An error
    /// leaves nothing captured; the pool then makes the blocks wait for a synchronisation.
    fn retire(&self, _owner: StreamKey, _retired: StreamKey) -> Result<()> {
        Err(crate::error::Error::InvalidArgument("this stream order cannot capture a retiring stream".into()))
    }

    /// The CUDA graph capture `key`'s stream is being captured into now: its capture id (unique in
    /// the process), or `None` when the stream is not capturing. Legal during a capture (no event,
    /// no synchronisation). Called only from a call on `key`, on the pool's cold paths.
    fn capture_of(&self, _key: StreamKey) -> Result<Option<u64>> {
        Ok(None)
    }

    /// Sets the calling thread's stream capture mode to relaxed, so that an upstream allocation
    /// made now does not invalidate a capture in progress on any stream, and returns the mode it
    /// had, for [`restore_capture_mode`](Self::restore_capture_mode).
    fn relax_capture_mode(&self) -> Result<u32> {
        Ok(CAPTURE_MODE_RELAXED)
    }

    /// Gives the calling thread back the capture mode `previous` that
    /// [`relax_capture_mode`](Self::relax_capture_mode) returned.
    fn restore_capture_mode(&self, _previous: u32) {}

    /// Drops the captures of retired keys for which `still_needed` is false (their blocks were all
    /// taken).
    fn forget_retired(&self, _still_needed: &dyn Fn(StreamKey) -> bool) {}
}

/// Orders streams as a device pool must (every hand-over recorded, then waited for), with nothing
/// to wait for: host code runs in program order. A pool over host memory with it moves blocks
/// between streams as it would on a GPU, so the device's decisions run in host tests and replays.
#[derive(Debug, Default, Clone, Copy)]
pub struct SimulatedDeviceOrder;

impl StreamOrder for SimulatedDeviceOrder {
    fn record(&self, _owner: StreamKey, _identity: StreamIdentity) -> Result<()> {
        Ok(())
    }
    fn wait(&self, _owner: StreamKey, _identity: StreamIdentity, _waiter: StreamKey) -> Result<()> {
        Ok(())
    }
    fn synchronize_all(&self) -> Result<()> {
        Ok(())
    }
}

/// For memory only the host uses: host code runs in program order, so there is nothing to order.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostOrder;

impl StreamOrder for HostOrder {
    fn record(&self, _owner: StreamKey, _identity: StreamIdentity) -> Result<()> {
        Ok(())
    }
    fn wait(&self, _owner: StreamKey, _identity: StreamIdentity, _waiter: StreamKey) -> Result<()> {
        Ok(())
    }
    fn synchronize_all(&self) -> Result<()> {
        Ok(())
    }
    fn is_needed(&self) -> bool {
        false
    }
    fn retire(&self, _owner: StreamKey, _retired: StreamKey) -> Result<()> {
        Ok(())
    }
}
