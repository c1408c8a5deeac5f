//! Adaptors: resources that wrap an upstream resource to observe, limit or log what passes through.
//!
//! Every adaptor owns its upstream by value; to share one upstream between several adaptors (or to
//! keep a handle to it), pass an `Arc<R>`, which is itself a
//! [`MemoryResource`](crate::resource::MemoryResource). All adaptors:
//! - treat a zero-byte request as RMM's adaptors do: `statistics`, `tracking`, `limiting` and
//!   `logging` pass it (and the 0-byte free of what it returned, null or not) to the upstream,
//!   where `statistics` counts one allocation of 0 bytes, `logging` logs it, and `tracking` and
//!   `limiting` count nothing; the others answer it with a null pointer without touching the
//!   upstream. Freeing a null pointer with a non-zero size is a no-op in every adaptor: no
//!   allocation returned it;
//! - forward `is_device_accessible` / `is_host_accessible` to the upstream;
//! - compare equal only to themselves (identity), because each keeps state about the memory it
//!   handed out.

use crate::error::Result;
use crate::resource::effective_alignment;

/// The four methods every adaptor writes alike, inside its `impl MemoryResource`: equal only to
/// itself ([`same_instance`]), device- and host-accessible where its upstream (the field named) is,
/// and the upstream's segments.
macro_rules! adaptor_identity_and_access {
    ($upstream:ident) => {
        adaptor_identity_and_access!($upstream, claims by hand);

        $crate::resource::forward_claims!($upstream);
    };
    // For an adaptor whose blocks are not its upstream's blocks (the aligned adaptor).
    ($upstream:ident, claims by hand) => {
        fn is_equal(&self, other: &dyn $crate::resource::MemoryResource) -> bool {
            $crate::resource::same_instance(self, other)
        }

        $crate::resource::accessibility!($upstream);

        fn memory_segments(&self) -> Option<Vec<$crate::resource::MemorySegment>> {
            self.$upstream.memory_segments()
        }
    };
}

pub mod aligned;
pub mod failure_callback;
pub mod history;
pub mod limiting;
pub mod logging;
pub mod prefetch;
pub mod statistics;
pub mod thread_safe;
pub mod tracking;

pub use aligned::AlignedResourceAdaptor;
pub use failure_callback::FailureCallbackResourceAdaptor;
pub use history::HistoryResourceAdaptor;
pub use limiting::LimitingResourceAdaptor;
pub use logging::{LogSink, LoggingResourceAdaptor, LOG_HEADER};
pub use prefetch::PrefetchResourceAdaptor;
pub use statistics::{Counter, CounterFrame, StatisticsResourceAdaptor, POP_EMPTY_MESSAGE};
pub use thread_safe::ThreadSafeResourceAdaptor;
pub use tracking::{AllocationRecord, TrackingResourceAdaptor};

/// The answer to a zero-byte request: null, once the alignment has been checked the way the
/// resources check it (so a bad alignment is an error whatever the size).
pub(crate) fn zero_byte_allocation(alignment: usize) -> Result<*mut u8> {
    effective_alignment(alignment).map(|_| std::ptr::null_mut())
}

/// True for a free of a null pointer with a non-zero size, which no allocation handed out: the
/// adaptors leave it alone (RMM would move their counters for it).
#[inline]
pub(crate) fn never_allocated(ptr: *mut u8, bytes: usize) -> bool {
    ptr.is_null() && bytes != 0
}
