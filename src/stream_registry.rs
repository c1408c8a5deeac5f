//! The streams this library creates, and the pools that must hear when one of them is destroyed.
//!
//! The driver hands a destroyed stream's handle to the next stream it creates, while work the
//! destroyed stream queued may still run. A pool that knew streams only by handle would give the
//! new stream the old one's free blocks at once, and the old stream's pending kernels would write
//! into the new owner's data. So:
//!
//! - streams created here ([`CudaStream`](crate::CudaStream), and through the C++ face
//!   `rmm::cuda_stream` and `rmm::cuda_stream_pool`) are registered, and before one is destroyed
//!   every pool *retires* it: while it is still alive, its work is captured in an event and its
//!   free blocks move to a key no stream has, from which other streams take them after waiting for
//!   that event. Their handles are then trusted: no call on them costs a CUDA call;
//! - any other stream (the user's own `cudaStreamCreate`) is known by the driver's unique stream
//!   id as well as its handle; a pool that finds a different id behind a handle retires the old
//!   stream's blocks until a synchronisation of everything covers its work.

use parking_lot::Mutex;
use rmm_algorithms::StreamKey;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Something that keeps free blocks by stream (a pool) and must hear when a registered stream is
/// about to be destroyed.
pub(crate) trait StreamTenant: Send + Sync {
    /// The stream `key` is about to be destroyed; it is still alive during this call.
    fn stream_retiring(&self, key: StreamKey);
}

/// Handles of the live streams created by this library.
static STREAMS: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

/// Every live pool that orders streams, by registration number.
static TENANTS: Mutex<Vec<(u64, Arc<dyn StreamTenant>)>> = Mutex::new(Vec::new());

/// Keeps a tenant registered; dropping it unregisters the tenant.
pub(crate) struct Tenancy(u64);

impl Drop for Tenancy {
    fn drop(&mut self) {
        let removed = {
            let mut tenants = TENANTS.lock();
            tenants.iter().position(|(n, _)| *n == self.0).map(|i| tenants.swap_remove(i))
        };
        // Dropped after the lock is released: a tenant's drop may take other locks.
        drop(removed);
    }
}

/// Registers `tenant` until the returned [`Tenancy`] is dropped.
pub(crate) fn add_tenant(tenant: Arc<dyn StreamTenant>) -> Tenancy {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let number = NEXT.fetch_add(1, Ordering::Relaxed);
    TENANTS.lock().push((number, tenant));
    Tenancy(number)
}

/// Records that this library created the stream `handle`: pools trust its handle until
/// [`retire_stream`] is called for it. For the faces' stream types (and this crate's tests): Rust
/// code gets this from [`CudaStream`](crate::CudaStream).
///
/// # Safety
/// `handle` names a live stream that the caller destroys only after calling [`retire_stream`]
/// for it: pools then take the blocks freed on it without asking the driver which stream the
/// handle names, which is right only while no other stream can have that handle. (A handle no
/// driver call sees, the stream name of a pool over host memory, needs nothing.)
#[doc(hidden)]
pub unsafe fn register_stream(handle: usize) {
    if StreamKey::of_handle(handle).is_reusable_handle() {
        STREAMS.lock().insert(handle);
    }
}

/// To be called just before the stream `handle`, which must still be alive, is destroyed: every
/// pool captures the stream's queued work and moves the blocks freed on it where no later stream
/// with the same handle can take them without waiting for that work. Without effect while the
/// process exits, and for handles that were never registered (a default stream, say). For the
/// faces' stream types, as [`register_stream`].
///
/// # Safety
/// `handle` names a live stream: pools record an event on it.
#[doc(hidden)]
pub unsafe fn retire_stream(handle: usize) {
    if crate::process_exit::process_is_exiting() || !STREAMS.lock().contains(&handle) {
        return;
    }
    // A snapshot, so that no pool lock is taken under the registry's lock.
    let tenants: Vec<Arc<dyn StreamTenant>> = TENANTS.lock().iter().map(|(_, t)| t.clone()).collect();
    for tenant in tenants {
        tenant.stream_retiring(StreamKey::of_handle(handle));
    }
    STREAMS.lock().remove(&handle);
}

/// True when `key` names a live stream created by this library.
pub(crate) fn is_registered(key: StreamKey) -> bool {
    key.handle().is_some_and(|handle| STREAMS.lock().contains(&handle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    struct Counting(AtomicUsize, usize);
    impl StreamTenant for Counting {
        fn stream_retiring(&self, key: StreamKey) {
            if key == StreamKey::of_handle(self.1) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    #[test]
    fn registered_streams_are_retired_once_in_every_tenant() {
        let handle = 0x7fff_0000_1000;
        let tenant = Arc::new(Counting(AtomicUsize::new(0), handle));
        let tenancy = add_tenant(tenant.clone());
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        unsafe { retire_stream(handle) }; // never registered: nothing happens
        assert_eq!(tenant.0.load(Ordering::SeqCst), 0);
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        unsafe { register_stream(handle) };
        assert!(is_registered(StreamKey::of_handle(handle)));
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        unsafe { retire_stream(handle) };
        assert_eq!(tenant.0.load(Ordering::SeqCst), 1);
        assert!(!is_registered(StreamKey::of_handle(handle)));
        drop(tenancy);
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        unsafe { register_stream(handle) };
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        unsafe { retire_stream(handle) };
        assert_eq!(tenant.0.load(Ordering::SeqCst), 1, "an unregistered tenant hears nothing");
    }

    #[test]
    fn default_streams_are_never_registered() {
        for handle in [0, 1, 2] {
            // SAFETY: a stream name for resources over host memory: no driver call sees it.
            unsafe { register_stream(handle) };
            assert!(!is_registered(StreamKey::of_handle(handle)));
        }
    }
}
