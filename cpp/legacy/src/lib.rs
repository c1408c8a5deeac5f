//! The legacy API of the original RMM (`rmm.h` / `rmm_api.h`, RMM before 0.15) over the rmm-rs
//! resources, as Rust functions with the C signatures. `rmm-cpp` exports each as the C symbol of
//! the same name (`librmm_cpp.a`); the Python face's `librmm_cffi` calls them directly, so the
//! extension carries none of the C symbols.
//!
//! `rmmInitialize` makes a resource (cuda, managed, or a pool over either) the current resource of
//! the current device; `rmmAlloc`, `rmmRealloc` and `rmmFree` then allocate from the current device
//! resource and remember every pointer they hand out, since `rmmFree` is given no size;
//! `rmmFinalize` frees what is still live and puts the previous resource back. The C declarations
//! are `include/rmm/rmm_api.h` (same enumerator values, struct layout and signatures as the
//! original) and `include/rmm/rmm.h` (the `RMM_ALLOC` / `RMM_FREE` / `RMM_REALLOC` macros).
//!
//! Every entry point catches panics (a panic becomes `RMM_ERROR_UNKNOWN`) and checks its pointers:
//! null where a pointer is required, or a pointer this API did not hand out, is
//! `RMM_ERROR_INVALID_ARGUMENT` and changes nothing.

#![warn(missing_docs)]
#![allow(non_snake_case)] // the C names of the original API

mod alloc;
mod codes;
mod event_log;
mod info;
mod live;
mod options;
mod session;

pub use alloc::{rmmAlloc, rmmFree, rmmGetAllocationOffset, rmmRealloc};
pub use codes::{rmmGetErrorString, RmmError};
pub use event_log::{rmmGetLog, rmmLogSize, rmmWriteLog};
pub use info::rmmGetInfo;
pub use options::{RmmAllocationMode, RmmOptions};
pub use session::{reinitialize, rmmFinalize, rmmInitialize, rmmIsInitialized};

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs an entry point's body; a panic becomes `on_panic` instead of unwinding into C.
fn guarded<T>(on_panic: T, f: impl FnOnce() -> T) -> T {
    // AssertUnwindSafe: after a panic the caller only sees an error code; the shared state is
    // behind locks that stay consistent (parking_lot locks do not poison, and every table update
    // is a single insert or remove).
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(on_panic)
}
