//! A resource that stores the current context keeps it valid: when that is a primary context that
//! someone else made current and then released, the crate's own retain keeps it alive, so the
//! resource's later push of it (to synchronise on drop) names a live context. Its own binary: the
//! test releases a primary context, which no other test may see.

use cudarc::driver::sys;
use rmm::resource::CudaAsyncMemoryResource;
use rmm::{CudaStreamView, MemoryResource};

fn cu(status: sys::CUresult, call: &str) {
    assert_eq!(status, sys::CUresult::CUDA_SUCCESS, "{call} failed");
}

#[test]
fn a_primary_context_stored_by_a_resource_outlives_the_program_releasing_it() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    let mut device: sys::CUdevice = 0;
    // SAFETY: the driver is initialised (cuda_available); device is a valid out pointer.
    cu(unsafe { sys::cuDeviceGet(&mut device, 0) }, "cuDeviceGet");
    let active = || {
        let (mut flags, mut active) = (0u32, 0i32);
        // SAFETY: valid out pointers.
        cu(unsafe { sys::cuDevicePrimaryCtxGetState(device, &mut flags, &mut active) }, "cuDevicePrimaryCtxGetState");
        active != 0
    };
    // The program (as the runtime or cuda-python would) retains the primary context and makes it
    // current; nothing in this process has retained it before.
    let mut primary: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: valid out pointer.
    cu(unsafe { sys::cuDevicePrimaryCtxRetain(&mut primary, device) }, "cuDevicePrimaryCtxRetain");
    // SAFETY: just retained.
    cu(unsafe { sys::cuCtxSetCurrent(primary) }, "cuCtxSetCurrent");

    let resource = CudaAsyncMemoryResource::new(None, None).unwrap(); // stores the current context
    let p = resource.allocate(1 << 20, 256, CudaStreamView::DEFAULT).unwrap();
    resource.deallocate(p, 1 << 20, 256, CudaStreamView::DEFAULT).unwrap();

    // The program lets go of its retain.
    // SAFETY: unsets this thread's context, then releases the retain taken above.
    cu(unsafe { sys::cuCtxSetCurrent(std::ptr::null_mut()) }, "cuCtxSetCurrent");
    // SAFETY: as above.
    cu(unsafe { sys::cuDevicePrimaryCtxRelease_v2(device) }, "cuDevicePrimaryCtxRelease");
    if !active() {
        // The context, and the pool with it, are gone: dropping the resource would push a dead
        // context and destroy a dead pool.
        std::mem::forget(resource);
        panic!("the primary context the resource stored was destroyed when the program released it");
    }
    // Still alive: the resource works and its drop synchronises and destroys its pool cleanly.
    // SAFETY: the primary context is active (the crate's retain), as just checked.
    cu(unsafe { sys::cuCtxSetCurrent(primary) }, "cuCtxSetCurrent");
    let p = resource.allocate(4096, 256, CudaStreamView::DEFAULT).unwrap();
    resource.deallocate(p, 4096, 256, CudaStreamView::DEFAULT).unwrap();
    drop(resource);
    assert!(active());
}
