//! Serialises every call of its upstream (RMM's `thread_safe_resource_adaptor`).

use crate::adaptor::zero_byte_allocation;
use crate::error::Result;
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use parking_lot::Mutex;

/// Holds one lock around every allocation and free of the upstream, so that an upstream that is
/// not safe to call from several threads at once (a C++ resource written for one thread) may be
/// shared. The resources of this crate are thread-safe already and do not need it.
#[derive(Debug)]
pub struct ThreadSafeResourceAdaptor<U> {
    upstream: U,
    lock: Mutex<()>,
}

impl<U: MemoryResource> ThreadSafeResourceAdaptor<U> {
    /// Wraps `upstream`.
    pub fn new(upstream: U) -> Self {
        ThreadSafeResourceAdaptor { upstream, lock: Mutex::new(()) }
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }
}

// SAFETY: blocks come from the upstream unchanged and go back to it; the accessibility answers
// are the upstream's (the lock only serialises the calls).
unsafe impl<U: MemoryResource> MemoryResource for ThreadSafeResourceAdaptor<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        if bytes == 0 {
            return zero_byte_allocation(alignment);
        }
        let _guard = self.lock.lock();
        self.upstream.allocate(bytes, alignment, stream)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        let _guard = self.lock.lock();
        self.upstream.deallocate(ptr, bytes, alignment, stream)
    }

    adaptor_identity_and_access!(upstream);
}
