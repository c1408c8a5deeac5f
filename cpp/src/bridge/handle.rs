//! The handle C++ holds for every Rust resource ([`RustResource`]) and the calls common to every
//! kind: status, allocate and free (the pool and the arena reached without dynamic dispatch),
//! equality, accessibility. Each kind's constructor and queries live in a file of their own
//! (`pool.rs`, `statistics.rs`, ...); a query asked of another kind is an error ([`RustResource::kind`]).

use super::ffi::{ErrorKind, Outcome};
use super::outcome::{caught, guard, guard_outcome, Context};
use rmm::error::{Error, Result};
use rmm::resource::{
    ArenaMemoryResource, MemoryResource, PoolMemoryResource, SharedResource, VirtualPoolMemoryResource,
};
use rmm::stream::CudaStreamView;
use std::any::Any;
use std::fmt::Display;
use std::io::Write;
use std::sync::Arc;

thread_local! {
    /// The error of this thread's last failed [`RustResource::allocate_or_null`].
    static LAST_ALLOCATE_ERROR: std::cell::RefCell<Option<Outcome>> = const { std::cell::RefCell::new(None) };
}

/// A copy of the error that prevented making a resource (the rare path of
/// [`RustResource::shared`]).
#[cold]
#[inline(never)]
fn construction_error(e: &Error) -> Error {
    e.clone()
}

/// The pointer `f` allocates, or 0 with its error (or panic) kept for [`take_allocate_error`].
#[inline(always)]
fn pointer_or_null(f: impl FnOnce() -> Result<*mut u8>) -> usize {
    match caught("allocate", f) {
        Ok(Ok(p)) => p as usize,
        Ok(Err(e)) => keep_allocate_error(Outcome::from_error(&e, Context::Allocate)),
        Err(m) => keep_allocate_error(Outcome::error(ErrorKind::BadAlloc, m)),
    }
}

/// Keeps `out` as this thread's last allocation error and returns the null pointer.
#[cold]
#[inline(never)]
fn keep_allocate_error(out: Outcome) -> usize {
    // `try_with`: during thread teardown the error is lost, and C++ sees a bad_alloc.
    let _ = LAST_ALLOCATE_ERROR.try_with(|e| *e.borrow_mut() = Some(out));
    0
}

/// Why this thread's last `allocate_or_null` returned 0: its error (taken, so it is reported once),
/// or `Ok` when it returned 0 for a 0-byte request.
pub(crate) fn take_allocate_error() -> Outcome {
    guard_outcome("take_allocate_error", ErrorKind::BadAlloc, || {
        LAST_ALLOCATE_ERROR
            .try_with(|e| e.borrow_mut().take())
            .unwrap_or_else(|_| Some(Outcome::error(ErrorKind::BadAlloc, "allocation failed during thread exit")))
            .unwrap_or_else(|| Outcome::ok(0))
    })
}

/// A Rust resource held by C++, or the error that prevented making it.
///
/// Constructors cannot throw across the bridge, so a failed construction still yields a handle;
/// the C++ constructor reads [`RustResource::status`] and throws.
pub struct RustResource {
    made: std::result::Result<SharedResource, Error>,
    /// The same resource when it is a pool, an arena or a virtual pool: calls from C++ reach it
    /// without dynamic dispatch.
    pub(super) direct: Direct,
    name: &'static str,
}

/// The resources whose allocations and frees the bridge calls statically (one discriminant test
/// on each call, so neither costs the other an instruction).
pub(super) enum Direct {
    None,
    Pool(Arc<Pool>),
    Arena(Arc<Arena>),
    VirtualPool(Arc<VirtualPoolMemoryResource>),
}

/// The pool as the bridge makes it: over a resource of either side.
pub(super) type Pool = PoolMemoryResource<SharedResource>;

/// The arena as the bridge makes it: over a resource of either side.
pub(super) type Arena = ArenaMemoryResource<SharedResource>;

impl RustResource {
    pub(super) fn make(name: &'static str, f: impl FnOnce() -> Result<SharedResource>) -> Box<RustResource> {
        let made = guard(name, |m| Err(Error::InvalidArgument(m)), f);
        Box::new(RustResource { made, direct: Direct::None, name })
    }

    /// The resource, or the error of its construction. Inlined: every call from C++ to a
    /// resource other than the pool goes through here.
    #[inline]
    pub fn shared(&self) -> Result<&SharedResource> {
        match &self.made {
            Ok(r) => Ok(r),
            Err(e) => Err(construction_error(e)),
        }
    }

    pub(crate) fn status(&self) -> Outcome {
        match &self.made {
            Ok(_) => Outcome::ok(0),
            Err(e) => Outcome::from_error(e, Context::Construct),
        }
    }

    /// Allocates `bytes` on `stream` (a `cudaStream_t` as an integer), for the cxx bridge.
    ///
    /// # Safety
    /// `stream` names a live stream (or a default one) for the call: RMM's contract for
    /// `cuda_stream_view`, which the C++ caller keeps.
    pub(crate) unsafe fn allocate(&self, bytes: usize, alignment: usize, stream: usize) -> Outcome {
        guard_outcome("allocate", ErrorKind::BadAlloc, || {
            // SAFETY: the caller's contract: `stream` is live for the call.
            let view = unsafe { CudaStreamView::from_handle(stream) };
            match self.shared().and_then(|r| r.allocate(bytes, alignment, view)) {
                Ok(p) => Outcome::ok(p as usize),
                Err(e) => Outcome::from_error(&e, Context::Allocate),
            }
        })
    }

    /// The allocation fast path: the pointer, or 0 with the error kept for
    /// [`take_allocate_error`] (an [`Outcome`] by value costs C++ a call back into Rust to drop
    /// its message, on every allocation).
    ///
    /// # Safety
    /// `stream` names a live stream (or a default one) for the call: RMM's contract for
    /// `cuda_stream_view`, which the C++ caller keeps.
    pub(crate) unsafe fn allocate_or_null(&self, stream: usize, bytes: usize, alignment: usize) -> usize {
        match &self.direct {
            Direct::Pool(pool) => {
                // SAFETY: the caller's contract: `stream` is live for the call.
                pointer_or_null(|| pool.allocate(bytes, alignment, unsafe { CudaStreamView::from_handle(stream) }))
            }
            // SAFETY: the caller's contract, passed on.
            _ => unsafe { self.allocate_or_null_not_pool(bytes, alignment, stream) },
        }
    }

    /// [`allocate_or_null`](Self::allocate_or_null) of any resource but the pool: out of line, so
    /// that the arena's fast path, inlined here, does not lengthen the pool's.
    ///
    /// # Safety
    /// `stream` names a live stream (or a default one) for the call: RMM's contract for
    /// `cuda_stream_view`, which the C++ caller keeps.
    #[inline(never)]
    unsafe fn allocate_or_null_not_pool(&self, bytes: usize, alignment: usize, stream: usize) -> usize {
        // SAFETY: the caller's contract: `stream` is live for the call.
        let view = unsafe { CudaStreamView::from_handle(stream) };
        match &self.direct {
            Direct::Arena(arena) => pointer_or_null(|| arena.allocate(bytes, alignment, view)),
            Direct::VirtualPool(pool) => pointer_or_null(|| pool.allocate(bytes, alignment, view)),
            _ => pointer_or_null(|| self.shared().and_then(|r| r.allocate(bytes, alignment, view))),
        }
    }

    /// Frees `ptr` on `stream`, handing a refusal back, for the cxx bridge.
    ///
    /// # Safety
    /// `stream` names a live stream (or a default one) for the call: RMM's contract for
    /// `cuda_stream_view`, which the C++ caller keeps.
    pub(crate) unsafe fn try_deallocate(&self, ptr: usize, bytes: usize, alignment: usize, stream: usize) -> Outcome {
        guard_outcome("deallocate", ErrorKind::Logic, || {
            // SAFETY: the caller's contract: `stream` is live for the call.
            let view = unsafe { CudaStreamView::from_handle(stream) };
            match self.shared().and_then(|r| r.deallocate(ptr as *mut u8, bytes, alignment, view)) {
                Ok(()) => Outcome::ok(0),
                Err(e) => Outcome::from_error(&e, Context::Allocate),
            }
        })
    }

    /// Frees `ptr` on `stream`, reporting a refusal on stderr: the free fast path.
    ///
    /// # Safety
    /// `stream` names a live stream (or a default one) for the call: RMM's contract for
    /// `cuda_stream_view`, which the C++ caller keeps.
    pub(crate) unsafe fn deallocate(&self, stream: usize, ptr: usize, bytes: usize, alignment: usize) {
        // SAFETY: the caller's contract: `stream` is live for the call.
        let view = unsafe { CudaStreamView::from_handle(stream) };
        match &self.direct {
            Direct::Pool(pool) => self.free_or_report(ptr, bytes, alignment, stream, || {
                pool.deallocate(ptr as *mut u8, bytes, alignment, view)
            }),
            // SAFETY: the caller's contract, passed on.
            _ => unsafe { self.deallocate_not_pool(ptr, bytes, alignment, stream) },
        }
    }

    /// [`deallocate`](Self::deallocate) of any resource but the pool, out of line as
    /// [`allocate_or_null_not_pool`](Self::allocate_or_null_not_pool).
    ///
    /// # Safety
    /// `stream` names a live stream (or a default one) for the call: RMM's contract for
    /// `cuda_stream_view`, which the C++ caller keeps.
    #[inline(never)]
    unsafe fn deallocate_not_pool(&self, ptr: usize, bytes: usize, alignment: usize, stream: usize) {
        // SAFETY: the caller's contract: `stream` is live for the call.
        let view = unsafe { CudaStreamView::from_handle(stream) };
        let p = ptr as *mut u8;
        match &self.direct {
            Direct::Arena(arena) => {
                self.free_or_report(ptr, bytes, alignment, stream, || arena.deallocate(p, bytes, alignment, view))
            }
            Direct::VirtualPool(pool) => {
                self.free_or_report(ptr, bytes, alignment, stream, || pool.deallocate(p, bytes, alignment, view))
            }
            _ => self.free_or_report(ptr, bytes, alignment, stream, || {
                self.shared().and_then(|r| r.deallocate(p, bytes, alignment, view))
            }),
        }
    }

    /// Runs the free `f`, reporting a refusal or a panic on stderr.
    #[inline(always)]
    fn free_or_report(
        &self,
        ptr: usize,
        bytes: usize,
        alignment: usize,
        stream: usize,
        f: impl FnOnce() -> Result<()>,
    ) {
        match caught("deallocate", f) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => self.report_refused_free(ptr, bytes, alignment, stream, &e),
            Err(m) => self.report_refused_free(ptr, bytes, alignment, stream, &m),
        }
    }

    /// A noexcept free has no one to tell but stderr; the resource refused the free and is
    /// unchanged. Write errors are ignored: there is nowhere left to report them.
    #[cold]
    #[inline(never)]
    fn report_refused_free(&self, ptr: usize, bytes: usize, alignment: usize, stream: usize, why: &dyn Display) {
        let _ = writeln!(
            std::io::stderr(),
            "rmm: deallocate({ptr:#x}, {bytes} bytes, alignment {alignment}, stream {stream:#x}) on {} failed: {why}",
            self.name,
        );
    }

    pub(crate) fn is_equal(&self, other: &RustResource) -> bool {
        guard(
            "is_equal",
            |_| false,
            || match (&self.made, &other.made) {
                (Ok(a), Ok(b)) => Arc::ptr_eq(a, b) || a.is_equal(&**b),
                _ => false,
            },
        )
    }

    pub(crate) fn is_device_accessible(&self) -> bool {
        guard("is_device_accessible", |_| false, || self.shared().is_ok_and(|r| r.is_device_accessible()))
    }

    pub(crate) fn is_host_accessible(&self) -> bool {
        guard("is_host_accessible", |_| false, || self.shared().is_ok_and(|r| r.is_host_accessible()))
    }

    pub(crate) fn describe(&self) -> String {
        self.name.to_string()
    }

    /// The resource's RMM class name, for messages.
    pub(super) fn name(&self) -> &'static str {
        self.name
    }

    /// The resource as the kind `T` that `query` is asked of (`kind`, RMM's class name), or why
    /// not: the construction error of a failed or moved-from resource, or a logic error naming
    /// the kind asked for and the kind this is.
    pub(super) fn kind<T: MemoryResource>(&self, query: &str, kind: &str) -> Result<&T> {
        let r: &dyn MemoryResource = &**self.shared()?;
        (r as &dyn Any).downcast_ref::<T>().ok_or_else(|| wrong_kind(query, kind, self.name))
    }
}

/// [`RustResource::allocate_or_null`] as C++ calls it on every allocation
/// (`include/rmm/mr/detail/rust_resource.hpp`): a plain C symbol rather than a cxx method, whose
/// shim adds a frame and an abort guard to each call. No panic gets out (the call catches its own,
/// and one that did would abort at this `extern "C"` boundary, as at cxx's guard).
///
/// # Safety
/// `stream` names a live stream (or a default one) for the call: RMM's contract for
/// `cuda_stream_view`, which the C++ caller keeps.
#[no_mangle]
pub unsafe extern "C" fn rmm_rs_allocate_or_null(
    resource: &RustResource,
    stream: usize,
    bytes: usize,
    alignment: usize,
) -> usize {
    // SAFETY: the caller's contract, passed on.
    unsafe { resource.allocate_or_null(stream, bytes, alignment) }
}

/// [`RustResource::deallocate`] as C++ calls it on every free, as [`rmm_rs_allocate_or_null`].
///
/// # Safety
/// As for [`rmm_rs_allocate_or_null`].
#[no_mangle]
pub unsafe extern "C" fn rmm_rs_deallocate(
    resource: &RustResource,
    stream: usize,
    ptr: usize,
    bytes: usize,
    alignment: usize,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { resource.deallocate(stream, ptr, bytes, alignment) }
}

/// A query asked of a resource of another kind: the C++ headers only ask a resource of the right
/// type, so this is a contract broken on the Rust side of a caller.
#[cold]
#[inline(never)]
fn wrong_kind(query: &str, kind: &str, name: &str) -> Error {
    Error::InvalidArgument(format!("{query}: the resource is a {name}, not a {kind}"))
}

/// The outcome of a query: its value in `ptr`, or its error as a logic error (the wrong kind, a
/// moved-from resource). A panic is a logic error too.
pub(super) fn query_outcome(what: &'static str, f: impl FnOnce() -> Result<usize>) -> Outcome {
    guard_outcome(what, ErrorKind::Logic, || match f() {
        Ok(v) => Outcome::ok(v),
        Err(e) => Outcome::from_error(&e, Context::Construct),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmm::resource::HostMemoryResource;

    #[test]
    fn handles_of_one_resource_are_equal_and_distinct_resources_are_not() {
        let host = || RustResource::make("host", || Ok(Arc::new(HostMemoryResource::new()) as SharedResource));
        let (a, b) = (host(), host());
        let a2 = Box::new(RustResource { made: Ok(a.shared().unwrap().clone()), direct: Direct::None, name: "copy" });
        assert!(a.is_equal(&a2));
        assert!(!a.is_equal(&b));
    }
}
