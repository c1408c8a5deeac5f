//! Streams created and destroyed by the C++ face (`rmm::cuda_stream`, and so
//! `rmm::cuda_stream_pool`): registered like Rust's `CudaStream`, so that pools capture a stream's
//! work before it is destroyed (see [`rmm::stream_registry`]).

use super::outcome::guard;

/// After `cudaStreamCreate*` in `rmm::cuda_stream`.
pub(crate) fn register_stream(handle: usize) {
    // SAFETY: called by `rmm::cuda_stream`'s constructor for the stream it just made, whose
    // destructor calls `retire_stream` before destroying it.
    guard("register_stream", report_panic, || unsafe { rmm::stream_registry::register_stream(handle) });
}

/// Just before `cudaStreamDestroy` in `rmm::cuda_stream`, while the stream is alive.
pub(crate) fn retire_stream(handle: usize) {
    // SAFETY: called by `rmm::cuda_stream`'s destructor while the stream is still alive.
    guard("retire_stream", report_panic, || unsafe { rmm::stream_registry::retire_stream(handle) });
}

/// Neither call has a caller to tell (stream constructors and destructors do not fail on this).
fn report_panic(message: String) {
    eprintln!("rmm: {message}");
}
