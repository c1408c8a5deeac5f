//! Soundness under any pointer: frees through the wrong resource, buffers lent to cudarc, views of
//! driver pools. Every test needs a GPU and says `skipped` without one.

mod common;

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

#[test]
fn the_stream_a_cudarc_view_reports_outlives_the_buffer_and_its_stream() {
    if !gpu() {
        return;
    }
    use cudarc::driver::{CudaContext, DeviceSlice};
    use rmm::{CudaStream, DeviceBuffer};
    let ctx = CudaContext::new(0).unwrap();
    let (kept, dead) = {
        let stream = CudaStream::new().unwrap();
        let buf = DeviceBuffer::<u32>::zeroed(256, stream.view()).unwrap();
        let view = buf.cudarc_view(&ctx).unwrap();
        // cudarc's trait hands out the view's stream as an `Arc` that anyone may keep.
        let kept = view.stream().clone();
        (kept, stream.view().handle())
        // The view, the buffer and the stream are dropped here.
    };
    assert_ne!(kept.cu_stream() as usize, dead, "a kept clone names the destroyed stream");
    // What is kept is a stream of the context that needs no owner: using it is sound.
    assert!(kept.cu_stream().is_null(), "the context's default stream");
    kept.synchronize().unwrap();
    let copied = kept.clone_htod(&[7u32; 16]).unwrap();
    assert_eq!(kept.clone_dtoh(&copied).unwrap(), [7u32; 16]);
}

#[test]
fn a_cudarc_view_with_the_context_of_another_stream_is_refused() {
    if !gpu() {
        return;
    }
    use cudarc::driver::{CudaContext, DeviceSlice};
    use rmm::{CudaStream, DeviceBuffer};
    let ctx = CudaContext::new(0).unwrap();
    let other = common::contexts::push_second_context();
    let foreign = CudaStream::new().unwrap(); // made in `other`, current now
    common::contexts::pop_context(other);
    {
        let cuda: rmm::SharedResource = std::sync::Arc::new(CudaMemoryResource::new());
        let mut buf = DeviceBuffer::<u8>::new_in(1024, foreign.view(), cuda.clone()).unwrap();
        let refused = buf.cudarc_view(&ctx).map(|_| ());
        assert!(matches!(refused, Err(Error::InvalidArgument(ref m)) if m.contains("context")), "{refused:?}");
        assert!(buf.cudarc_view_mut(&ctx).is_err());
        // A buffer on a stream of the context given is lent as before.
        let own = CudaStream::new().unwrap();
        let mine = DeviceBuffer::<u8>::new_in(1024, own.view(), cuda).unwrap();
        assert_eq!(mine.cudarc_view(&ctx).unwrap().len(), 1024);
        drop((buf, mine));
        own.synchronize().unwrap();
    }
    foreign.synchronize().unwrap();
    drop(foreign);
    // SAFETY: nothing made in `other` is left.
    cu(unsafe { sys::cuCtxDestroy_v2(other) }, "cuCtxDestroy");
}

#[test]
fn a_view_of_an_owning_async_resource_keeps_its_pool_alive() {
    if !gpu() {
        return;
    }
    use rmm::resource::{CudaAsyncMemoryResource, CudaAsyncViewMemoryResource};
    use std::sync::Arc;
    let owner = Arc::new(CudaAsyncMemoryResource::new(None, None).unwrap());
    let pool = owner.pool_handle();
    let view = CudaAsyncViewMemoryResource::of(owner.clone());
    assert!(view.is_equal(&*owner) && owner.is_equal(&view));
    drop(owner); // the view's is now the only handle on the owner: the pool must stay
    assert_eq!(view.pool_handle(), pool);
    assert!(view.owner().is_some());
    let p = view.allocate(1 << 20, 256, S).unwrap();
    write_and_check(p, 1 << 20, 0x3c);
    view.deallocate(p, 1 << 20, 256, S).unwrap();
    S.synchronize().unwrap();
    // A clone shares the owner; the pool goes when the last of them does.
    let clone = view.clone();
    drop(view);
    let p = clone.allocate(4096, 256, S).unwrap();
    clone.deallocate(p, 4096, 256, S).unwrap();
    S.synchronize().unwrap();
}
