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
mod arena_cuda;
mod arena_host;
mod binning_cuda;
mod binning_host;
mod callback;
mod cuda;
mod cuda_async;
mod cuda_async_managed;
mod cuda_async_view;
mod failure_callback;
mod fixed_size_cuda;
mod fixed_size_host;
mod host;
mod limiting;
mod logging;
mod managed;
mod pinned_host;
mod pool_cuda;
mod pool_host;
mod prefetch_host;
mod prefetch_managed;
mod sam_headroom;
mod statistics;
mod system;
mod thread_safe;
mod tracking;
