//! Resources whose every allocation is one driver call: the skeleton they share.
//!
//! [`CudaMemoryResource`](crate::resource::CudaMemoryResource),
//! [`ManagedMemoryResource`](crate::resource::ManagedMemoryResource) and
//! [`PinnedHostMemoryResource`](crate::resource::PinnedHostMemoryResource) differ only in the
//! driver calls that allocate and free and in who may access the memory; a [`DriverAllocation`]
//! names those, and [`DriverBackedResource`] does the rest the same way for all of them.

use crate::error::{Error, Result};
use crate::resource::live_blocks::LiveBlocks;
use crate::resource::{effective_alignment, same_type, MemoryResource, DEFAULT_ALIGNMENT};
use crate::stream::CudaStreamView;
use std::fmt;
use std::marker::PhantomData;

/// The alignment every CUDA allocation call guarantees, and so the most the CUDA-backed resources
/// can promise without over-allocating.
pub(crate) const CUDA_ALIGNMENT: usize = DEFAULT_ALIGNMENT;

/// Validates `alignment` for a resource whose memory comes straight from a CUDA allocation call:
/// a power of two up to [`CUDA_ALIGNMENT`]; returns the effective alignment.
#[inline]
pub(crate) fn cuda_alignment(alignment: usize) -> Result<usize> {
    match effective_alignment(alignment) {
        Ok(a) if a <= CUDA_ALIGNMENT => Ok(a),
        // Report the limit that actually applies here, not the crate-wide maximum.
        _ => Err(Error::BadAlignment { alignment, max: CUDA_ALIGNMENT }),
    }
}

/// Keeps [`DriverAllocation`] to this crate's kinds: `DriverBackedResource` writes through what
/// `allocate` returns, so a kind outside the crate would be a way to hand safe code any address.
pub(crate) mod sealed {
    use super::LiveBlocks;

    /// A kind of driver memory of this crate, with its process-wide table of live blocks.
    pub trait Sealed {
        /// The blocks of this kind handed out and not yet freed, by any instance.
        fn live() -> &'static LiveBlocks;
    }
}

/// Makes `$kind` a sealed driver kind with a table of live blocks of its own.
macro_rules! sealed_driver_kind {
    ($kind:ty) => {
        impl $crate::resource::driver_backed::sealed::Sealed for $kind {
            fn live() -> &'static $crate::resource::live_blocks::LiveBlocks {
                static LIVE: $crate::resource::live_blocks::LiveBlocks =
                    $crate::resource::live_blocks::LiveBlocks::new();
                &LIVE
            }
        }
    };
}
pub(crate) use sealed_driver_kind;

/// One kind of driver memory: the calls that allocate and free it and who may access it. Sealed:
/// implemented by [`DeviceMemory`](crate::resource::cuda::DeviceMemory),
/// [`ManagedMemory`](crate::resource::managed::ManagedMemory) and
/// [`PinnedHostMemory`](crate::resource::pinned_host::PinnedHostMemory) only.
pub trait DriverAllocation: sealed::Sealed + 'static {
    /// The resource's name, as `Debug` prints it.
    const NAME: &'static str;
    /// Whether kernels may access the memory.
    const DEVICE_ACCESSIBLE: bool;
    /// Whether host code may access the memory.
    const HOST_ACCESSIBLE: bool;

    /// Allocates `bytes` (never 0) with one driver call; the driver aligns it to 256 bytes.
    fn allocate(bytes: usize) -> Result<*mut u8>;

    /// Frees `ptr` with one driver call.
    ///
    /// # Safety
    /// `ptr` is a live block of this kind (from [`allocate`](Self::allocate), never null), freed
    /// once: the driver frees any block it made, whoever holds it.
    unsafe fn free(ptr: *mut u8) -> Result<()>;
}

/// A resource that takes each block from the driver with `A`'s calls. Alignments up to 256 bytes
/// are accepted (what every CUDA allocation call guarantees); zero bytes give null without a
/// driver call; frees while the process exits leave the driver alone, since the memory goes with
/// the process.
///
/// All instances of one `A` are equal: any may free memory allocated by any other. They share one
/// process-wide record of the blocks handed out, so a free of a pointer no instance handed out
/// (another resource's, or a pool's block carved from a chunk of this kind), or with another size,
/// is [`Misuse`](crate::error::Misuse) and never reaches the driver; so is a free of a block a
/// suballocator claimed as a chunk (a pool's, even through a block that spans the whole chunk).
pub struct DriverBackedResource<A>(PhantomData<fn() -> A>);

impl<A: DriverAllocation> DriverBackedResource<A> {
    /// A new handle; creating it makes no CUDA call.
    pub const fn new() -> Self {
        DriverBackedResource(PhantomData)
    }
}

// SAFETY: every block is one allocation of the driver, 256-byte aligned, of at least the bytes
// asked, accessible as `A` declares; the live table frees only what this kind handed out, once,
// with the size it was handed out with (`DriverAllocation` is sealed: only this crate's kinds).
unsafe impl<A: DriverAllocation> MemoryResource for DriverBackedResource<A> {
    #[inline]
    fn allocate(&self, bytes: usize, alignment: usize, _stream: CudaStreamView) -> Result<*mut u8> {
        cuda_alignment(alignment)?;
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        let ptr = A::allocate(bytes)?;
        A::live().insert(ptr as usize, bytes);
        Ok(ptr)
    }

    // The pointer is only handed to the driver once the live table proves this kind handed it out
    // with this size, so a safe signature is sound.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    #[inline]
    fn deallocate(&self, ptr: *mut u8, bytes: usize, _alignment: usize, _stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        A::live().take(ptr as usize, bytes)?;
        // While the process exits the driver may be gone: the memory goes with the process.
        if crate::process_exit::process_is_exiting() {
            return Ok(());
        }
        // A free the driver refused leaves the block live, to be freed again.
        // SAFETY: the live table just gave `ptr` up: a block of this kind handed out and not yet
        // freed, so it is freed once, here.
        unsafe { A::free(ptr) }.inspect_err(|_| A::live().put_back(ptr as usize, bytes))
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        same_type::<Self>(other)
    }

    crate::resource::accessibility!(device: A::DEVICE_ACCESSIBLE, host: A::HOST_ACCESSIBLE);

    fn claim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        Ok(A::live().set_claimed(ptr as usize, bytes, true)?)
    }

    fn unclaim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        Ok(A::live().set_claimed(ptr as usize, bytes, false)?)
    }
}

// Written out rather than derived: derives would require `A` itself to be Clone, Default, Debug.
impl<A> Clone for DriverBackedResource<A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A> Copy for DriverBackedResource<A> {}

impl<A: DriverAllocation> Default for DriverBackedResource<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: DriverAllocation> fmt::Debug for DriverBackedResource<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(A::NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{CudaMemoryResource, ManagedMemoryResource, PinnedHostMemoryResource};

    #[test]
    fn debug_prints_the_resource_name() {
        assert_eq!(format!("{:?}", CudaMemoryResource::new()), "CudaMemoryResource");
        assert_eq!(format!("{:#?}", ManagedMemoryResource::default()), "ManagedMemoryResource");
        assert_eq!(format!("{:?}", PinnedHostMemoryResource::new().clone()), "PinnedHostMemoryResource");
    }

    #[test]
    fn is_send_sync_and_copy() {
        fn assert_traits<T: Send + Sync + Copy + 'static>() {}
        assert_traits::<CudaMemoryResource>();
        assert_traits::<ManagedMemoryResource>();
        assert_traits::<PinnedHostMemoryResource>();
    }

    /// Host memory behind the driver-backed skeleton, so its bookkeeping runs without a GPU; counts
    /// the frees that reach the "driver".
    enum FakeDriver {}

    static FAKE_FREES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    sealed_driver_kind!(FakeDriver);

    impl DriverAllocation for FakeDriver {
        const NAME: &'static str = "FakeDriver";
        const DEVICE_ACCESSIBLE: bool = false;
        const HOST_ACCESSIBLE: bool = true;

        fn allocate(bytes: usize) -> Result<*mut u8> {
            let mut p = std::ptr::null_mut();
            // SAFETY: a valid out pointer; 256 is a power of two and a multiple of the pointer size.
            if unsafe { libc::posix_memalign(&mut p, CUDA_ALIGNMENT, bytes) } != 0 {
                return Err(Error::out_of_memory(bytes, "posix_memalign"));
            }
            Ok(p.cast())
        }

        unsafe fn free(ptr: *mut u8) -> Result<()> {
            FAKE_FREES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            // SAFETY: a live block of this kind (the contract), which came from posix_memalign.
            unsafe { libc::free(ptr.cast()) };
            Ok(())
        }
    }

    #[test]
    fn a_pool_block_freed_through_its_upstream_kind_is_refused_and_the_pool_stays_intact() {
        use crate::error::Misuse;
        use crate::resource::PoolMemoryResource;
        let s = CudaStreamView::DEFAULT;
        let pool = PoolMemoryResource::new(DriverBackedResource::<FakeDriver>::new(), 1 << 20, None).unwrap();
        let p = pool.allocate(256, 256, s).unwrap();
        // Another instance of the upstream's kind: equal to the pool's upstream, so it could free
        // the chunk; the block is not one of its blocks.
        let other = DriverBackedResource::<FakeDriver>::new();
        let refused = other.deallocate(p, 256, 256, s);
        assert!(
            matches!(refused, Err(Error::Misuse(Misuse::WrongSize { .. } | Misuse::UnknownPointer { .. }))),
            "{refused:?}"
        );
        assert_eq!(FAKE_FREES.load(std::sync::atomic::Ordering::SeqCst), 0, "the chunk reached the driver");
        // The pool still owns its chunk: its block is usable and goes back to it.
        // SAFETY: p is a live 256-byte block of host memory.
        unsafe { p.write_bytes(0x5a, 256) };
        pool.deallocate(p, 256, 256, s).unwrap();
        pool.check_invariants().unwrap();
        assert_eq!(<FakeDriver as sealed::Sealed>::live().len(), 1, "the pool's one chunk");
        drop(pool);
        assert_eq!(<FakeDriver as sealed::Sealed>::live().len(), 0);
        assert_eq!(FAKE_FREES.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    /// A driver whose every allocating call fails with a CUDA error other than out of memory.
    enum RefusingDriver {}

    sealed_driver_kind!(RefusingDriver);

    impl DriverAllocation for RefusingDriver {
        const NAME: &'static str = "RefusingDriver";
        const DEVICE_ACCESSIBLE: bool = true;
        const HOST_ACCESSIBLE: bool = false;

        fn allocate(bytes: usize) -> Result<*mut u8> {
            Err(Error::CudaAlloc {
                requested: bytes,
                call: "cuMemAlloc",
                code: 101,
                name: "CUDA_ERROR_INVALID_DEVICE".into(),
            })
        }

        unsafe fn free(_ptr: *mut u8) -> Result<()> {
            unreachable!("nothing was handed out")
        }
    }

    #[test]
    fn a_failed_allocating_call_is_passed_on_and_records_nothing() {
        let r = DriverBackedResource::<RefusingDriver>::new();
        let e = r.allocate(4096, 256, CudaStreamView::DEFAULT).unwrap_err();
        assert!(matches!(e, Error::CudaAlloc { requested: 4096, ref name, .. } if name == "CUDA_ERROR_INVALID_DEVICE"));
        assert_eq!(<RefusingDriver as sealed::Sealed>::live().len(), 0);
    }

    #[test]
    fn alignment_up_to_256_is_raised_and_above_is_refused() {
        assert_eq!(cuda_alignment(8), Ok(256));
        assert_eq!(cuda_alignment(256), Ok(256));
        assert_eq!(cuda_alignment(512), Err(Error::BadAlignment { alignment: 512, max: 256 }));
    }
}
