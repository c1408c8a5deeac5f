//! A view of a pool handle the driver no longer knows is refused when it is made, with a named
//! error, rather than failing every allocation. The check asks the driver about a destroyed pool,
//! a call that fails on purpose: this binary is listed in tests/gpu/failing_on_purpose.txt.

use cudarc::driver::sys;
use rmm::resource::CudaAsyncViewMemoryResource;
use rmm::{DeviceId, Error};

#[test]
fn a_view_of_a_destroyed_pool_is_invalid_argument() {
    if !rmm::cuda_available() {
        println!("skipped: no CUDA device");
        return;
    }
    // SAFETY: CUmemPoolProps is plain C data; all zeroes is valid and clears the reserved bytes.
    let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
    props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = DeviceId::current().unwrap().0;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: a context is current (DeviceId::current made one so); both pointers are valid.
    assert_eq!(unsafe { sys::cuMemPoolCreate(&mut pool, &props) }, sys::CUresult::CUDA_SUCCESS);
    // SAFETY: the pool is live until destroyed below, after the view is gone.
    let view = unsafe { CudaAsyncViewMemoryResource::new(pool) }.unwrap();
    drop(view);
    // SAFETY: made above, nothing allocated from it.
    assert_eq!(unsafe { sys::cuMemPoolDestroy(pool) }, sys::CUresult::CUDA_SUCCESS);
    // SAFETY: breaks the contract on purpose with a handle the driver made and destroyed: the
    // check in `new` must refuse it before anything allocates from it.
    let refused = unsafe { CudaAsyncViewMemoryResource::new(pool) };
    assert!(
        matches!(refused, Err(Error::InvalidArgument(ref m)) if m.contains("not a live CUDA memory pool")),
        "{refused:?}"
    );
}
