//! The one way errors cross the bridge: an [`Outcome`] (an [`ErrorKind`] and the message), made
//! here from a core [`Error`] or a caught panic, and thrown on the C++ side by `throw_outcome`
//! (`rmm/mr/detail/rust_resource.hpp`) as the RMM exception of its kind.

use super::ffi::{ErrorKind, Outcome};
use rmm::error::Error;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Where an error happened decides which RMM exception it becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Context {
    /// `allocate`: out-of-memory is `rmm::out_of_memory`, misuse `rmm::logic_error`, and every
    /// other failure (bad alignment, a CUDA error, no driver) `rmm::bad_alloc`, as RMM's
    /// `RMM_CUDA_TRY_ALLOC` throws: an allocation fails with a `std::bad_alloc` or not at all.
    /// A failed allocating driver call ([`Error::CudaAlloc`]) is `rmm::bad_alloc` in either context.
    Allocate,
    /// A constructor or accessor: bad arguments are `rmm::logic_error`, as RMM_EXPECTS throws.
    Construct,
    /// A question to the driver (a capability, a prefetch): as [`Context::Construct`], but a
    /// panic is an `rmm::cuda_error`.
    Driver,
}

impl Context {
    /// The kind of a panic caught in a call of this context.
    fn panic_kind(self) -> ErrorKind {
        match self {
            Context::Allocate => ErrorKind::BadAlloc,
            Context::Construct => ErrorKind::Logic,
            Context::Driver => ErrorKind::Cuda,
        }
    }
}

/// A failed call on its way to C++: a core error, whose exception the call's [`Context`] decides,
/// or one whose exception the call chose itself (popping an empty statistics stack is
/// `rmm::out_of_range`).
pub(crate) enum Failure {
    Error(Error),
    As(ErrorKind, Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Error(e)
    }
}

/// Runs the bridge call `what` of context `ctx`: its value in `ptr`, or its error, or a panic
/// caught, as the error of its kind. Every call that returns an [`Outcome`] goes through here.
pub(crate) fn answer(what: &'static str, ctx: Context, f: impl FnOnce() -> Result<usize, Failure>) -> Outcome {
    guard(
        what,
        |m| Outcome::error(ctx.panic_kind(), m),
        || match f() {
            Ok(v) => Outcome::ok(v),
            Err(Failure::Error(e)) => Outcome::from_error(&e, ctx),
            Err(Failure::As(kind, e)) => Outcome::error(kind, what_of(&e)),
        },
    )
}

impl Outcome {
    pub(crate) fn ok(ptr: usize) -> Outcome {
        Outcome { kind: ErrorKind::Ok, message: String::new(), ptr }
    }

    pub(crate) fn error(kind: ErrorKind, message: impl Into<String>) -> Outcome {
        Outcome { kind, message: message.into(), ptr: 0 }
    }

    /// The outcome of a failed call; the message is the error's `Display` text (an invalid
    /// argument's own text), so the numbers of an out-of-memory error reach `what()`.
    pub(crate) fn from_error(e: &Error, ctx: Context) -> Outcome {
        Outcome::error(kind_of(e, ctx), what_of(e))
    }

    pub(crate) fn is_ok(&self) -> bool {
        self.kind == ErrorKind::Ok
    }
}

/// The `what()` a C++ exception carries for `e`: its `Display` text, but an invalid argument's own
/// text alone (RMM's logic_error messages have no "invalid argument: " before them: the type says it).
pub(crate) fn what_of(e: &Error) -> String {
    match e {
        Error::InvalidArgument(msg) => msg.clone(),
        _ => e.to_string(),
    }
}

pub(crate) fn kind_of(e: &Error, ctx: Context) -> ErrorKind {
    match e {
        Error::OutOfMemory { .. } => ErrorKind::OutOfMemory,
        // RMM_CUDA_TRY_ALLOC's `rmm::bad_alloc`, wherever the allocating call was made (a
        // constructor's first chunk included).
        Error::CudaAlloc { .. } => ErrorKind::BadAlloc,
        // A broken upstream is a programming error, not a shortage: no retry or back-off helps.
        Error::Misuse(_) | Error::Unsupported(_) | Error::BadUpstream(_) => ErrorKind::Logic,
        Error::Cuda { .. } | Error::NoDriver(_) => match ctx {
            Context::Allocate => ErrorKind::BadAlloc,
            Context::Construct | Context::Driver => ErrorKind::Cuda,
        },
        // Bad input, and any kind of error the core adds later.
        _ => match ctx {
            Context::Allocate => ErrorKind::BadAlloc,
            Context::Construct | Context::Driver => ErrorKind::Logic,
        },
    }
}

/// Runs `f`, turning a panic into `on_panic(message)`. Every bridge function goes through here:
/// a panic unwinding into C++ would abort the user's process.
#[inline]
pub(crate) fn guard<T>(what: &'static str, on_panic: impl FnOnce(String) -> T, f: impl FnOnce() -> T) -> T {
    caught(what, f).unwrap_or_else(on_panic)
}

/// Runs `f`; a panic becomes `Err(message)`. For hot paths whose panic handling needs the call's
/// arguments: they stay in registers, where an `on_panic` closure of [`guard`] would capture them
/// on the stack on every call.
#[inline]
pub(crate) fn caught<T>(what: &'static str, f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| panic_message(what, payload))
}

/// The message of a caught panic, naming the bridge function it happened in.
#[cold]
#[inline(never)]
pub(crate) fn panic_message(what: &str, payload: Box<dyn std::any::Any + Send>) -> String {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_string());
    format!("rmm-rs internal error in {what}: {msg}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmm::error::Misuse;

    #[test]
    fn kinds_follow_the_rmm_exception_types() {
        let oom = Error::out_of_memory(1 << 40, "pool exhausted");
        assert_eq!(kind_of(&oom, Context::Allocate), ErrorKind::OutOfMemory);
        let misuse = Error::Misuse(Misuse::DoubleFree { ptr: 0x100 });
        assert_eq!(kind_of(&misuse, Context::Allocate), ErrorKind::Logic);
        let bad = Error::BadAlignment { alignment: 3, max: 1 << 30 };
        assert_eq!(kind_of(&bad, Context::Allocate), ErrorKind::BadAlloc);
        assert_eq!(kind_of(&bad, Context::Construct), ErrorKind::Logic);
        let cuda = Error::Cuda { call: "cuMemAlloc", code: 1, name: "CUDA_ERROR_INVALID_VALUE".into() };
        assert_eq!(kind_of(&cuda, Context::Construct), ErrorKind::Cuda);
        assert_eq!(kind_of(&cuda, Context::Allocate), ErrorKind::BadAlloc);
        assert_eq!(kind_of(&Error::NoDriver("none".into()), Context::Allocate), ErrorKind::BadAlloc);
        let alloc = Error::CudaAlloc {
            requested: 256,
            call: "cuMemAllocFromPoolAsync",
            code: 1,
            name: "CUDA_ERROR_INVALID_VALUE".into(),
        };
        assert_eq!(kind_of(&alloc, Context::Allocate), ErrorKind::BadAlloc);
        assert_eq!(kind_of(&alloc, Context::Construct), ErrorKind::BadAlloc);
        let upstream = Error::BadUpstream("null".into());
        assert_eq!(kind_of(&upstream, Context::Allocate), ErrorKind::Logic);
        assert_eq!(kind_of(&upstream, Context::Construct), ErrorKind::Logic);
    }

    #[test]
    fn oom_message_carries_the_numbers() {
        let o = Outcome::from_error(&Error::out_of_memory(12345, "limit 100"), Context::Allocate);
        assert!(o.message.contains("12345") && o.message.contains("limit 100"), "{}", o.message);
    }

    #[test]
    fn a_panic_becomes_an_outcome_of_the_context() {
        for (ctx, kind) in [
            (Context::Allocate, ErrorKind::BadAlloc),
            (Context::Construct, ErrorKind::Logic),
            (Context::Driver, ErrorKind::Cuda),
        ] {
            let o = answer("test", ctx, || panic!("boom"));
            assert_eq!(o.kind, kind);
            assert!(o.message.contains("boom"));
        }
    }
}
