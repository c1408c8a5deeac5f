//! Under a maximum pool size the pool grows as RMM 26.10's does: by the larger of the request and
//! half the room left, halving toward the request while the upstream refuses. Host memory only.

use rmm::adaptor::LimitingResourceAdaptor;
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, Error, MemoryResource};

const S: CudaStreamView = CudaStreamView::DEFAULT;

fn limited(limit: usize) -> LimitingResourceAdaptor<HostMemoryResource> {
    LimitingResourceAdaptor::new(HostMemoryResource::new(), limit)
}

#[test]
fn a_capped_pool_over_a_limited_upstream_fails_and_fits_where_rmm_does() {
    let pool = PoolMemoryResource::new(limited(6000), 0, Some(8192)).unwrap();
    let a = pool.allocate(1000, 256, S).unwrap();
    // Half the room (4096) was taken, not just the request.
    assert_eq!(pool.pool_size(), 4096);
    // 4096 more would pass the upstream's 6000 bytes, and the request itself is 4096.
    let e = pool.allocate(4000, 256, S).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    assert_eq!(pool.pool_size(), 4096);
    // The first chunk still holds 3072 free bytes.
    let b = pool.allocate(2000, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 4096);
    pool.deallocate(b, 2000, 256, S).unwrap();
    pool.deallocate(a, 1000, 256, S).unwrap();
}

#[test]
fn the_size_halves_toward_the_request_while_the_upstream_refuses() {
    // Room 1 MiB: RMM asks for 512 KiB, then 256 KiB, then 128 KiB, which the upstream grants.
    let pool = PoolMemoryResource::new(limited(200 << 10), 0, Some(1 << 20)).unwrap();
    let p = pool.allocate(1000, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 128 << 10);
    // Room 896 KiB: 448 KiB, 224 KiB are refused; the request (40 KiB) cannot be halved below.
    let q = pool.allocate(40 << 10, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 128 << 10, "served from the first chunk");
    let e = pool.allocate(100 << 10, 256, S).unwrap_err();
    assert!(e.is_out_of_memory(), "{e}");
    pool.deallocate(q, 40 << 10, 256, S).unwrap();
    pool.deallocate(p, 1000, 256, S).unwrap();
}

#[test]
fn a_request_above_the_room_left_is_out_of_memory_without_asking_the_upstream() {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 0, Some(4096)).unwrap();
    let p = pool.allocate(300, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 2048, "the larger of 512 and half of 4096");
    let e = pool.allocate(3000, 256, S).unwrap_err();
    assert!(e.is_out_of_memory(), "{e}");
    assert_eq!(pool.upstream().outstanding(), (1, 2048));
    pool.deallocate(p, 300, 256, S).unwrap();
}

#[test]
fn without_a_maximum_the_pool_keeps_its_own_rule() {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 0, None).unwrap();
    let p = pool.allocate(1000, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 1024, "the request alone, from an empty pool");
    pool.deallocate(p, 1000, 256, S).unwrap();
}

#[test]
fn size_arguments_are_checked_as_rmm_checks_them() {
    let make = |initial, max| PoolMemoryResource::new(HostMemoryResource::new(), initial, max).err().unwrap();
    assert!(matches!(make(1000, None), Error::InvalidArgument(_)));
    assert!(matches!(make(0, Some(1000)), Error::InvalidArgument(_)));
    assert!(matches!(make(2048, Some(1024)), Error::InvalidArgument(_)));
    // More than any pool can hold: RMM asks the upstream, which refuses: out of memory.
    let huge = (u32::MAX as usize + 1) << 8;
    assert!(make(huge, None).is_out_of_memory(), "{}", make(huge, None));
}
