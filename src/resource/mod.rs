//! The memory resource trait and the resources built on it.
//!
//! A resource hands out memory in stream order: a block returned by `allocate(bytes, align, s)` may be
//! used by work enqueued on `s` after the call, and a block passed to `deallocate(.., s)` may be reused
//! once the work enqueued on `s` before the call has finished.

use crate::error::{Error, Result};
use crate::stream::CudaStreamView;
use std::any::Any;
use std::sync::Arc;

/// The two capability queries of a `MemoryResource` impl, written once: `accessibility!(upstream)`
/// forwards both to the field named (a resource whose blocks are carved from its upstream's
/// memory, or an adaptor), `accessibility!(device: D, host: H)` answers the constants given.
macro_rules! accessibility {
    ($upstream:ident) => {
        fn is_device_accessible(&self) -> bool {
            self.$upstream.is_device_accessible()
        }

        fn is_host_accessible(&self) -> bool {
            self.$upstream.is_host_accessible()
        }
    };
    (device: $device:expr, host: $host:expr) => {
        fn is_device_accessible(&self) -> bool {
            $device
        }

        fn is_host_accessible(&self) -> bool {
            $host
        }
    };
}
pub(crate) use accessibility;

pub mod arena;
pub mod binning;
pub mod callback;
mod claims;
pub mod cuda;
pub mod cuda_async;
pub mod cuda_async_managed;
pub mod cuda_async_view;
mod cuda_event_order;
mod driver_backed;
pub mod fixed_size;
pub mod host;
mod live_blocks;
pub mod managed;
pub mod pinned_host;
pub mod pool;
pub mod sam_headroom;
pub mod segments;
pub mod system;
pub mod upstream_check;
pub mod virtual_pool;

pub use arena::ArenaMemoryResource;
pub use binning::BinningMemoryResource;
pub use callback::CallbackMemoryResource;
pub use claims::ClaimTable;
pub use cuda::CudaMemoryResource;
pub use cuda_async::CudaAsyncMemoryResource;
pub use cuda_async_managed::CudaAsyncManagedMemoryResource;
pub use cuda_async_view::{CudaAsyncViewMemoryResource, RawMemoryPool};
pub use cuda_event_order::CudaEventOrder;
pub use driver_backed::{DriverAllocation, DriverBackedResource};
pub use fixed_size::FixedSizeMemoryResource;
pub use host::HostMemoryResource;
pub use live_blocks::AddressHasher;
pub use managed::ManagedMemoryResource;
pub use pinned_host::PinnedHostMemoryResource;
pub use pool::PoolMemoryResource;
pub use sam_headroom::SamHeadroomMemoryResource;
pub use segments::{BlockState, MemorySegment, SegmentBlock};
pub use system::SystemMemoryResource;
pub use virtual_pool::VirtualPoolMemoryResource;

/// Alignment every resource guarantees when asked for less (RMM's `CUDA_ALLOCATION_ALIGNMENT`).
pub const DEFAULT_ALIGNMENT: usize = 256;

/// The largest alignment the resources of this crate accept.
pub const MAX_ALIGNMENT: usize = 1 << 30;

/// A stream-ordered memory resource.
///
/// Contract for callers: free a block with the same size and alignment it was allocated with, on a
/// stream whose work ordering makes the block's last use finish first. Resources detect a broken
/// contract where they can and return [`Error::Misuse`] without changing any state.
///
/// Zero-byte requests return a null pointer without touching any upstream, and freeing a null
/// pointer is a no-op.
///
/// # Safety
///
/// Safe code writes through the pointers a resource hands out (a
/// [`DeviceBuffer`](crate::buffer::DeviceBuffer) fills and copies its memory, on the host when the
/// resource says it is not device accessible), so an implementation promises, for as long as
/// the block is not freed:
///
/// 1. `allocate(bytes, alignment, _)` (and `allocate_sync`, and a `Some` of
///    `try_allocate_immediately`) that succeeds with `bytes > 0` returns a non-null pointer to
///    `bytes` bytes aligned to at least `max(alignment, 256)`, not overlapping any other block
///    it has handed out and not yet taken back, nor any memory it does not own;
/// 2. the block is accessible as [`is_device_accessible`](Self::is_device_accessible) and
///    [`is_host_accessible`](Self::is_host_accessible) say: host code may read and write it
///    when `is_host_accessible()` or `!is_device_accessible()` (host memory), kernels and the
///    driver's copies when `is_device_accessible()`; both answers never change;
/// 3. a block is handed out again only after it was freed (through `self` or a resource for
///    which [`is_equal`](Self::is_equal) is true), in stream order;
/// 4. `deallocate` never releases memory it did not hand out, or hands out in another block;
/// 5. a block claimed with [`claim`](Self::claim) is not released by `deallocate` (through `self`
///    or any resource equal to it) until [`unclaim`](Self::unclaim): a resource that can release
///    the memory it hands out records claims and refuses such a free with
///    [`Misuse::ClaimedBlock`](crate::error::Misuse::ClaimedBlock).
///
/// Resources that wrap another keep these promises by forwarding what it returns; resources that
/// forward pointers from user code (a callback) put the promise on whoever supplies that code,
/// through an `unsafe` constructor.
///
/// ```compile_fail,E0200
/// use rmm::{CudaStreamView, MemoryResource, Result};
///
/// struct Mine;
///
/// // Rejected: without `unsafe`, safe code could hand any address to a buffer.
/// impl MemoryResource for Mine {
///     fn allocate(&self, _: usize, _: usize, _: CudaStreamView) -> Result<*mut u8> {
///         Ok(0x1000 as *mut u8)
///     }
///     fn deallocate(&self, _: *mut u8, _: usize, _: usize, _: CudaStreamView) -> Result<()> {
///         Ok(())
///     }
/// }
/// ```
///
/// An implementation says why it keeps the contract:
///
/// ```
/// use rmm::resource::HostMemoryResource;
/// use rmm::{CudaStreamView, MemoryResource, Result};
///
/// /// Counts the blocks it passes through.
/// struct Counting {
///     inner: HostMemoryResource,
///     count: std::sync::atomic::AtomicUsize,
/// }
///
/// // SAFETY: every block comes from `inner` unchanged and goes back to it; the accessibility
/// // answers are `inner`'s.
/// unsafe impl MemoryResource for Counting {
///     fn allocate(&self, bytes: usize, alignment: usize, s: CudaStreamView) -> Result<*mut u8> {
///         let p = self.inner.allocate(bytes, alignment, s)?;
///         self.count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
///         Ok(p)
///     }
///     fn deallocate(&self, p: *mut u8, bytes: usize, alignment: usize, s: CudaStreamView) -> Result<()> {
///         self.inner.deallocate(p, bytes, alignment, s)
///     }
///     fn is_device_accessible(&self) -> bool {
///         self.inner.is_device_accessible()
///     }
///     fn is_host_accessible(&self) -> bool {
///         self.inner.is_host_accessible()
///     }
/// }
/// ```
pub unsafe trait MemoryResource: Any + Send + Sync {
    /// Allocates `bytes` aligned to `alignment` (a power of two; values below 256 give 256), usable
    /// by work on `stream` enqueued after this call.
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8>;

    /// Returns a block; it is reused only after the work on `stream` enqueued before this call.
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()>;

    /// Allocates for use on the legacy default stream (RMM's `allocate_sync`).
    fn allocate_sync(&self, bytes: usize, alignment: usize) -> Result<*mut u8> {
        self.allocate(bytes, alignment, CudaStreamView::DEFAULT)
    }

    /// Frees on the legacy default stream (RMM's `deallocate_sync`).
    fn deallocate_sync(&self, ptr: *mut u8, bytes: usize, alignment: usize) -> Result<()> {
        self.deallocate(ptr, bytes, alignment, CudaStreamView::DEFAULT)
    }

    /// Allocates only where that cannot wait: no lock another thread holds, no CUDA call, no
    /// upstream. `None` otherwise (and for every error), with nothing handed out; then call
    /// [`allocate`](Self::allocate). For callers that hold a lock other threads need while they
    /// allocate, such as Python's GIL: they keep it on the common path and release it only around
    /// calls that may wait. Resources without such a path return `None`; the statistics, tracking
    /// and limiting adaptors forward it to their upstream, counting only what it serves.
    #[inline]
    fn try_allocate_immediately(&self, _bytes: usize, _alignment: usize, _stream: CudaStreamView) -> Option<*mut u8> {
        None
    }

    /// Frees only where that cannot wait (as [`try_allocate_immediately`]); false otherwise,
    /// with nothing changed: then call [`deallocate`](Self::deallocate), which also reports misuse.
    ///
    /// [`try_allocate_immediately`]: Self::try_allocate_immediately
    #[inline]
    fn try_deallocate_immediately(
        &self,
        _ptr: *mut u8,
        _bytes: usize,
        _alignment: usize,
        _stream: CudaStreamView,
    ) -> bool {
        false
    }

    /// True when memory from `self` may be freed through `other` and the other way round. The
    /// default is identity (same address and same type: an adaptor's first field may share its
    /// address); stateless resources compare equal to every instance of their type.
    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        std::ptr::addr_eq(self as *const Self, other as *const dyn MemoryResource)
            && Any::type_id(self) == Any::type_id(other)
    }

    /// Whether kernels may access the memory.
    fn is_device_accessible(&self) -> bool {
        true
    }

    /// Whether host code may access the memory.
    fn is_host_accessible(&self) -> bool {
        false
    }

    /// The segments of a pool and the blocks that tile them (see [`segments`]), read by a cold
    /// walk under the pool's locks; `None` for a resource that keeps no such structure. Adaptors
    /// answer their upstream's, so a snapshot of any stack of adaptors over a pool sees the pool.
    fn memory_segments(&self) -> Option<Vec<MemorySegment>> {
        None
    }

    /// Marks `ptr`, a live block of `bytes` that this resource handed out, as lent whole to a
    /// resource that carves blocks out of it (a pool's, an arena's or a fixed-size resource's
    /// chunk): until [`unclaim`](Self::unclaim), a `deallocate` of it through `self` or a resource
    /// equal to it is refused with [`Misuse::ClaimedBlock`](crate::error::Misuse::ClaimedBlock),
    /// so safe code cannot free memory the claimant still hands out. The claimant calls this right
    /// after taking the chunk and `unclaim` right before giving it back. Adaptors forward both to
    /// their upstream. The default records nothing: right for a resource that never releases
    /// memory on `deallocate` (promise 5 above); every other implementation overrides both.
    fn claim(&self, _ptr: *mut u8, _bytes: usize) -> Result<()> {
        Ok(())
    }

    /// Ends the claim [`claim`](Self::claim) made on `ptr`, so that `deallocate` frees it again;
    /// [`Misuse::UnknownPointer`](crate::error::Misuse::UnknownPointer) when `ptr` is not claimed.
    fn unclaim(&self, _ptr: *mut u8, _bytes: usize) -> Result<()> {
        Ok(())
    }
}

/// The two claim methods of a `MemoryResource` impl that forwards them to the field named: an
/// adaptor's upstream, whose blocks it hands out, or the [`ClaimTable`] a resource keeps its
/// claims in (its frees check that table first).
macro_rules! forward_claims {
    ($field:ident) => {
        fn claim(&self, ptr: *mut u8, bytes: usize) -> $crate::error::Result<()> {
            self.$field.claim(ptr, bytes)
        }

        fn unclaim(&self, ptr: *mut u8, bytes: usize) -> $crate::error::Result<()> {
            self.$field.unclaim(ptr, bytes)
        }
    };
}
pub(crate) use forward_claims;

/// A shared, type-erased resource: what the per-device table stores and what adaptors may share.
pub type SharedResource = Arc<dyn MemoryResource>;

// SAFETY: every call goes to the shared resource, whose promises an `Arc` handle inherits.
unsafe impl<R: MemoryResource + ?Sized> MemoryResource for Arc<R> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        (**self).allocate(bytes, alignment, stream)
    }
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        (**self).deallocate(ptr, bytes, alignment, stream)
    }
    fn allocate_sync(&self, bytes: usize, alignment: usize) -> Result<*mut u8> {
        (**self).allocate_sync(bytes, alignment)
    }
    #[inline]
    fn try_allocate_immediately(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Option<*mut u8> {
        (**self).try_allocate_immediately(bytes, alignment, stream)
    }
    #[inline]
    fn try_deallocate_immediately(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> bool {
        (**self).try_deallocate_immediately(ptr, bytes, alignment, stream)
    }
    fn deallocate_sync(&self, ptr: *mut u8, bytes: usize, alignment: usize) -> Result<()> {
        (**self).deallocate_sync(ptr, bytes, alignment)
    }
    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        // Two handles to one resource are equal; otherwise the inner resource decides.
        match (other as &dyn Any).downcast_ref::<Arc<R>>() {
            Some(o) if Arc::ptr_eq(self, o) => true,
            _ => (**self).is_equal(other),
        }
    }
    fn is_device_accessible(&self) -> bool {
        (**self).is_device_accessible()
    }
    fn is_host_accessible(&self) -> bool {
        (**self).is_host_accessible()
    }
    fn memory_segments(&self) -> Option<Vec<MemorySegment>> {
        (**self).memory_segments()
    }
    fn claim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        (**self).claim(ptr, bytes)
    }
    fn unclaim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        (**self).unclaim(ptr, bytes)
    }
}

/// Checks an alignment argument and returns the effective alignment (at least 256).
#[inline]
pub fn effective_alignment(alignment: usize) -> Result<usize> {
    if alignment != 0 && alignment.is_power_of_two() && alignment <= MAX_ALIGNMENT {
        Ok(alignment.max(DEFAULT_ALIGNMENT))
    } else {
        Err(Error::BadAlignment { alignment, max: MAX_ALIGNMENT })
    }
}

/// `bytes` rounded up to `alignment`, a power of two; `None` on overflow. A mask rather than
/// `checked_next_multiple_of`, which divides: the compiler cannot see that a run-time alignment is
/// a power of two. For a constant alignment `next_multiple_of` is as cheap.
#[inline]
pub(crate) fn align_up(bytes: usize, alignment: usize) -> Option<usize> {
    bytes.checked_add(alignment - 1).map(|n| n & !(alignment - 1))
}

/// True when `other` is of type `T`: the equality of stateless resources.
pub fn same_type<T: MemoryResource>(other: &dyn MemoryResource) -> bool {
    (other as &dyn Any).is::<T>()
}

/// Identity: true only when `other` is `this` very resource, the equality of a resource that keeps
/// state about the memory it handed out. The type check matters because an adaptor's upstream may
/// live at the adaptor's own address (first field).
pub(crate) fn same_instance<T: MemoryResource>(this: &T, other: &dyn MemoryResource) -> bool {
    std::ptr::addr_eq(this as *const T, other as *const dyn MemoryResource) && same_type::<T>(other)
}

#[cfg(test)]
mod tests {
    use super::align_up;

    #[test]
    fn align_up_rounds_and_detects_overflow() {
        assert_eq!(align_up(0, 256), Some(0));
        assert_eq!(align_up(1, 256), Some(256));
        assert_eq!(align_up(256, 256), Some(256));
        assert_eq!(align_up(257, 256), Some(512));
        assert_eq!(align_up(usize::MAX - 255, 256), Some(usize::MAX - 255));
        assert_eq!(align_up(usize::MAX - 10, 256), None);
        // Agrees with the standard library wherever both answer.
        for bytes in [0, 1, 255, 256, 4097, 1 << 40] {
            for alignment in [256, 4096, 1 << 30] {
                assert_eq!(align_up(bytes, alignment), bytes.checked_next_multiple_of(alignment));
            }
        }
    }
}
