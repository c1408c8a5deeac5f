//! `CallbackMemoryResource` whose callbacks allocate from a pool on host memory they share; the
//! resource declares its memory device accessible (and not host accessible), as RMM's does.
conformance!(Spec { device_accessible: true, host_accessible: false, ..Spec::HOST }, || {
    let pool = std::sync::Arc::new(crate::common::host_pool());
    let upstream = pool.clone();
    // SAFETY: the functions forward to a pool, which keeps the contract; its host memory is called
    // device memory here (RMM's declaration), so the suite only allocates and frees through it.
    unsafe {
        rmm::resource::CallbackMemoryResource::new(
            move |bytes, alignment, stream| rmm::MemoryResource::allocate(&*pool, bytes, alignment, stream),
            move |ptr, bytes, alignment, stream| {
                rmm::MemoryResource::deallocate(&*upstream, ptr, bytes, alignment, stream)
            },
        )
    }
});
