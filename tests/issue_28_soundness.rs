//! Soundness under any pointer: frees through the wrong resource, buffers lent to cudarc, views of
//! driver pools. Every test needs a GPU and says `skipped` without one.

use cudarc::driver::sys;
use rmm::resource::{CudaMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, Error, MemoryResource, Misuse};

const S: CudaStreamView = CudaStreamView::DEFAULT;

fn gpu() -> bool {
    let yes = rmm::cuda_available();
    if !yes {
        println!("skipped: no CUDA device");
    }
    yes
}

fn cu(status: sys::CUresult, call: &str) {
    assert_eq!(status, sys::CUresult::CUDA_SUCCESS, "{call} failed");
}

/// Writes `value` over `bytes` of device memory at `ptr` and reads it back.
fn write_and_check(ptr: *mut u8, bytes: usize, value: u8) {
    // SAFETY: ptr is a live device allocation of at least `bytes`.
    cu(unsafe { sys::cuMemsetD8_v2(ptr as u64, value, bytes) }, "cuMemsetD8");
    let mut back = vec![0u8; bytes];
    // SAFETY: as above; back has room for `bytes`.
    cu(unsafe { sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), ptr as u64, bytes) }, "cuMemcpyDtoH");
    assert!(back.iter().all(|&b| b == value), "device memory at {ptr:p} lost its contents");
}

#[test]
fn a_pool_block_freed_through_cuda_memory_resource_is_misuse_and_the_pool_keeps_its_chunk() {
    if !gpu() {
        return;
    }
    let pool = PoolMemoryResource::new(CudaMemoryResource::new(), 1 << 20, None).unwrap();
    let first = pool.allocate(4096, 256, S).unwrap();
    // Freed through another (equal) instance of the pool's upstream: once this released the whole
    // chunk with cuMemFree while the pool kept handing it out.
    let refused = CudaMemoryResource::new().deallocate(first, 4096, 256, S);
    assert!(
        matches!(refused, Err(Error::Misuse(Misuse::WrongSize { .. } | Misuse::UnknownPointer { .. }))),
        "{refused:?}"
    );
    // The chunk is still the pool's: both the block and a neighbour are usable.
    let second = pool.allocate(4096, 256, S).unwrap();
    write_and_check(first, 4096, 0x11);
    write_and_check(second, 4096, 0x22);
    write_and_check(first, 4096, 0x11);
    pool.deallocate(first, 4096, 256, S).unwrap();
    pool.deallocate(second, 4096, 256, S).unwrap();
    pool.check_invariants().unwrap();
    // A block of the resource itself still frees through any instance, with its own size only.
    let own = CudaMemoryResource::new().allocate(1000, 256, S).unwrap();
    let wrong = CudaMemoryResource::new().deallocate(own, 999, 256, S);
    assert_eq!(wrong, Err(Error::Misuse(Misuse::WrongSize { ptr: own as usize, allocated: 1000, given: 999 })));
    CudaMemoryResource::new().deallocate(own, 1000, 256, S).unwrap();
}
