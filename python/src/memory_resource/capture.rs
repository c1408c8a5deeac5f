//! Allocation during CUDA stream capture (not in RMM 26.10: an addition of rmm-rs): the calls the
//! two pool classes share, and the pool found under an adaptor stack (for the PyTorch hooks, which
//! also release the pool's free memory for `torch.cuda.empty_cache()`).

use rmm::adaptor as a;
use rmm::resource as r;
use rmm::{CudaStreamView, MemoryResource, SharedResource};
use std::any::Any;

/// One of the two pools that allocate during capture.
#[derive(Clone, Copy)]
pub(crate) enum CapturePool<'a> {
    Pool(&'a r::PoolMemoryResource<SharedResource>),
    Virtual(&'a r::VirtualPoolMemoryResource),
}

impl CapturePool<'_> {
    /// Marks `stream`, being captured, as allocating from its capture's private memory.
    pub(crate) fn begin(self, stream: CudaStreamView) -> rmm::Result<u64> {
        match self {
            CapturePool::Pool(p) => p.begin_capture(stream),
            CapturePool::Virtual(v) => v.begin_capture(stream),
        }
    }

    /// The capture on `stream` ended.
    pub(crate) fn end(self, stream: CudaStreamView) {
        match self {
            CapturePool::Pool(p) => p.end_capture(stream),
            CapturePool::Virtual(v) => v.end_capture(stream),
        }
    }

    /// Gives capture `id`'s private memory back to the pool.
    pub(crate) fn release(self, id: u64) -> rmm::Result<()> {
        // The Python caller's duty, written in `release_capture`'s docstring: every graph of the
        // capture is destroyed (Python code is outside Rust's checks).
        match self {
            // SAFETY: the caller's duty above.
            CapturePool::Pool(p) => unsafe { p.release_capture(id) },
            // SAFETY: the caller's duty above.
            CapturePool::Virtual(v) => unsafe { v.release_capture(id) },
        }
    }

    /// Gives the pool's wholly free memory back (`release()` of either pool); the bytes.
    pub(crate) fn release_free(self) -> rmm::Result<usize> {
        match self {
            CapturePool::Pool(p) => p.release(),
            CapturePool::Virtual(v) => v.release(),
        }
    }

    /// The ids of the captures whose private memory the pool keeps.
    pub(crate) fn captures(self) -> Vec<u64> {
        match self {
            CapturePool::Pool(p) => p.captures(),
            CapturePool::Virtual(v) => v.captures(),
        }
    }

    /// Bytes of private memory kept for capture `id`.
    pub(crate) fn pool_size(self, id: u64) -> usize {
        match self {
            CapturePool::Pool(p) => p.capture_pool_size(id),
            CapturePool::Virtual(v) => v.capture_pool_size(id),
        }
    }
}

/// `mr` itself when it is a pool or a virtual pool, else the pool under the statistics,
/// tracking, limiting, logging and prefetch adaptors stacked over one (they pass the caller's
/// stream on unchanged); `None` for any other resource.
pub(crate) fn capture_pool_of(mr: &dyn MemoryResource) -> Option<CapturePool<'_>> {
    let mut at: &dyn MemoryResource = mr;
    // Each step goes one adaptor down; a stack is a few deep.
    for _ in 0..16 {
        let any: &dyn Any = at;
        if let Some(p) = any.downcast_ref::<r::PoolMemoryResource<SharedResource>>() {
            return Some(CapturePool::Pool(p));
        }
        if let Some(v) = any.downcast_ref::<r::VirtualPoolMemoryResource>() {
            return Some(CapturePool::Virtual(v));
        }
        at = upstream_of(any)?;
    }
    None
}

/// The upstream of one of the adaptors the Python face makes over a resource.
fn upstream_of(any: &dyn Any) -> Option<&dyn MemoryResource> {
    if let Some(x) = any.downcast_ref::<a::StatisticsResourceAdaptor<SharedResource>>() {
        return Some(&**x.upstream());
    }
    if let Some(x) = any.downcast_ref::<a::TrackingResourceAdaptor<SharedResource>>() {
        return Some(&**x.upstream());
    }
    if let Some(x) = any.downcast_ref::<a::LimitingResourceAdaptor<SharedResource>>() {
        return Some(&**x.upstream());
    }
    if let Some(x) = any.downcast_ref::<a::LoggingResourceAdaptor<SharedResource>>() {
        return Some(&**x.upstream());
    }
    if let Some(x) = any.downcast_ref::<a::PrefetchResourceAdaptor<SharedResource>>() {
        return Some(&**x.upstream());
    }
    None
}
