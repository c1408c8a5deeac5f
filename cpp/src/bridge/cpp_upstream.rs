//! A C++ `cuda::mr` resource seen as a Rust [`MemoryResource`], so that any CCCL resource (a user's
//! struct, a `device_async_resource_ref`, an `any_resource`) can be the upstream of a Rust pool.

use super::ffi::{self, ErrorKind, Outcome};
use parking_lot::{ReentrantMutex, ReentrantMutexGuard};
use rmm::error::{Error, Result};
use rmm::resource::upstream_check::refuse_null;
use rmm::resource::MemoryResource;
use rmm::stream::CudaStreamView;

// SAFETY: the C++ object (a `cpp_resource` holding a `shared_ptr` to the user's resource) is tied
// to no thread: it may be called from, and destroyed on, any thread as long as one call runs at a
// time. Rust reaches it only through `CppUpstream`, which holds it under a lock (the type is not
// `Sync`: a `cuda::mr` resource need not be thread-safe, as RMM's `thread_safe_resource_adaptor`
// shows, and RMM's pool calls its upstream under one lock).
unsafe impl Send for ffi::CppResource {}

/// Owns one C++ resource wrapper and lets one thread at a time call into it: a pool grows its
/// shards under separate locks, so without this a user's resource that is not thread-safe would
/// be entered from several threads at once. Only the cold paths of a suballocator reach here. The
/// lock is reentrant: a resource that calls back into this one on its own thread does not
/// deadlock.
pub struct CppUpstream {
    inner: ReentrantMutex<cxx::UniquePtr<ffi::CppResource>>,
    /// Read once at construction: `host_accessible` is a constant of the wrapped resource.
    host_accessible: bool,
    /// Blocks a suballocator over this resource claimed as its chunks: the C++ resource knows
    /// nothing of them.
    claims: rmm::resource::ClaimTable,
}

impl std::fmt::Debug for CppUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CppUpstream").finish_non_exhaustive()
    }
}

impl CppUpstream {
    /// Wraps `inner`; `None` when the pointer is null.
    pub(crate) fn new(inner: cxx::UniquePtr<ffi::CppResource>) -> Option<Self> {
        let host_accessible = inner.as_ref()?.host_accessible();
        Some(CppUpstream {
            inner: ReentrantMutex::new(inner),
            host_accessible,
            claims: rmm::resource::ClaimTable::new(),
        })
    }

    /// The resource, locked for one call.
    fn lock(&self) -> Locked<'_> {
        Locked(self.inner.lock())
    }
}

/// A locked C++ resource.
struct Locked<'a>(ReentrantMutexGuard<'a, cxx::UniquePtr<ffi::CppResource>>);

impl Locked<'_> {
    fn resource(&self) -> &ffi::CppResource {
        // Checked non-null in `new`, never reset afterwards.
        self.0.as_ref().expect("CppUpstream holds a non-null resource")
    }
}

/// Turns the outcome of a C++ `allocate` into a Rust error. `std::bad_alloc` of any kind counts as
/// out of memory, so a pool backs off and reports it as such.
pub(super) fn to_error(out: Outcome, bytes: usize) -> Error {
    let reason = format!("the C++ upstream resource threw: {}", out.message);
    match out.kind {
        ErrorKind::OutOfMemory | ErrorKind::BadAlloc => Error::out_of_memory(bytes, reason),
        ErrorKind::Cuda => Error::Cuda { call: "C++ upstream allocate", code: 0, name: out.message },
        _ => Error::InvalidArgument(reason),
    }
}

// SAFETY: only the C++ face makes this type, from a C++ resource; what its `allocate` returns is
// that resource's promise under the `cuda::mr` concept (as RMM trusts its upstreams), which C++
// code makes outside Rust's checks. It reports device accessibility, as every RMM resource.
unsafe impl MemoryResource for CppUpstream {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        // A 0-byte request reaches the C++ resource too (RMM's adaptors pass it on), which may
        // answer null for it.
        let mut out = Outcome::ok(0);
        self.lock().resource().allocate(bytes, alignment, stream.handle(), &mut out);
        if out.is_ok() {
            refuse_null(out.ptr as *mut u8, bytes)
        } else {
            Err(to_error(out, bytes))
        }
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        // Every free is passed on, a null one (what a 0-byte request may have returned) included,
        // as RMM's adaptors pass it.
        self.claims.refuse_claimed(ptr)?;
        self.lock().resource().deallocate(ptr as usize, bytes, alignment, stream.handle());
        Ok(())
    }

    fn claim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        self.claims.claim(ptr, bytes)
    }

    fn unclaim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        self.claims.unclaim(ptr, bytes)
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        let Some(other) = (other as &dyn std::any::Any).downcast_ref::<Self>() else {
            return false;
        };
        if std::ptr::eq(self, other) {
            return true;
        }
        // Both locked, in address order, so that two threads comparing the pair both ways do not
        // each hold one lock and wait for the other.
        let (mine, theirs) = if (self as *const Self) < (other as *const Self) {
            let mine = self.lock();
            (mine, other.lock())
        } else {
            let theirs = other.lock();
            (self.lock(), theirs)
        };
        mine.resource().equals(theirs.resource())
    }

    fn is_host_accessible(&self) -> bool {
        self.host_accessible
    }
}
