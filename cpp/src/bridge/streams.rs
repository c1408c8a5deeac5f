//! Streams created and destroyed by the C++ face (`rmm::cuda_stream`, and so
//! `rmm::cuda_stream_pool`): registered like Rust's `CudaStream`, so that pools capture a stream's
//! work before it is destroyed (see [`rmm::stream_registry`]).

use super::outcome::guard;

/// After `cudaStreamCreate*` in `rmm::cuda_stream`.
///
/// # Safety
/// As for [`rmm::stream_registry::register_stream`]: `rmm::cuda_stream`'s constructor calls it for
/// the stream it just made, whose destructor calls [`retire_stream`] before destroying it.
pub(crate) unsafe fn register_stream(handle: usize) {
    // SAFETY: the caller's contract, the registry's.
    guard("register_stream", report_panic, || unsafe { rmm::stream_registry::register_stream(handle) });
}

/// Just before `cudaStreamDestroy` in `rmm::cuda_stream`, while the stream is alive.
///
/// # Safety
/// `handle` names a live stream: `rmm::cuda_stream`'s destructor calls it before the destroy.
pub(crate) unsafe fn retire_stream(handle: usize) {
    // SAFETY: the caller's contract, the registry's.
    guard("retire_stream", report_panic, || unsafe { rmm::stream_registry::retire_stream(handle) });
}

/// Neither call has a caller to tell (stream constructors and destructors do not fail on this).
fn report_panic(message: String) {
    eprintln!("rmm: {message}");
}
