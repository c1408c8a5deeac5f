//! The cuda_async family (export handle types, views, the managed pool), the system and
//! SAM-headroom resources, and a pool over pinned host memory. GPU tests skip without a device;
//! those needing a capability skip with the reason where the device lacks it. No test makes a
//! driver call fail on purpose: unsupported requests are refused before reaching the driver.

#[path = "common/mod.rs"]
mod common;

use common::{device_keeps_working, device_supports, gpu, CU_OK};
use cudarc::driver::sys;
use rmm::capabilities::{self, AllocationHandleType};
use rmm::resource::{
    CudaAsyncManagedMemoryResource, CudaAsyncMemoryResource, CudaAsyncViewMemoryResource, PinnedHostMemoryResource,
    PoolMemoryResource, SamHeadroomMemoryResource, SystemMemoryResource,
};
use rmm::{CudaStreamView, DeviceId, Error, MemoryResource};

const S: CudaStreamView = CudaStreamView::DEFAULT;

#[test]
fn export_handle_types_are_made_where_supported_and_refused_elsewhere() {
    if !gpu() {
        return;
    }
    let device = DeviceId::current().unwrap();
    let mask = capabilities::supported_export_handle_types(device).unwrap();
    println!("device {} supports export handle types {mask:#x}", device.0);
    for t in [AllocationHandleType::PosixFileDescriptor, AllocationHandleType::Win32, AllocationHandleType::Win32Kmt] {
        let made = CudaAsyncMemoryResource::with_export_handle_type(None, None, t);
        if mask & t as u32 != 0 {
            let r = made.unwrap_or_else(|e| panic!("{t:?} is supported but: {e}"));
            device_keeps_working(&r);
        } else {
            assert!(matches!(made, Err(Error::Unsupported(ref m)) if m.contains("handle type")), "{t:?}: {made:?}");
        }
    }
    // Linux has no Win32 handles.
    assert_eq!(mask & (AllocationHandleType::Win32 as u32 | AllocationHandleType::Win32Kmt as u32), 0);
    // Fabric pools also need an IMEX channel, which the device attributes cannot tell: one is made
    // only where the driver says fabric is unsupported, to check the refusal.
    if mask & AllocationHandleType::Fabric as u32 == 0 {
        let made = CudaAsyncMemoryResource::with_export_handle_type(None, None, AllocationHandleType::Fabric);
        assert!(matches!(made, Err(Error::Unsupported(_))), "{made:?}");
    }
}

#[test]
fn export_handle_types_combine_where_each_is_supported() {
    if !gpu() {
        return;
    }
    use AllocationHandleType::{Fabric, PosixFileDescriptor};
    let mask = capabilities::supported_export_handle_types(DeviceId::current().unwrap()).unwrap();
    let both = PosixFileDescriptor as u32 | Fabric as u32;
    // Where one is missing the pair is refused before the driver is asked (fabric pools are made
    // nowhere here: they also need an IMEX channel the attributes cannot tell of).
    if mask & both != both {
        let made = CudaAsyncMemoryResource::with_export_handle_types(None, None, &[PosixFileDescriptor, Fabric]);
        assert!(
            matches!(made, Err(Error::Unsupported(ref m)) if m.contains("PosixFileDescriptor | Fabric")),
            "{made:?}"
        );
    }
    if mask & PosixFileDescriptor as u32 != 0 {
        let one = CudaAsyncMemoryResource::with_export_handle_types(None, None, &[PosixFileDescriptor]).unwrap();
        device_keeps_working(&one);
    }
    device_keeps_working(&CudaAsyncMemoryResource::with_export_handle_types(None, None, &[]).unwrap());
}

#[test]
fn release_threshold_defaults_to_u64_max_and_keeps_a_given_one() {
    if !gpu() {
        return;
    }
    assert_eq!(CudaAsyncMemoryResource::new(None, None).unwrap().release_threshold(), Ok(u64::MAX));
    assert_eq!(CudaAsyncMemoryResource::new(None, Some(64 << 20)).unwrap().release_threshold(), Ok(64 << 20));
}

/// A pool the test makes and destroys itself, with the driver directly.
fn raw_pool() -> sys::CUmemoryPool {
    // SAFETY: all-zero CUmemPoolProps is valid; the fields set below make it a device pool.
    let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
    props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = DeviceId::current().unwrap().0;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: a context is current (DeviceId::current made one so); both pointers are valid.
    assert_eq!(unsafe { sys::cuMemPoolCreate(&mut pool, &props) }, CU_OK);
    pool
}

#[test]
fn a_view_does_not_destroy_the_pool_it_views() {
    if !gpu() {
        return;
    }
    let pool = raw_pool();
    {
        // SAFETY: the pool lives until the end of this test.
        let view = unsafe { CudaAsyncViewMemoryResource::new(pool) }.unwrap();
        assert_eq!(view.pool_handle(), pool);
        device_keeps_working(&view);
        let p = view.allocate(1 << 20, 256, S).unwrap();
        // SAFETY: as above.
        let other = unsafe { CudaAsyncViewMemoryResource::new(pool) }.unwrap();
        assert!(view.is_equal(&other));
        other.deallocate(p, 1 << 20, 256, S).unwrap();
        S.synchronize().unwrap();
    }
    {
        // SAFETY: the views are gone; the pool is still ours and alive, so this must succeed.
        let view = unsafe { CudaAsyncViewMemoryResource::new(pool) }.unwrap();
        device_keeps_working(&view);
        S.synchronize().unwrap();
    }
    // SAFETY: the pool was made above and nothing of it is outstanding.
    assert_eq!(unsafe { sys::cuMemPoolDestroy(pool) }, CU_OK, "a view destroyed the pool");

    // A view of an owning resource's pool is equal to it, both ways.
    let owner = CudaAsyncMemoryResource::new(None, None).unwrap();
    {
        // SAFETY: owner outlives the view.
        let view = unsafe { CudaAsyncViewMemoryResource::new(owner.pool_handle()) }.unwrap();
        assert!(view.is_equal(&owner) && owner.is_equal(&view));
        let p = owner.allocate(4096, 256, S).unwrap();
        view.deallocate(p, 4096, 256, S).unwrap();
    }
    device_keeps_working(&owner);
}

#[test]
fn managed_pool_is_used_where_supported_and_refused_elsewhere() {
    if !gpu() {
        return;
    }
    let device = DeviceId::current().unwrap();
    if !capabilities::async_managed_alloc_supported(device).unwrap() {
        let made = CudaAsyncManagedMemoryResource::new();
        assert!(matches!(made, Err(Error::Unsupported(ref m)) if m.contains("13.0")), "{made:?}");
        println!("skipped the allocations: device {} has no pools of managed memory", device.0);
        return;
    }
    let r = CudaAsyncManagedMemoryResource::new().unwrap();
    assert_eq!(r.release_threshold(), Ok(u64::MAX));
    assert!(r.is_host_accessible() && r.is_device_accessible());
    assert!(r.is_equal(&CudaAsyncManagedMemoryResource::new().unwrap()), "one default pool per device");
    let bytes = 1 << 20;
    let p = r.allocate(bytes, 256, S).unwrap();
    // SAFETY: p is live managed memory of `bytes`.
    assert_eq!(unsafe { sys::cuMemsetD8_v2(p as u64, 0x3C, bytes) }, CU_OK);
    S.synchronize().unwrap();
    // SAFETY: device work on p has finished; managed memory is host accessible.
    assert!(unsafe { std::slice::from_raw_parts(p, bytes) }.iter().all(|&b| b == 0x3C));
    r.deallocate(p, bytes, 256, S).unwrap();
}

#[test]
fn system_memory_is_used_where_supported_and_refused_elsewhere() {
    if !gpu() {
        return;
    }
    if !device_supports("system-allocated memory", capabilities::system_memory_supported) {
        let made = SystemMemoryResource::new();
        assert!(
            matches!(made, Err(Error::Unsupported(ref m)) if m.contains("System memory allocator is not supported")),
            "{made:?}"
        );
        assert!(matches!(SamHeadroomMemoryResource::new(0), Err(Error::Unsupported(_))));
        return;
    }
    let r = SystemMemoryResource::new().unwrap();
    let bytes = 1 << 20;
    let p = r.allocate(bytes, 256, S).unwrap();
    // SAFETY: p is live system memory of `bytes` the device may access (pageable memory access).
    assert_eq!(unsafe { sys::cuMemsetD8_v2(p as u64, 0x7E, bytes) }, CU_OK);
    S.synchronize().unwrap();
    // SAFETY: the device's write has finished.
    assert!(unsafe { std::slice::from_raw_parts(p, bytes) }.iter().all(|&b| b == 0x7E));
    // Another instance may free it: all are equal.
    SystemMemoryResource::new().unwrap().deallocate(p, bytes, 256, S).unwrap();
}

/// The preferred location of the range at `p` (a device ordinal, or -1 for the host).
fn preferred_location(p: *mut u8, bytes: usize) -> i32 {
    let mut location: i32 = -2;
    // SAFETY: p is a live range of `bytes` system memory; location is a 4-byte out value.
    let status = unsafe {
        sys::cuMemRangeGetAttribute(
            (&mut location as *mut i32).cast(),
            4,
            sys::CUmem_range_attribute::CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
            p as u64,
            bytes,
        )
    };
    assert_eq!(status, CU_OK);
    location
}

#[test]
fn sam_headroom_prefers_the_device_only_above_the_headroom() {
    if !gpu() || !device_supports("system-allocated memory", capabilities::system_memory_supported) {
        return;
    }
    let bytes = 4 << 20;
    let device = DeviceId::current().unwrap().0;
    let roomy = SamHeadroomMemoryResource::new(0).unwrap();
    let p = roomy.allocate(bytes, 256, S).unwrap();
    assert_eq!(preferred_location(p, bytes), device);
    roomy.deallocate(p, bytes, 256, S).unwrap();

    let (_, total) = rmm::available_device_memory().unwrap();
    let tight = SamHeadroomMemoryResource::new(total).unwrap();
    let p = tight.allocate(bytes, 256, S).unwrap();
    assert_eq!(preferred_location(p, bytes), -1, "all of the device is headroom: the host is preferred");
    assert!(!tight.is_equal(&roomy) && tight.is_equal(&SamHeadroomMemoryResource::new(total).unwrap()));
    tight.deallocate(p, bytes, 256, S).unwrap();
}

#[test]
fn a_pool_over_pinned_host_memory_is_host_accessible() {
    if !gpu() {
        return;
    }
    let pool = PoolMemoryResource::new(PinnedHostMemoryResource::new(), 1 << 20, None).unwrap();
    assert!(pool.is_host_accessible() && pool.is_device_accessible());
    let p = pool.allocate(4096, 256, S).unwrap();
    // SAFETY: p is a live block of 4096 bytes of pinned host memory.
    let host = unsafe { std::slice::from_raw_parts_mut(p, 4096) };
    host.fill(0xA5);
    let scratch = rmm::resource::CudaMemoryResource::new().allocate(4096, 256, S).unwrap();
    // SAFETY: both blocks are live and 4096 bytes long; the copies are synchronous for the host.
    assert_eq!(unsafe { sys::cuMemcpyHtoD_v2(scratch as u64, p.cast(), 4096) }, CU_OK);
    host.fill(0);
    // SAFETY: as above.
    assert_eq!(unsafe { sys::cuMemcpyDtoH_v2(p.cast(), scratch as u64, 4096) }, CU_OK);
    assert!(host.iter().all(|&b| b == 0xA5));
    rmm::resource::CudaMemoryResource::new().deallocate(scratch, 4096, 256, S).unwrap();
    pool.deallocate(p, 4096, 256, S).unwrap();
}
