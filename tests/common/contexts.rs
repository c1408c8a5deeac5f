//! A second CUDA context of device 0, for tests of what runs while another context is current.

use super::device_bytes::cu;
use cudarc::driver::sys;

/// Makes a second context of device 0 current on this thread and returns it; the caller pops it.
pub fn push_second_context() -> sys::CUcontext {
    let mut device: sys::CUdevice = 0;
    // SAFETY: the driver is initialised (a GPU test); device is a valid out pointer.
    cu(unsafe { sys::cuDeviceGet(&mut device, 0) }, "cuDeviceGet");
    let mut other: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: a valid out pointer; null parameters ask for a plain context, pushed current here.
    cu(unsafe { sys::cuCtxCreate_v4(&mut other, std::ptr::null_mut(), 0, device) }, "cuCtxCreate");
    other
}

/// Makes `context`, made by `push_second_context`, current again.
pub fn push_context(context: sys::CUcontext) {
    // SAFETY: `context` is alive (destroyed only at the end of its test).
    cu(unsafe { sys::cuCtxPushCurrent_v2(context) }, "cuCtxPushCurrent");
}

/// Pops the context `push_second_context` pushed, making the one before it current again.
pub fn pop_context(expected: sys::CUcontext) {
    let mut popped: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: pops the context pushed on this thread; popped is a valid out pointer.
    cu(unsafe { sys::cuCtxPopCurrent_v2(&mut popped) }, "cuCtxPopCurrent");
    assert_eq!(popped, expected);
}
