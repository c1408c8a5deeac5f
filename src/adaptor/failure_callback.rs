//! Calls back on out-of-memory and retries if asked to (RMM's `failure_callback_resource_adaptor`).

use crate::adaptor::zero_byte_allocation;
use crate::error::Result;
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use std::fmt;

/// On an [`Error::OutOfMemory`](crate::Error::OutOfMemory) from the upstream, calls
/// `callback(bytes)`: `true` retries the allocation, `false` returns the error. Other errors pass
/// through without calling back; frees are forwarded unchanged.
///
/// The callback typically frees memory (drops a cache, spills) before returning `true`. It is
/// called again after every failed retry, so a callback that always returns `true` without freeing
/// anything loops forever: give up (return `false`) after some attempts. It may run on any thread
/// that allocates, concurrently with itself, and must not allocate through this same adaptor in a
/// way that needs the memory being waited for.
pub struct FailureCallbackResourceAdaptor<U, F> {
    upstream: U,
    callback: F,
}

impl<U: fmt::Debug, F> fmt::Debug for FailureCallbackResourceAdaptor<U, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FailureCallbackResourceAdaptor").field("upstream", &self.upstream).finish_non_exhaustive()
    }
}

impl<U, F> FailureCallbackResourceAdaptor<U, F>
where
    U: MemoryResource,
    F: Fn(usize) -> bool + Send + Sync + 'static,
{
    /// Wraps `upstream`, calling `callback(bytes)` when an allocation of `bytes` runs out of memory.
    pub fn new(upstream: U, callback: F) -> Self {
        FailureCallbackResourceAdaptor { upstream, callback }
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }
}

// SAFETY: blocks come from the upstream unchanged and go back to it (the callback only decides
// whether to retry); the accessibility answers are the upstream's.
unsafe impl<U, F> MemoryResource for FailureCallbackResourceAdaptor<U, F>
where
    U: MemoryResource,
    F: Fn(usize) -> bool + Send + Sync + 'static,
{
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        if bytes == 0 {
            return zero_byte_allocation(alignment);
        }
        loop {
            match self.upstream.allocate(bytes, alignment, stream) {
                Err(e) if e.is_out_of_memory() && (self.callback)(bytes) => continue,
                result => return result,
            }
        }
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        self.upstream.deallocate(ptr, bytes, alignment, stream)
    }

    adaptor_identity_and_access!(upstream);
}
