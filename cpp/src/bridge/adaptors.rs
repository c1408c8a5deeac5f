//! Bridge constructors of the aligned, thread-safe and prefetch adaptors, the callback resource,
//! and `rmm::prefetch`.

use super::cpp_upstream::to_error;
use super::ffi::{self, ErrorKind, Outcome};
use super::handle::RustResource;
use super::outcome::{guard_outcome, Context};
use parking_lot::ReentrantMutex;
use rmm::adaptor::{AlignedResourceAdaptor, PrefetchResourceAdaptor, ThreadSafeResourceAdaptor};
use rmm::device::DeviceId;
use rmm::error::{Error, Result};
use rmm::resource::CallbackMemoryResource;
use rmm::resource::SharedResource;
use rmm::stream::CudaStreamView;
use std::sync::Arc;

// SAFETY: the object holds the user's two `std::function`s and their arguments, which RMM calls
// from whichever thread allocates: they are tied to no thread. They need not be thread-safe,
// though, so the type is not `Sync`, and the callback resource calls them under one lock.
unsafe impl Send for ffi::CppAllocationCallbacks {}

pub(crate) fn new_aligned_adaptor(
    upstream: &RustResource,
    alignment: usize,
    alignment_threshold: usize,
) -> Box<RustResource> {
    RustResource::make("aligned_resource_adaptor", || {
        let adaptor = AlignedResourceAdaptor::new(upstream.shared()?.clone(), alignment, alignment_threshold)?;
        Ok(Arc::new(adaptor) as SharedResource)
    })
}

pub(crate) fn new_thread_safe_adaptor(upstream: &RustResource) -> Box<RustResource> {
    RustResource::make("thread_safe_resource_adaptor", || {
        Ok(Arc::new(ThreadSafeResourceAdaptor::new(upstream.shared()?.clone())) as SharedResource)
    })
}

pub(crate) fn new_prefetch_adaptor(upstream: &RustResource) -> Box<RustResource> {
    RustResource::make("prefetch_resource_adaptor", || {
        Ok(Arc::new(PrefetchResourceAdaptor::new(upstream.shared()?.clone())) as SharedResource)
    })
}

/// The C++ callbacks as the two closures of a [`CallbackMemoryResource`]; an exception of the
/// allocate callback comes back as an error of its kind.
pub(crate) fn new_callback_memory_resource(
    callbacks: cxx::UniquePtr<ffi::CppAllocationCallbacks>,
) -> Box<RustResource> {
    RustResource::make("callback_memory_resource", || {
        if callbacks.is_null() {
            return Err(Error::InvalidArgument("null allocation callbacks".into()));
        }
        // One thread in the user's callbacks at a time: a pool over this resource grows its
        // shards under separate locks. Reentrant, so a callback that calls back into this
        // resource on its own thread does not deadlock.
        let callbacks = Arc::new(ReentrantMutex::new(callbacks));
        let dealloc = callbacks.clone();
        let allocate = move |bytes: usize, _alignment: usize, stream: CudaStreamView| -> Result<*mut u8> {
            let mut out = Outcome::ok(0);
            if let Some(c) = callbacks.lock().as_ref() {
                c.allocate(bytes, stream.handle(), &mut out);
            }
            if out.is_ok() {
                Ok(out.ptr as *mut u8)
            } else {
                Err(to_error(out, bytes))
            }
        };
        let deallocate = move |ptr: *mut u8, bytes: usize, _alignment: usize, stream: CudaStreamView| -> Result<()> {
            if let Some(c) = dealloc.lock().as_ref() {
                c.deallocate(ptr as usize, bytes, stream.handle());
            }
            Ok(())
        };
        // SAFETY: the C++ caller of `callback_memory_resource` promises its functions keep the
        // resource contract, as RMM requires of them; C++ is outside Rust's checks.
        let resource = unsafe { CallbackMemoryResource::new(allocate, deallocate) };
        Ok(Arc::new(resource) as SharedResource)
    })
}

/// `rmm::prefetch`: a failed driver call is a `cuda_error`.
///
/// # Safety
/// `stream` names a live stream (or a default one) for the call: RMM's contract for
/// `cuda_stream_view`, which the C++ caller keeps.
pub(crate) unsafe fn prefetch_memory(ptr: usize, bytes: usize, device: i32, stream: usize) -> Outcome {
    guard_outcome("prefetch", ErrorKind::Cuda, || {
        // SAFETY: the caller's contract: `stream` is live for the call.
        match rmm::prefetch::prefetch(ptr as *const u8, bytes, DeviceId(device), unsafe {
            CudaStreamView::from_handle(stream)
        }) {
            Ok(()) => Outcome::ok(0),
            Err(e) => Outcome::from_error(&e, Context::Construct),
        }
    })
}
