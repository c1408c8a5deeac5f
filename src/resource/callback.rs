//! A resource over two functions (RMM's `callback_memory_resource`).

use crate::error::{Error, Result};
use crate::resource::claims::ClaimTable;
use crate::resource::{same_instance, MemoryResource};
use crate::stream::CudaStreamView;
use std::fmt;

/// Allocates with `allocate(bytes, alignment, stream)` and frees with
/// `deallocate(ptr, bytes, alignment, stream)`: a resource for memory that comes from elsewhere
/// (a foreign allocator, a test double). The functions' user data is what the closures capture.
///
/// The functions must keep the resource contract themselves (aligned, non-overlapping blocks;
/// stream order), which is why [`new`](Self::new) is `unsafe`. As in RMM, zero-byte requests and
/// null frees reach them too, and whatever they return for zero bytes (null included) is handed
/// on; a null pointer returned for a non-empty request becomes [`Error::OutOfMemory`]. The memory is taken as device accessible, as RMM's resource declares
/// it: buffers over this resource copy and fill it through the driver, never on the host.
pub struct CallbackMemoryResource<A, D> {
    allocate: A,
    deallocate: D,
    /// Blocks a suballocator over this resource claimed as its chunks: the functions know
    /// nothing of them.
    claims: ClaimTable,
}

impl<A, D> fmt::Debug for CallbackMemoryResource<A, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallbackMemoryResource").finish_non_exhaustive()
    }
}

impl<A, D> CallbackMemoryResource<A, D>
where
    A: Fn(usize, usize, CudaStreamView) -> Result<*mut u8> + Send + Sync + 'static,
    D: Fn(*mut u8, usize, usize, CudaStreamView) -> Result<()> + Send + Sync + 'static,
{
    /// A resource that calls `allocate` and `deallocate`.
    ///
    /// # Safety
    /// The functions keep [`MemoryResource`]'s contract for this resource: a pointer `allocate`
    /// returns for `bytes > 0` is null (an error) or the start of `bytes` bytes of device-accessible
    /// memory aligned to at least `max(alignment, 256)`, owned by no one else until it is passed
    /// to `deallocate` (which frees only such pointers), and reused only in stream order.
    pub unsafe fn new(allocate: A, deallocate: D) -> Self {
        CallbackMemoryResource { allocate, deallocate, claims: ClaimTable::new() }
    }
}

// SAFETY: what the functions return is what `new`'s caller promised; a null pointer for a
// non-empty request is refused here.
unsafe impl<A, D> MemoryResource for CallbackMemoryResource<A, D>
where
    A: Fn(usize, usize, CudaStreamView) -> Result<*mut u8> + Send + Sync + 'static,
    D: Fn(*mut u8, usize, usize, CudaStreamView) -> Result<()> + Send + Sync + 'static,
{
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        // Zero bytes reach the function too, as in RMM; null is a fine answer for them.
        let ptr = (self.allocate)(bytes, alignment, stream)?;
        if ptr.is_null() && bytes != 0 {
            return Err(Error::out_of_memory(bytes, "the allocate callback returned null"));
        }
        Ok(ptr)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        // A null free reaches the function too, as in RMM.
        self.claims.refuse_claimed(ptr)?;
        (self.deallocate)(ptr, bytes, alignment, stream)
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        same_instance(self, other)
    }

    crate::resource::forward_claims!(claims);
}
