//! Resources whose every allocation is one driver call: the skeleton they share.
//!
//! [`CudaMemoryResource`](crate::resource::CudaMemoryResource),
//! [`ManagedMemoryResource`](crate::resource::ManagedMemoryResource) and
//! [`PinnedHostMemoryResource`](crate::resource::PinnedHostMemoryResource) differ only in the
//! driver calls that allocate and free and in who may access the memory; a [`DriverAllocation`]
//! names those, and [`DriverBackedResource`] does the rest the same way for all of them.

use crate::error::{Error, Result};
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

/// One kind of driver memory: the calls that allocate and free it and who may access it.
pub trait DriverAllocation: 'static {
    /// The resource's name, as `Debug` prints it.
    const NAME: &'static str;
    /// Whether kernels may access the memory.
    const DEVICE_ACCESSIBLE: bool;
    /// Whether host code may access the memory.
    const HOST_ACCESSIBLE: bool;

    /// Allocates `bytes` (never 0) with one driver call; the driver aligns it to 256 bytes.
    fn allocate(bytes: usize) -> Result<*mut u8>;

    /// Frees `ptr` (never null) with one driver call; the driver reports a pointer it did not hand
    /// out as an error.
    fn free(ptr: *mut u8) -> Result<()>;
}

/// A stateless resource that takes each block from the driver with `A`'s calls. Alignments up to
/// 256 bytes are accepted (what every CUDA allocation call guarantees); zero bytes give null
/// without a driver call; frees while the process exits leave the driver alone, since the memory
/// goes with the process.
///
/// Stateless: any instance may free memory allocated by any other of the same `A`.
pub struct DriverBackedResource<A>(PhantomData<fn() -> A>);

impl<A: DriverAllocation> DriverBackedResource<A> {
    /// A new handle; creating it makes no CUDA call.
    pub const fn new() -> Self {
        DriverBackedResource(PhantomData)
    }
}

impl<A: DriverAllocation> MemoryResource for DriverBackedResource<A> {
    #[inline]
    fn allocate(&self, bytes: usize, alignment: usize, _stream: CudaStreamView) -> Result<*mut u8> {
        cuda_alignment(alignment)?;
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        A::allocate(bytes)
    }

    #[inline]
    fn deallocate(&self, ptr: *mut u8, _bytes: usize, _alignment: usize, _stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        // While the process exits the driver may be gone: the memory goes with the process.
        if crate::process_exit::process_is_exiting() {
            return Ok(());
        }
        A::free(ptr)
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        same_type::<Self>(other)
    }

    fn is_device_accessible(&self) -> bool {
        A::DEVICE_ACCESSIBLE
    }

    fn is_host_accessible(&self) -> bool {
        A::HOST_ACCESSIBLE
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

    #[test]
    fn alignment_up_to_256_is_raised_and_above_is_refused() {
        assert_eq!(cuda_alignment(8), Ok(256));
        assert_eq!(cuda_alignment(256), Ok(256));
        assert_eq!(cuda_alignment(512), Err(Error::BadAlignment { alignment: 512, max: 256 }));
    }
}
