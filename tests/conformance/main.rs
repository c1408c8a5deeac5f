//! The conformance suite: one set of tests that every resource and adaptor passes, as RMM's
//! `mr_ref_tests` are instantiated for each of its resources. `suite.rs` holds the tests; each
//! resource instantiates them in a file named after it (`cuda.rs`, `pool_host.rs`, ...) with what
//! it is (`Spec`) and how to make one. Tests of what only one resource does stay in the files named
//! after it elsewhere in `tests/` (`pool.rs`, `adaptors.rs`, `gpu_resources.rs`, ...).
//!
//! Resources over the GPU print `skipped: no CUDA device` and pass where there is none.

#[path = "../common/mod.rs"]
mod common;
#[macro_use]
mod suite;

mod aligned;
mod callback;
mod cuda;
mod cuda_async;
mod failure_callback;
mod host;
mod limiting;
mod logging;
mod managed;
mod pinned_host;
mod pool_cuda;
mod pool_host;
mod prefetch_host;
mod prefetch_managed;
mod statistics;
mod thread_safe;
mod tracking;
