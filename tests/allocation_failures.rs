//! An allocating CUDA call that fails with an error other than out of memory is
//! `Error::CudaAlloc` (RMM's `rmm::bad_alloc` from `RMM_CUDA_TRY_ALLOC`), carrying the CUDA error's
//! name, and reaches the caller through every adaptor and suballocator as RMM lets it through:
//! unchanged, except that a pool growing from its upstream reports it in its own out-of-memory
//! refusal, as RMM's pool does with every exception of its upstream. Nothing leaks and no counter
//! moves. The host tests use an upstream whose "driver call" fails on demand; the GPU test makes
//! the driver fail on purpose (a view of a destroyed pool), so this binary is listed in
//! tests/gpu/failing_on_purpose.txt.

mod common;

use parking_lot::Mutex;
use rmm::adaptor::{
    AlignedResourceAdaptor, FailureCallbackResourceAdaptor, LimitingResourceAdaptor, LoggingResourceAdaptor,
    StatisticsResourceAdaptor, ThreadSafeResourceAdaptor, TrackingResourceAdaptor,
};
use rmm::resource::{
    ArenaMemoryResource, BinningMemoryResource, CallbackMemoryResource, FixedSizeMemoryResource, HostMemoryResource,
    PoolMemoryResource,
};
use rmm::{CudaStreamView, Error, MemoryResource, Result};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

const S: CudaStreamView = CudaStreamView::DEFAULT;
const MIB: usize = 1 << 20;

/// What the driver answers `cuMemAllocFromPoolAsync` for a pool destroyed under a view.
fn invalid_value(requested: usize) -> Error {
    Error::CudaAlloc { requested, call: "cuMemAllocFromPoolAsync", code: 1, name: "CUDA_ERROR_INVALID_VALUE".into() }
}

/// Host memory whose allocations fail, while `failing`, as an allocating driver call that returns
/// `CUDA_ERROR_INVALID_VALUE`; it records the sizes asked and the blocks it holds.
#[derive(Default)]
struct FailingDriver {
    inner: HostMemoryResource,
    failing: AtomicBool,
    asked: Mutex<Vec<usize>>,
    outstanding: AtomicUsize,
}

impl FailingDriver {
    fn failing() -> Arc<Self> {
        let d = Arc::new(FailingDriver::default());
        d.failing.store(true, Ordering::SeqCst);
        d
    }
    fn set_failing(&self, on: bool) {
        self.failing.store(on, Ordering::SeqCst);
    }
    fn asked(&self) -> Vec<usize> {
        std::mem::take(&mut *self.asked.lock())
    }
    fn outstanding(&self) -> usize {
        self.outstanding.load(Ordering::SeqCst)
    }
}

// SAFETY: blocks come from `inner` unchanged and go back to it (a failure hands out nothing); the
// accessibility answers are `inner`'s.
unsafe impl MemoryResource for FailingDriver {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        self.asked.lock().push(bytes);
        if self.failing.load(Ordering::SeqCst) && bytes > 0 {
            return Err(invalid_value(bytes));
        }
        let p = self.inner.allocate(bytes, alignment, stream)?;
        if !p.is_null() {
            self.outstanding.fetch_add(1, Ordering::SeqCst);
        }
        Ok(p)
    }
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        self.inner.deallocate(ptr, bytes, alignment, stream)?;
        if !ptr.is_null() {
            self.outstanding.fetch_sub(1, Ordering::SeqCst);
        }
        Ok(())
    }
    fn claim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        self.inner.claim(ptr, bytes)
    }
    fn unclaim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        self.inner.unclaim(ptr, bytes)
    }
    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        std::ptr::addr_eq(self as *const Self, other as *const dyn MemoryResource)
    }
    fn is_device_accessible(&self) -> bool {
        self.inner.is_device_accessible()
    }
    fn is_host_accessible(&self) -> bool {
        self.inner.is_host_accessible()
    }
}

/// One allocation and its free succeed through `r` once the driver works again.
fn keeps_working(r: &dyn MemoryResource, driver: &FailingDriver) {
    driver.set_failing(false);
    let p = r.allocate(1000, 256, S).unwrap();
    r.deallocate(p, 1000, 256, S).unwrap();
    driver.set_failing(true);
}

#[test]
fn the_error_names_the_call_and_the_cuda_error_in_rmms_words() {
    let e = invalid_value(4096);
    assert!(e.is_bad_alloc() && !e.is_out_of_memory());
    assert_eq!(
        e.to_string(),
        "CUDA error (failed to allocate 4096 bytes) in cuMemAllocFromPoolAsync: CUDA_ERROR_INVALID_VALUE (1)"
    );
    assert!(Error::out_of_memory(1, "x").is_bad_alloc());
    assert!(!Error::Cuda { call: "cuMemFree", code: 1, name: "CUDA_ERROR_INVALID_VALUE".into() }.is_bad_alloc());
}

#[test]
fn adaptors_pass_it_on_unchanged_and_count_nothing() {
    let driver = FailingDriver::failing();

    let stats = StatisticsResourceAdaptor::new(driver.clone());
    assert_eq!(stats.allocate(1000, 256, S), Err(invalid_value(1000)));
    assert_eq!((stats.bytes_counter().total, stats.allocations_counter().total), (0, 0));
    keeps_working(&stats, &driver);

    let tracking = TrackingResourceAdaptor::new(driver.clone(), false);
    assert_eq!(tracking.allocate(1000, 256, S), Err(invalid_value(1000)));
    assert_eq!((tracking.allocated_bytes(), tracking.outstanding_allocations().len()), (0, 0));
    keeps_working(&tracking, &driver);

    let limiting = LimitingResourceAdaptor::new(driver.clone(), MIB);
    assert_eq!(limiting.allocate(1000, 256, S), Err(invalid_value(1000)));
    assert_eq!(limiting.allocated_bytes(), 0, "the reservation is rolled back");
    keeps_working(&limiting, &driver);

    let logging = LoggingResourceAdaptor::with_writer(driver.clone(), Box::new(std::io::sink()));
    assert_eq!(logging.allocate(1000, 256, S), Err(invalid_value(1000)));
    keeps_working(&logging, &driver);

    let thread_safe = ThreadSafeResourceAdaptor::new(driver.clone());
    assert_eq!(thread_safe.allocate(1000, 256, S), Err(invalid_value(1000)));
    keeps_working(&thread_safe, &driver);

    let aligned = AlignedResourceAdaptor::new(driver.clone(), 4096, 0).unwrap();
    assert!(matches!(aligned.allocate(1000, 4096, S), Err(Error::CudaAlloc { .. })));
    keeps_working(&aligned, &driver);

    assert_eq!(driver.outstanding(), 0);
}

#[test]
fn the_failure_callback_is_not_called_for_it() {
    // RMM's failure_callback_resource_adaptor catches rmm::out_of_memory only.
    let driver = FailingDriver::failing();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let adaptor = FailureCallbackResourceAdaptor::new(driver.clone(), move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
        true
    });
    assert_eq!(adaptor.allocate(1000, 256, S), Err(invalid_value(1000)));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(driver.asked(), vec![1000], "asked once, not retried");
}

#[test]
fn a_callback_resource_passes_its_functions_error_on() {
    // SAFETY: the function hands out nothing; the free function is never reached.
    let callback = unsafe { CallbackMemoryResource::new(|bytes, _, _| Err(invalid_value(bytes)), |_, _, _, _| Ok(())) };
    assert_eq!(callback.allocate(512, 256, S), Err(invalid_value(512)));
    let stats = StatisticsResourceAdaptor::new(callback);
    assert_eq!(stats.allocate(512, 256, S), Err(invalid_value(512)));
    assert_eq!(stats.allocations_counter().total, 0);
}

#[test]
fn a_growing_pool_backs_off_then_refuses_in_rmms_words_quoting_it() {
    let driver = FailingDriver::failing();
    let pool = PoolMemoryResource::new(driver.clone(), 0, Some(8 * MIB)).unwrap();
    let e = pool.allocate(MIB, 256, S).unwrap_err();
    // RMM's pool catches the upstream's rmm::bad_alloc and throws rmm::out_of_memory.
    assert!(e.is_out_of_memory(), "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with("Maximum pool size exceeded (failed to allocate 1024.000000 KiB): std::bad_alloc: CUDA error"),
        "{text}"
    );
    assert!(text.contains("CUDA_ERROR_INVALID_VALUE"), "{text}");
    // Half the room, then halving down to the request, as after the upstream's out-of-memory.
    assert_eq!(driver.asked(), vec![4 * MIB, 2 * MIB, MIB]);
    assert_eq!((pool.pool_size(), driver.outstanding()), (0, 0));
    pool.check_invariants().unwrap();
    keeps_working(&pool, &driver);
    // Through a statistics adaptor over the pool, the refusal counts nothing either.
    let pool = Arc::new(pool);
    let stats = StatisticsResourceAdaptor::new(pool.clone());
    assert!(stats.allocate(16 * MIB, 256, S).unwrap_err().is_out_of_memory());
    assert_eq!(stats.allocations_counter().total, 0);
}

#[test]
fn a_pool_or_arena_whose_first_chunk_fails_is_not_made_and_holds_nothing() {
    let driver = FailingDriver::failing();
    // RMM's pool makes its first chunk as it grows: the refusal is its out-of-memory error.
    let e = PoolMemoryResource::new(driver.clone(), MIB, None).err().unwrap();
    assert!(e.is_out_of_memory(), "{e}");
    assert!(e.to_string().contains("std::bad_alloc: CUDA error (failed to allocate 1048576 bytes)"), "{e}");
    let arena = ArenaMemoryResource::new(driver.clone(), Some(4 * MIB), false);
    assert!(matches!(arena, Err(Error::CudaAlloc { ref name, .. }) if name == "CUDA_ERROR_INVALID_VALUE"));
    assert_eq!(driver.outstanding(), 0);
}

#[test]
fn fixed_size_and_binning_pass_it_on_unchanged() {
    let driver = Arc::new(FailingDriver::default());
    let fixed = FixedSizeMemoryResource::new(driver.clone(), 1024, 2).unwrap();
    let a = fixed.allocate(1024, 256, S).unwrap();
    let b = fixed.allocate(1024, 256, S).unwrap();
    driver.set_failing(true);
    // RMM's fixed_size_memory_resource lets its upstream's exception through.
    assert!(matches!(fixed.allocate(1024, 256, S), Err(Error::CudaAlloc { requested: 2048, .. })));
    fixed.deallocate(a, 1024, 256, S).unwrap();
    let c = fixed.allocate(1024, 256, S).unwrap();
    fixed.deallocate(c, 1024, 256, S).unwrap();
    fixed.deallocate(b, 1024, 256, S).unwrap();
    drop(fixed);
    assert_eq!(driver.outstanding(), 0);

    // A size no bin serves goes to the upstream; a bin that must grow asks it too.
    driver.set_failing(false);
    let binning = BinningMemoryResource::with_bins(driver.clone(), 10, 12).unwrap();
    driver.set_failing(true);
    assert_eq!(binning.allocate(MIB, 256, S), Err(invalid_value(MIB)));
    // The 1 KiB bin serves its first chunk, then must grow.
    let mut held = Vec::new();
    let grown = loop {
        match binning.allocate(1024, 256, S) {
            Ok(p) if held.len() < 100_000 => held.push(p),
            other => break other,
        }
    };
    assert!(matches!(grown, Err(Error::CudaAlloc { requested, .. }) if requested > 1024), "{grown:?}");
    for p in held {
        binning.deallocate(p, 1024, 256, S).unwrap();
    }
    keeps_working(&binning, &driver);
    drop(binning);
    assert_eq!(driver.outstanding(), 0);
}

/// The case met on a GPU: a view of a pool the user made and then destroyed. RMM's
/// `cudaMallocFromPoolAsync` then fails with `cudaErrorInvalidValue`, which RMM_CUDA_TRY_ALLOC
/// throws as `rmm::bad_alloc`.
#[test]
fn a_view_of_a_pool_destroyed_afterwards_fails_to_allocate_with_the_cuda_error() {
    use cudarc::driver::sys;
    use rmm::resource::CudaAsyncViewMemoryResource;
    if !common::gpu() {
        return;
    }
    // SAFETY: CUmemPoolProps is plain C data; all zeroes is valid and clears the reserved bytes.
    let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
    props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = rmm::DeviceId::current().unwrap().0;
    let mut handle: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: a context is current (DeviceId::current made one so); both pointers are valid.
    assert_eq!(unsafe { sys::cuMemPoolCreate(&mut handle, &props) }, common::CU_OK);
    // SAFETY: the pool is live now; it is destroyed below while the view still names it, which
    // breaks the constructor's contract on purpose: the driver answers with an error code.
    let view = Arc::new(unsafe { CudaAsyncViewMemoryResource::new(handle) }.unwrap());
    let p = view.allocate(MIB, 256, S).unwrap();
    view.deallocate(p, MIB, 256, S).unwrap();
    // SAFETY: a context is current.
    assert_eq!(unsafe { sys::cuCtxSynchronize() }, common::CU_OK);
    // SAFETY: made above; its one block was freed and the free has completed.
    assert_eq!(unsafe { sys::cuMemPoolDestroy(handle) }, common::CU_OK);

    let e = view.allocate(MIB, 256, S).unwrap_err();
    assert!(
        matches!(e, Error::CudaAlloc { requested: MIB, call: "cuMemAllocFromPoolAsync", ref name, .. }
            if name == "CUDA_ERROR_INVALID_VALUE"),
        "{e:?}"
    );
    let stats = StatisticsResourceAdaptor::new(view.clone());
    assert!(matches!(stats.allocate(MIB, 256, S), Err(Error::CudaAlloc { .. })));
    assert_eq!(stats.allocations_counter().total, 0);
    let pool = PoolMemoryResource::new(view.clone(), 0, None).unwrap();
    let refused = pool.allocate(MIB, 256, S).unwrap_err();
    assert!(refused.is_out_of_memory() && refused.to_string().contains("CUDA_ERROR_INVALID_VALUE"), "{refused}");
    assert_eq!(pool.pool_size(), 0);
}
