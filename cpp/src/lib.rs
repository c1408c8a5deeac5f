//! # rmm-cpp — the C and C++ face of rmm-rs
//!
//! One static library, `librmm_cpp.a`, that the headers under `include/` link against:
//! - the cxx bridge (`bridge`) between the Rust resources of the core (`rmm`) and the C++ headers
//!   `include/rmm/` (compiled together with `cpp/bridge.cpp` by this crate's build script);
//! - the legacy C API (`c_api`, declared in `include/rmm/rmm_api.h`): the `#[no_mangle]` symbols
//!   over the legacy API's Rust functions in `rmm-legacy`;
//! - `rmm_rs_log_utc_offset` (`log_time`), which the C++ loggers call for local time.
//!
//! Nothing here is meant for Rust callers: a Rust program uses the core crate directly.

#![warn(missing_docs)]

mod bridge;
pub mod c_api;
pub mod log_time;
