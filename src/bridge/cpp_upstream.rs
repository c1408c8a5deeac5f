//! A C++ `cuda::mr` resource seen as a Rust [`MemoryResource`], so that any CCCL resource (a user's
//! struct, a `device_async_resource_ref`, an `any_resource`) can be the upstream of a Rust pool.

use super::ffi::{self, ErrorKind, Outcome};
use crate::error::{Error, Result};
use crate::resource::{same_type, MemoryResource};
use crate::stream::CudaStreamView;

// SAFETY: the C++ side wraps a `cuda::mr` resource, which RMM requires to be usable from any thread
// (as RMM's own resources are); the wrapper itself is immutable after construction.
unsafe impl Send for ffi::CppResource {}
// SAFETY: as above; every method takes `const&`.
unsafe impl Sync for ffi::CppResource {}

/// Owns one C++ resource wrapper.
pub struct CppUpstream {
    inner: cxx::UniquePtr<ffi::CppResource>,
}

impl std::fmt::Debug for CppUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CppUpstream").finish_non_exhaustive()
    }
}

impl CppUpstream {
    /// Wraps `inner`; `None` when the pointer is null.
    pub(crate) fn new(inner: cxx::UniquePtr<ffi::CppResource>) -> Option<Self> {
        if inner.is_null() {
            None
        } else {
            Some(CppUpstream { inner })
        }
    }

    fn resource(&self) -> &ffi::CppResource {
        // Checked non-null in `new`, never reset afterwards.
        self.inner.as_ref().expect("CppUpstream holds a non-null resource")
    }
}

/// Turns the outcome of a C++ `allocate` into a Rust error. `std::bad_alloc` of any kind counts as
/// out of memory, so a pool backs off and reports it as such.
pub(super) fn to_error(out: Outcome, bytes: usize) -> Error {
    let reason = format!("the C++ upstream resource threw: {}", out.message);
    match out.kind {
        ErrorKind::OutOfMemory | ErrorKind::BadAlloc => Error::OutOfMemory { requested: bytes, pool: None, reason },
        ErrorKind::Cuda => Error::Cuda { call: "C++ upstream allocate", code: 0, name: out.message },
        _ => Error::InvalidArgument(reason),
    }
}

// SAFETY: only the C++ face makes this type, from a C++ resource; what its `allocate` returns is
// that resource's promise under the `cuda::mr` concept (as RMM trusts its upstreams), which C++
// code makes outside Rust's checks. It reports device accessibility, as every RMM resource.
unsafe impl MemoryResource for CppUpstream {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        let mut out = Outcome::ok(0);
        self.resource().allocate(bytes, alignment, stream.handle(), &mut out);
        if out.is_ok() {
            Ok(out.ptr as *mut u8)
        } else {
            Err(to_error(out, bytes))
        }
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if !ptr.is_null() {
            self.resource().deallocate(ptr as usize, bytes, alignment, stream.handle());
        }
        Ok(())
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        same_type::<Self>(other)
            && (other as &dyn std::any::Any)
                .downcast_ref::<Self>()
                .is_some_and(|o| self.resource().equals(o.resource()))
    }

    fn is_host_accessible(&self) -> bool {
        self.resource().host_accessible()
    }
}
