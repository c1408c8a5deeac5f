//! The guarded door to the CUDA driver API.
//!
//! cudarc loads `libcuda.so.1` lazily and panics when it is missing, so every path into the driver
//! first calls [`ensure_driver`], which turns a missing library into [`Error::NoDriver`]. The driver
//! API (not the runtime) is used throughout so that Rust and a C++ program linked against a static
//! cudart share one notion of the current context.

use crate::error::{Error, Result};
use cudarc::driver::sys;
use std::cell::Cell;
use std::ffi::CStr;
use std::sync::OnceLock;

/// Loads and initialises the driver once; later calls return the cached outcome.
pub(crate) fn ensure_driver() -> Result<()> {
    static STATE: OnceLock<std::result::Result<(), Error>> = OnceLock::new();
    STATE
        .get_or_init(|| {
            // SAFETY: only probes whether the shared library can be opened.
            if !unsafe { sys::is_culib_present() } {
                return Err(Error::NoDriver(
                    "libcuda.so could not be loaded; install the NVIDIA driver or add it to LD_LIBRARY_PATH".into(),
                ));
            }
            // SAFETY: the library is present; cuInit has no preconditions.
            check(unsafe { sys::cuInit(0) }, "cuInit").map_err(|e| match e {
                Error::Cuda { name, .. } => Error::NoDriver(format!("cuInit failed with {name}")),
                other => other,
            })
        })
        .clone()
}

/// Maps a driver status to `Ok` or to an [`Error::Cuda`] naming the call.
pub(crate) fn check(status: sys::CUresult, call: &'static str) -> Result<()> {
    if status == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    if status == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        return Err(Error::out_of_memory(0, format!("{call} returned CUDA_ERROR_OUT_OF_MEMORY")));
    }
    Err(Error::Cuda { call, code: status as u32, name: error_name(status) })
}

/// Like [`check`], but out-of-memory carries the requested size.
pub(crate) fn check_alloc(status: sys::CUresult, call: &'static str, bytes: usize) -> Result<()> {
    check(status, call).map_err(|e| match e {
        Error::OutOfMemory { reason, pool, .. } => Error::OutOfMemory { requested: bytes, pool, reason },
        other => other,
    })
}

fn error_name(status: sys::CUresult) -> String {
    let mut ptr: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: the driver is loaded (a status exists); cuGetErrorName writes a static string or fails.
    let ok = unsafe { sys::cuGetErrorName(status, &mut ptr) } == sys::CUresult::CUDA_SUCCESS;
    if ok && !ptr.is_null() {
        // SAFETY: the driver returns a NUL-terminated static string.
        unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
    } else {
        format!("{status:?}")
    }
}

/// Runs `call`, a driver call that needs a current context. The first such call on a thread first
/// makes sure a context is current (as the runtime does on its first call: the primary context of
/// device 0 when none is); later calls cost nothing beyond `call` itself (a `cuCtxGetCurrent` on
/// every allocation and free showed in the cost of `cuMemAllocFromPoolAsync`). No driver call is
/// made to fail on purpose: sanitizers report every failing call. Should the program have made no
/// context current since (`cuCtxSetCurrent(NULL)`), the call reports `CUDA_ERROR_INVALID_CONTEXT`
/// once and is made again after a context is made current.
#[inline]
pub(crate) fn with_context(mut call: impl FnMut() -> sys::CUresult) -> Result<sys::CUresult> {
    if !CONTEXT_SEEN.with(Cell::get) {
        ensure_context()?;
        CONTEXT_SEEN.with(|seen| seen.set(true));
    }
    let status = call();
    if status != sys::CUresult::CUDA_ERROR_INVALID_CONTEXT {
        return Ok(status);
    }
    ensure_context()?;
    Ok(call())
}

thread_local! {
    /// Whether this thread has had a current context (made sure of by `ensure_context`).
    static CONTEXT_SEEN: Cell<bool> = const { Cell::new(false) };
}

/// The driver's unique id of the stream `handle` (never the same for two streams of a process,
/// unlike handles, which the driver reuses). `handle` must name a live stream.
pub(crate) fn stream_id(handle: usize) -> Result<u64> {
    ensure_driver()?;
    let mut id: std::ffi::c_ulonglong = 0;
    // SAFETY: the driver is initialised; the caller names a live stream; id is a valid out pointer.
    check(unsafe { sys::cuStreamGetId(handle as sys::CUstream, &mut id) }, "cuStreamGetId")?;
    Ok(id)
}

/// Makes sure a context is current on this thread, as the runtime does on its first call: if none
/// is, the primary context of device 0 becomes current.
pub(crate) fn ensure_context() -> Result<()> {
    ensure_driver()?;
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: the driver is initialised; ctx is a valid out pointer.
    check(unsafe { sys::cuCtxGetCurrent(&mut ctx) }, "cuCtxGetCurrent")?;
    if ctx.is_null() {
        make_primary_current(0)?;
    }
    Ok(())
}

/// The context current on this thread (made current first if none is, see [`ensure_context`]).
pub(crate) fn current_context() -> Result<usize> {
    ensure_context()?;
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: the driver is initialised; ctx is a valid out pointer.
    check(unsafe { sys::cuCtxGetCurrent(&mut ctx) }, "cuCtxGetCurrent")?;
    Ok(ctx as usize)
}

/// Blocks until all work in `context` has finished, streams destroyed since included; `context`
/// is made current for the call when another one is.
pub(crate) fn synchronize_context(context: usize) -> Result<()> {
    let current = current_context()?;
    if current == context {
        // SAFETY: a context is current.
        return check(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize");
    }
    // SAFETY: `context` was current on some thread of this process and its primary context is
    // never released (see `make_primary_current`); pushed and popped around one call.
    check(unsafe { sys::cuCtxPushCurrent_v2(context as sys::CUcontext) }, "cuCtxPushCurrent")?;
    // SAFETY: a context is current.
    let synced = check(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize");
    let mut popped: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: pops what was pushed above; popped is a valid out pointer.
    let restored = check(unsafe { sys::cuCtxPopCurrent_v2(&mut popped) }, "cuCtxPopCurrent");
    synced.and(restored)
}

/// Retains the primary context of `ordinal` and makes it current on this thread (`cudaSetDevice`).
pub(crate) fn make_primary_current(ordinal: i32) -> Result<()> {
    ensure_driver()?;
    let mut dev: sys::CUdevice = 0;
    // SAFETY: the driver is initialised; out pointers are valid.
    check(unsafe { sys::cuDeviceGet(&mut dev, ordinal) }, "cuDeviceGet")?;
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: as above. The retain is never released on purpose: the primary context then lives for
    // the whole process, as it does under the runtime, so no resource outlives its context.
    check(unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) }, "cuDevicePrimaryCtxRetain")?;
    // SAFETY: ctx was just retained.
    check(unsafe { sys::cuCtxSetCurrent(ctx) }, "cuCtxSetCurrent")
}
