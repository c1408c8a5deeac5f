//! A fixed set of streams handed out round-robin (RMM's `cuda_stream_pool`), for spreading
//! independent work over streams without creating one per task.

use crate::error::{Error, Result};
use crate::stream::{CudaStream, CudaStreamView};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Owns `n` streams (non-blocking unless made [`with_flags`](Self::with_flags)) and hands out views of them in turn. The views are valid while
/// the pool lives.
#[derive(Debug)]
pub struct CudaStreamPool {
    streams: Vec<CudaStream>,
    next: AtomicUsize,
}

impl CudaStreamPool {
    /// The pool size RMM uses by default.
    pub const DEFAULT_SIZE: usize = 16;

    /// Creates `n` non-blocking streams on the current device; `n` must be at least 1.
    pub fn new(n: usize) -> Result<Self> {
        Self::with_flags(n, true)
    }

    /// Creates `n` streams on the current device, non-blocking or, with `non_blocking == false`,
    /// synchronising with the legacy default stream (RMM's default `cuda_stream::flags::sync_default`).
    pub fn with_flags(n: usize, non_blocking: bool) -> Result<Self> {
        if n == 0 {
            return Err(Error::InvalidArgument("a stream pool needs at least one stream (n was 0)".into()));
        }
        let streams = (0..n).map(|_| CudaStream::with_flags(non_blocking)).collect::<Result<Vec<_>>>()?;
        Ok(CudaStreamPool { streams, next: AtomicUsize::new(0) })
    }

    /// The next stream in round-robin order. Safe to call from many threads; the counter only has
    /// to spread the streams, so relaxed ordering suffices.
    pub fn get_stream(&self) -> CudaStreamView<'_> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        self.get_stream_by_id(i)
    }

    /// The stream `id` modulo the pool size, so any id names some stream (as in RMM).
    pub fn get_stream_by_id(&self, id: usize) -> CudaStreamView<'_> {
        self.streams[id % self.streams.len()].view()
    }

    /// The number of streams.
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    /// Always false: a pool holds at least one stream.
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<CudaStreamPool>();
    }

    #[test]
    fn zero_streams_is_invalid_without_cuda() {
        assert!(matches!(CudaStreamPool::new(0), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn zero_streams_is_invalid_with_either_flag() {
        for non_blocking in [false, true] {
            assert!(matches!(CudaStreamPool::with_flags(0, non_blocking), Err(Error::InvalidArgument(_))));
        }
    }

    #[test]
    fn missing_driver_is_an_error_not_a_panic() {
        if crate::cuda_available() {
            return;
        }
        assert!(matches!(CudaStreamPool::new(4), Err(Error::NoDriver(_))));
    }
}
