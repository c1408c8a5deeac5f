//! What every family of handles shares: [`AnyResource`], the resource behind a handle of any family
//! (or the error that prevented making it), and the [`Family`] trait with the allocation fast path
//! that C++ calls through one pair of plain C symbols per family ([`fast_path!`]).
//!
//! The families themselves, each an opaque cxx type with the queries of its kinds only, live in
//! `pool.rs`, `arena.rs`, `block.rs`, `adaptors.rs`, `cuda_async.rs` and `plain.rs`.

use super::ffi::{ErrorKind, Outcome};
use super::outcome::{caught, guard, Context};
use rmm::error::{Error, Result};
use rmm::resource::{MemoryResource, SharedResource};
use rmm::stream::CudaStreamView;
use std::any::Any;
use std::fmt::Display;
use std::io::Write;
use std::sync::Arc;

thread_local! {
    /// The error of this thread's last failed allocation through a fast path.
    static LAST_ALLOCATE_ERROR: std::cell::RefCell<Option<Outcome>> = const { std::cell::RefCell::new(None) };
}

/// The pointer `f` allocates, or 0 with its error (or panic) kept for [`take_allocate_error`].
#[inline(always)]
pub(super) fn pointer_or_null(f: impl FnOnce() -> Result<*mut u8>) -> usize {
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

/// Why this thread's last fast-path allocation returned 0: its error (taken, so it is reported
/// once), or `Ok` when it returned 0 for a 0-byte request.
pub(crate) fn take_allocate_error() -> Outcome {
    guard(
        "take_allocate_error",
        |m| Outcome::error(ErrorKind::BadAlloc, m),
        || {
            LAST_ALLOCATE_ERROR
                .try_with(|e| e.borrow_mut().take())
                .unwrap_or_else(|_| Some(Outcome::error(ErrorKind::BadAlloc, "allocation failed during thread exit")))
                .unwrap_or_else(|| Outcome::ok(0))
        },
    )
}

/// The stream C++ passes as an integer.
///
/// # Safety
/// `stream` names a live stream (or a default one) for as long as the view is used: RMM's
/// contract for `cuda_stream_view`, which the C++ caller keeps for the call it makes.
#[inline(always)]
pub(super) unsafe fn stream_view(stream: usize) -> CudaStreamView<'static> {
    // SAFETY: the caller's contract.
    unsafe { CudaStreamView::from_handle(stream) }
}

/// A copy of the error that prevented making a resource (the rare path of
/// [`AnyResource::shared`]).
#[cold]
#[inline(never)]
fn construction_error(e: &Error) -> Error {
    e.clone()
}

/// The resource behind a handle of any family, or the error that prevented making it: what a
/// bridge call taking a resource of any kind (an upstream, a bin, the per-device table) takes.
///
/// Constructors cannot throw across the bridge, so a failed construction still yields a handle;
/// the C++ constructor reads [`AnyResource::status`] and throws.
pub struct AnyResource {
    made: std::result::Result<SharedResource, Error>,
    name: &'static str,
}

impl AnyResource {
    /// The resource `f` makes, named `name` (RMM's class name); a panic is an invalid argument.
    pub(super) fn make(name: &'static str, f: impl FnOnce() -> Result<SharedResource>) -> AnyResource {
        let made = guard(name, |m| Err(Error::InvalidArgument(m)), f);
        AnyResource { made, name }
    }

    /// What a moved-from C++ resource calls instead of its (gone) handle: it owns nothing, so
    /// every allocation fails and every free is refused (and reported) by the construction error.
    pub(super) fn moved_from() -> AnyResource {
        AnyResource::make("moved-from resource", || {
            Err(Error::InvalidArgument("the resource was moved from and owns no memory; nothing was freed".into()))
        })
    }

    /// The resource, or the error of its construction. Inlined: every call from C++ to a
    /// resource reached through the trait object goes through here.
    #[inline]
    pub fn shared(&self) -> Result<&SharedResource> {
        match &self.made {
            Ok(r) => Ok(r),
            Err(e) => Err(construction_error(e)),
        }
    }

    /// The error of a handle that holds no resource of its family's kinds: its construction's.
    #[cold]
    pub(super) fn not_made(&self) -> Error {
        match &self.made {
            Err(e) => e.clone(),
            Ok(_) => Error::InvalidArgument(format!("the {} holds no resource", self.name)),
        }
    }

    pub(crate) fn status(&self) -> Outcome {
        match &self.made {
            Ok(_) => Outcome::ok(0),
            Err(e) => Outcome::from_error(e, Context::Construct),
        }
    }

    pub(crate) fn is_equal(&self, other: &AnyResource) -> bool {
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
    /// the kind asked for and the kind this is (another member of the handle's family).
    pub(super) fn kind<T: MemoryResource>(&self, query: &str, kind: &str) -> Result<&T> {
        let r: &dyn MemoryResource = &**self.shared()?;
        (r as &dyn Any).downcast_ref::<T>().ok_or_else(|| wrong_kind(query, kind, self.name))
    }

    /// The fast path's allocation through the trait object.
    ///
    /// # Safety
    /// `stream` names a live stream (or a default one) for the call: RMM's contract for
    /// `cuda_stream_view`, which the C++ caller keeps.
    #[inline]
    pub(super) unsafe fn allocate_or_null(&self, stream: usize, bytes: usize, alignment: usize) -> usize {
        // SAFETY: the caller's contract.
        let view = unsafe { stream_view(stream) };
        pointer_or_null(|| self.shared().and_then(|r| r.allocate(bytes, alignment, view)))
    }

    /// The fast path's free through the trait object.
    ///
    /// # Safety
    /// `stream` names a live stream (or a default one) for the call: RMM's contract for
    /// `cuda_stream_view`, which the C++ caller keeps.
    #[inline]
    pub(super) unsafe fn deallocate(&self, stream: usize, ptr: usize, bytes: usize, alignment: usize) {
        // SAFETY: the caller's contract.
        let view = unsafe { stream_view(stream) };
        self.free_or_report(ptr, bytes, alignment, stream, || {
            self.shared().and_then(|r| r.deallocate(ptr as *mut u8, bytes, alignment, view))
        })
    }

    /// Runs the free `f`, reporting a refusal or a panic on stderr.
    #[inline(always)]
    pub(super) fn free_or_report(
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
}

/// A family of handles: its resource, and its allocation fast path (through the trait object,
/// unless the family reaches its resource directly).
pub(super) trait Family {
    /// The resource behind the handle.
    fn any(&self) -> &AnyResource;

    /// The pointer, or 0 with the error kept for [`take_allocate_error`] (an [`Outcome`] by value
    /// would cost C++ a call back into Rust to drop its message, on every allocation).
    ///
    /// # Safety
    /// `stream` names a live stream (or a default one) for the call: RMM's contract for
    /// `cuda_stream_view`, which the C++ caller keeps.
    #[inline]
    unsafe fn allocate_or_null(&self, stream: usize, bytes: usize, alignment: usize) -> usize {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.any().allocate_or_null(stream, bytes, alignment) }
    }

    /// The free; a refusal (or a panic) is reported on stderr, the resource unchanged.
    ///
    /// # Safety
    /// `stream` names a live stream (or a default one) for the call: RMM's contract for
    /// `cuda_stream_view`, which the C++ caller keeps.
    #[inline]
    unsafe fn deallocate(&self, stream: usize, ptr: usize, bytes: usize, alignment: usize) {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.any().deallocate(stream, ptr, bytes, alignment) }
    }
}

/// The two plain C symbols of a family's fast path, which `rmm/mr/detail/rust_resource.hpp`
/// declares: C symbols rather than cxx methods, whose shim adds a frame and an abort guard to each
/// call. No panic gets out (the calls catch their own, and one that did would abort at this
/// `extern "C"` boundary, as at cxx's guard).
macro_rules! fast_path {
    ($family:ty, $allocate:ident, $deallocate:ident) => {
        /// The family's allocation as C++ calls it (the stream first: the arguments reach Rust in
        /// the registers they came in).
        ///
        /// # Safety
        /// `stream` names a live stream (or a default one) for the call: RMM's contract for
        /// `cuda_stream_view`, which the C++ caller keeps.
        #[no_mangle]
        pub unsafe extern "C" fn $allocate(resource: &$family, stream: usize, bytes: usize, alignment: usize) -> usize {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::bridge::resource::Family::allocate_or_null(resource, stream, bytes, alignment) }
        }

        /// The family's free as C++ calls it, from `noexcept` code.
        ///
        /// # Safety
        /// As for the family's allocation.
        #[no_mangle]
        pub unsafe extern "C" fn $deallocate(
            resource: &$family,
            stream: usize,
            ptr: usize,
            bytes: usize,
            alignment: usize,
        ) {
            // SAFETY: the caller's contract, passed on.
            unsafe { $crate::bridge::resource::Family::deallocate(resource, stream, ptr, bytes, alignment) }
        }
    };
}
pub(super) use fast_path;

/// A family reached through the trait object: the handle type `$family` (a newtype of
/// [`AnyResource`]), its `make` and `resource`, its fast path and its moved-from handle.
macro_rules! dynamic_family {
    ($(#[$doc:meta])* $family:ident, $allocate:ident, $deallocate:ident, $moved_from:ident) => {
        $(#[$doc])*
        pub struct $family($crate::bridge::resource::AnyResource);

        impl $family {
            /// The handle of the resource `f` makes, named `name` (RMM's class name).
            pub(super) fn make(
                name: &'static str,
                f: impl FnOnce() -> rmm::Result<rmm::resource::SharedResource>,
            ) -> Box<$family> {
                Box::new($family($crate::bridge::resource::AnyResource::make(name, f)))
            }

            pub(crate) fn resource(&self) -> &$crate::bridge::resource::AnyResource {
                &self.0
            }
        }

        impl $crate::bridge::resource::Family for $family {
            fn any(&self) -> &$crate::bridge::resource::AnyResource {
                &self.0
            }
        }

        $crate::bridge::resource::fast_path!($family, $allocate, $deallocate);

        /// The handle a moved-from resource of the family calls.
        pub(crate) fn $moved_from() -> Box<$family> {
            Box::new($family($crate::bridge::resource::AnyResource::moved_from()))
        }
    };
}
pub(super) use dynamic_family;

/// A query asked of another kind of the handle's family: the C++ headers only ask a resource of
/// the right type, so this is a contract broken on the Rust side of a caller.
#[cold]
#[inline(never)]
pub(super) fn wrong_kind(query: &str, kind: &str, name: &str) -> Error {
    Error::InvalidArgument(format!("{query}: the resource is a {name}, not a {kind}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmm::resource::HostMemoryResource;

    #[test]
    fn handles_of_one_resource_are_equal_and_distinct_resources_are_not() {
        let host = || AnyResource::make("host", || Ok(Arc::new(HostMemoryResource::new()) as SharedResource));
        let (a, b) = (host(), host());
        let a2 = AnyResource { made: Ok(a.shared().unwrap().clone()), name: "copy" };
        assert!(a.is_equal(&a2));
        assert!(!a.is_equal(&b));
    }
}
