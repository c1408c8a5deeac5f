//! `CudaAsyncViewMemoryResource` over the pool of a `CudaAsyncMemoryResource` that lives for the
//! whole test binary (a view never owns its pool).
use rmm::resource::{CudaAsyncMemoryResource, CudaAsyncViewMemoryResource};
use std::sync::OnceLock;

fn owner() -> &'static CudaAsyncMemoryResource {
    static OWNER: OnceLock<CudaAsyncMemoryResource> = OnceLock::new();
    OWNER.get_or_init(|| CudaAsyncMemoryResource::new(None, None).unwrap())
}

conformance!(Spec::DRIVER, || {
    // SAFETY: the pool belongs to a static resource, alive until the process exits.
    unsafe { CudaAsyncViewMemoryResource::new(owner().pool_handle()) }.unwrap()
});
