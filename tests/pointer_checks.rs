//! No crash on a bad pointer: `rmm::pointer` tells what memory an address a caller handed over is,
//! and `copy::copy_async_checked` refuses, with `Error::BadPointer`, ranges no copy can use. The
//! host tests run without a GPU (every address is then host memory); the GPU tests ask the driver
//! about each kind of memory, and make no failing driver call (cuPointerGetAttributes answers
//! "unknown" for an address it does not know).

mod common;

use rmm::copy::copy_async_checked;
use rmm::pointer::{check, memory_kind, Access, MemoryKind};
use rmm::resource::{
    CudaAsyncMemoryResource, CudaMemoryResource, ManagedMemoryResource, PinnedHostMemoryResource, PoolMemoryResource,
    VirtualPoolMemoryResource,
};
use rmm::{CudaStreamView, Error, MemoryResource};

const S: CudaStreamView = CudaStreamView::DEFAULT;

fn is_bad_pointer<T: std::fmt::Debug>(r: &rmm::Result<T>) -> bool {
    matches!(r, Err(Error::BadPointer { .. }))
}

#[test]
fn host_memory_is_pageable_and_small_addresses_are_unmapped() {
    let v = vec![1u8; 4096];
    let kind = memory_kind(v.as_ptr() as usize).unwrap();
    // Pageable, unless a driver that addresses all host memory (HMM) says otherwise.
    assert_ne!(kind, MemoryKind::Unmapped);
    if !common::gpu() {
        assert_eq!(kind, MemoryKind::PageableHost);
    }
    for addr in [8usize, 0x1000, 0xFFFF_8000_0000_0000] {
        assert_eq!(memory_kind(addr).unwrap(), MemoryKind::Unmapped, "{addr:#x}");
    }
}

#[test]
fn checked_copies_refuse_bad_pointers_and_copy_good_ones() {
    let src = vec![5u8; 256];
    let mut dst = vec![0u8; 256];
    for (from, to, n) in [
        (8usize, dst.as_mut_ptr() as usize, 16usize),
        (src.as_ptr() as usize, 8, 16),
        (0, dst.as_mut_ptr() as usize, 16),
        (usize::MAX - 7, dst.as_mut_ptr() as usize, 16),
    ] {
        // SAFETY: the check refuses each of these before any copy is made.
        let r = unsafe { copy_async_checked(to as *mut u8, from as *const u8, n, S) };
        assert!(is_bad_pointer(&r), "{from:#x} -> {to:#x}: {r:?}");
    }
    let message = check(8, 16, Access::CopyFrom).unwrap_err().to_string();
    assert_eq!(
        message,
        "bad pointer 0x8 (16 bytes): neither device, managed nor readable host memory of this process (unmapped)"
    );
    if common::gpu() {
        // SAFETY: both are live host buffers of 256 bytes; the stream is waited for before either dies.
        unsafe { copy_async_checked(dst.as_mut_ptr(), src.as_ptr(), 256, S) }.unwrap();
        S.synchronize().unwrap();
        assert_eq!(dst, src);
    }
}

#[test]
fn gpu_each_kind_of_driver_memory_is_known_and_accepted() {
    if !common::gpu() {
        return;
    }
    let cuda = CudaMemoryResource::new();
    let managed = ManagedMemoryResource::new();
    let pinned = PinnedHostMemoryResource::new();
    let cases: [(&dyn MemoryResource, MemoryKind); 3] =
        [(&cuda, MemoryKind::Device), (&managed, MemoryKind::Managed), (&pinned, MemoryKind::PinnedHost)];
    for (mr, kind) in cases {
        let p = mr.allocate(1 << 20, 256, S).unwrap();
        assert_eq!(memory_kind(p as usize).unwrap(), kind);
        assert_eq!(memory_kind(p as usize + (1 << 20) - 1).unwrap(), kind);
        for access in [Access::CopyFrom, Access::CopyTo, Access::Device] {
            assert_eq!(check(p as usize, 1 << 20, access), Ok(()), "{kind:?} {access:?}");
        }
        mr.deallocate(p, 1 << 20, 256, S).unwrap();
    }
}

#[test]
fn gpu_device_access_refuses_pageable_memory_and_ranges_that_run_off() {
    if !common::gpu() {
        return;
    }
    let v = vec![0u8; 4096];
    if memory_kind(v.as_ptr() as usize).unwrap() == MemoryKind::PageableHost {
        assert!(is_bad_pointer(&check(v.as_ptr() as usize, 4096, Access::Device)));
    }
    assert_eq!(check(v.as_ptr() as usize, 4096, Access::CopyFrom), Ok(()));
    let cuda = CudaMemoryResource::new();
    let p = cuda.allocate(1 << 21, 256, S).unwrap();
    // Past the end of the allocation: the last byte is unknown to the driver.
    assert!(is_bad_pointer(&check(p as usize, 1 << 40, Access::CopyFrom)));
    cuda.deallocate(p, 1 << 21, 256, S).unwrap();
    // Freed device memory: the driver no longer knows it, and the process cannot read it.
    assert!(is_bad_pointer(&check(p as usize, 16, Access::CopyFrom)));
}

#[test]
fn gpu_blocks_of_every_device_pool_are_device_memory() {
    // What Python's DeviceBuffer(ptr=) gets from the usual resources must pass: a stream-ordered
    // driver pool, a pool's block inside a chunk, and a virtual pool's mapped memory (a block may
    // span two mappings: both ends are device memory).
    if !common::gpu() {
        return;
    }
    let asynchronous = CudaAsyncMemoryResource::new(None, None).unwrap();
    let pool = PoolMemoryResource::new(CudaMemoryResource::new(), 8 << 20, None).unwrap();
    let mut resources: Vec<Box<dyn MemoryResource>> = vec![Box::new(asynchronous), Box::new(pool)];
    match VirtualPoolMemoryResource::new(64 << 20, 4 << 20) {
        Ok(virtual_pool) => resources.push(Box::new(virtual_pool)),
        Err(e) => println!("no virtual pool here: {e}"),
    }
    for mr in &resources {
        let blocks: Vec<*mut u8> = (0..4).map(|_| mr.allocate(3 << 20, 256, S).unwrap()).collect();
        for &p in &blocks {
            assert_eq!(memory_kind(p as usize).unwrap(), MemoryKind::Device);
            assert_eq!(check(p as usize, 3 << 20, Access::CopyFrom), Ok(()));
            assert_eq!(check(p as usize, 3 << 20, Access::Device), Ok(()));
        }
        for p in blocks {
            mr.deallocate(p, 3 << 20, 256, S).unwrap();
        }
    }
}

#[test]
fn gpu_a_range_across_two_adjacent_allocations_is_refused() {
    // Both ends of such a range are device memory the driver knows, yet it is two buffers: the
    // check asks the driver for the allocation of its first byte and refuses what runs past it.
    if !common::gpu() {
        return;
    }
    const BLOCK: usize = 2 << 20;
    let cuda = CudaMemoryResource::new();
    // cuMemAlloc places blocks of its granularity side by side: some two of these touch.
    let mut blocks: Vec<usize> = (0..16).map(|_| cuda.allocate(BLOCK, 256, S).unwrap() as usize).collect();
    blocks.sort_unstable();
    let low = blocks.windows(2).find(|w| w[0] + BLOCK == w[1]).map(|w| w[0]);
    let low = low.unwrap_or_else(|| panic!("no two of 16 blocks from cuMemAlloc touch: {blocks:#x?}"));
    let high = low + BLOCK;
    assert_eq!(memory_kind(high - 1).unwrap(), MemoryKind::Device);
    assert_eq!(memory_kind(high).unwrap(), MemoryKind::Device);
    for access in [Access::CopyFrom, Access::CopyTo, Access::Device] {
        let across = check(low + BLOCK / 2, BLOCK, access);
        assert!(is_bad_pointer(&across), "{access:?}: {across:?}");
        assert!(across.unwrap_err().to_string().contains("past the end of its allocation"));
        assert!(is_bad_pointer(&check(low, 2 * BLOCK, access)), "{access:?}");
        assert_eq!(check(low, BLOCK, access), Ok(()), "{access:?}");
        assert_eq!(check(high, BLOCK, access), Ok(()), "{access:?}");
        assert_eq!(check(low + BLOCK / 2, BLOCK / 2, access), Ok(()), "{access:?}");
    }
    for p in blocks {
        cuda.deallocate(p as *mut u8, BLOCK, 256, S).unwrap();
    }
}
