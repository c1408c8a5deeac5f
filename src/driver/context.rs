//! Contexts and devices, and the context rule: how a call that needs a current context gets one.

use super::{check, ensure_driver, ContextHandle, DeviceId};
use crate::error::Result;
use cudarc::driver::sys;
use std::cell::Cell;

/// Runs `call`, a driver call that needs a current context. The first such call on a thread first
/// makes sure a context is current (as the runtime does on its first call: the primary context of
/// device 0 when none is); later calls cost nothing beyond `call` itself (a `cuCtxGetCurrent` on
/// every allocation and free showed in the cost of `cuMemAllocFromPoolAsync`). No driver call is
/// made to fail on purpose: sanitizers report every failing call. Should the program have made no
/// context current since (`cuCtxSetCurrent(NULL)`), the call reports `CUDA_ERROR_INVALID_CONTEXT`
/// once and is made again after a context is made current.
#[inline]
pub(super) fn with_context(mut call: impl FnMut() -> sys::CUresult) -> Result<sys::CUresult> {
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

/// Makes sure a context is current on this thread, as the runtime does on its first call: if none
/// is, the primary context of device 0 becomes current.
pub(crate) fn ensure_context() -> Result<()> {
    ensure_driver()?;
    if current_context_or_null()?.is_none() {
        make_primary_current(DeviceId(0))?;
    }
    Ok(())
}

/// The context current on this thread, or `None` when none is; makes none current. The driver
/// must be initialised.
pub(crate) fn current_context_or_null() -> Result<Option<ContextHandle>> {
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: the driver is initialised; ctx is a valid out pointer.
    check(unsafe { sys::cuCtxGetCurrent(&mut ctx) }, "cuCtxGetCurrent")?;
    Ok(ContextHandle::from_raw(ctx))
}

/// The context current on this thread (made current first if none is, see [`ensure_context`]).
pub(crate) fn current_context() -> Result<ContextHandle> {
    ensure_context()?;
    current_context_or_null()?.ok_or_else(|| no_context("cuCtxGetCurrent"))
}

/// The error for a `call` that succeeded but answered the null context.
#[cold]
pub(super) fn no_context(call: &'static str) -> crate::error::Error {
    crate::error::Error::Cuda {
        call,
        code: sys::CUresult::CUDA_ERROR_INVALID_CONTEXT as u32,
        name: "CUDA_ERROR_INVALID_CONTEXT".into(),
    }
}

/// The context current on this thread (made current first if none is), for an object that stores
/// it to push it later ([`synchronize_context`], [`synchronize_context_in_drop`]) from any thread.
///
/// When it is its device's primary context, this crate takes a retain of it that is never released
/// (once per context), so the handle stays valid for the whole process whatever the program
/// releases: a primary context made current by the runtime, or by cuda-python, is otherwise kept
/// only by their retains. A context the program created itself (`cuCtxCreate`) has no retain; the
/// program keeps it alive while anything made in it lives (CUDA's rule, and RMM's).
pub(crate) fn current_context_kept() -> Result<ContextHandle> {
    let context = current_context()?;
    let mut kept = KEPT_PRIMARY_CONTEXTS.lock();
    if kept.contains(&context) {
        return Ok(context);
    }
    let device = current_device()?;
    let (mut flags, mut active) = (0u32, 0i32);
    // SAFETY: the driver is initialised; both out pointers are valid.
    check(unsafe { sys::cuDevicePrimaryCtxGetState(device.0, &mut flags, &mut active) }, "cuDevicePrimaryCtxGetState")?;
    if active == 0 {
        // The current context is alive, so it is not this inactive primary context: a context the
        // program made. Retaining the primary context here would create it, for nothing.
        return Ok(context);
    }
    let mut primary: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: as above; the primary context is active, so the retain only counts.
    check(unsafe { sys::cuDevicePrimaryCtxRetain(&mut primary, device.0) }, "cuDevicePrimaryCtxRetain")?;
    if ContextHandle::from_raw(primary) == Some(context) {
        kept.push(context); // the retain just taken is never released
    } else {
        // SAFETY: releases the retain taken above.
        check(unsafe { sys::cuDevicePrimaryCtxRelease_v2(device.0) }, "cuDevicePrimaryCtxRelease")?;
    }
    Ok(context)
}

/// `context`, the context of a live stream (or current), kept as [`current_context_kept`] keeps the
/// current one, so that an object may store it and synchronise it later from any thread.
pub(crate) fn context_kept(context: ContextHandle) -> Result<ContextHandle> {
    let (kept, restored) = in_context(context, current_context_kept)?;
    restored?;
    kept
}

/// The primary context of `device`, retained for the whole process (once per context, as
/// [`current_context_kept`] keeps it), created if it was not yet: a pool bound to a device waits
/// on it whichever context is current.
pub(crate) fn primary_context_kept(device: DeviceId) -> Result<ContextHandle> {
    ensure_driver()?;
    let mut dev: sys::CUdevice = 0;
    // SAFETY: the driver is initialised; dev is a valid out pointer.
    check(unsafe { sys::cuDeviceGet(&mut dev, device.0) }, "cuDeviceGet")?;
    let mut primary: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: as above; primary is a valid out pointer.
    check(unsafe { sys::cuDevicePrimaryCtxRetain(&mut primary, dev) }, "cuDevicePrimaryCtxRetain")?;
    let context = ContextHandle::from_raw(primary).ok_or_else(|| no_context("cuDevicePrimaryCtxRetain"))?;
    let mut kept = KEPT_PRIMARY_CONTEXTS.lock();
    if kept.contains(&context) {
        // SAFETY: releases the retain taken above; the kept one stays.
        check(unsafe { sys::cuDevicePrimaryCtxRelease_v2(dev) }, "cuDevicePrimaryCtxRelease")?;
    } else {
        kept.push(context); // the retain just taken is never released
    }
    Ok(context)
}

/// Primary contexts this crate holds a retain of that it never releases.
static KEPT_PRIMARY_CONTEXTS: parking_lot::Mutex<Vec<ContextHandle>> = parking_lot::Mutex::new(Vec::new());

/// The current context's device (device 0's primary context is made current first if no
/// context is). One `cuCtxGetDevice` once this thread has had a context (see
/// [`with_context`]): cheap enough for every buffer operation to ask.
pub(crate) fn current_device() -> Result<DeviceId> {
    let mut dev: sys::CUdevice = 0;
    // SAFETY: with_context makes sure a context is current; dev is a valid out pointer.
    let status = with_context(|| unsafe { sys::cuCtxGetDevice(&mut dev) })?;
    check(status, "cuCtxGetDevice")?;
    Ok(DeviceId(dev))
}

/// While alive, the primary context of a device is current on this thread; dropped, the context
/// current before is current again (RMM's `cuda_set_device_raii`, at the driver level). Where the
/// device already is current, or is negative (no device), it changes nothing, at the cost of one
/// `cuCtxGetDevice`. Not `Send`: it restores the context of the thread that made it.
pub(crate) struct DeviceGuard {
    /// Whether this guard switched, and then the context to make current again (`None`: none).
    previous: Option<Option<ContextHandle>>,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl DeviceGuard {
    /// Makes `device`'s primary context current (nothing when `device` is negative or current).
    #[inline]
    pub(crate) fn set(device: DeviceId) -> Result<DeviceGuard> {
        if device.0 < 0 || current_device()? == device {
            return Ok(DeviceGuard { previous: None, _not_send: std::marker::PhantomData });
        }
        Self::switch(device)
    }

    #[cold]
    fn switch(device: DeviceId) -> Result<DeviceGuard> {
        let count = device_count()?;
        if device.0 as u32 >= count {
            return Err(crate::error::Error::InvalidArgument(format!(
                "device {} does not exist; this machine has {count} device(s)",
                device.0
            )));
        }
        let previous = current_context_or_null()?;
        make_primary_current(device)?;
        Ok(DeviceGuard { previous: Some(previous), _not_send: std::marker::PhantomData })
    }
}

impl Drop for DeviceGuard {
    fn drop(&mut self) {
        if let Some(previous) = self.previous {
            // SAFETY: `previous` was current on this thread when the guard was made (the guard is
            // not Send), and stays alive while current work of the caller runs (the program's
            // contract for a context it made; a primary context is retained for the process).
            // A failure cannot be reported from here; the guard's device then stays current.
            let _ = unsafe { sys::cuCtxSetCurrent(previous.map_or(std::ptr::null_mut(), ContextHandle::raw)) };
        }
    }
}

/// The number of CUDA devices (device ordinals run from 0 below it).
pub(crate) fn device_count() -> Result<u32> {
    ensure_driver()?;
    let mut n = 0;
    // SAFETY: the driver is initialised; n is a valid out pointer.
    check(unsafe { sys::cuDeviceGetCount(&mut n) }, "cuDeviceGetCount")?;
    Ok(n.max(0) as u32)
}

/// Blocks until all work in `context` has finished, streams destroyed since included; `context`
/// is made current for the call when another one is. `context` comes from
/// [`current_context_kept`].
pub(crate) fn synchronize_context(context: ContextHandle) -> Result<()> {
    let (synced, restored) = in_context(context, || {
        // SAFETY: `in_context` makes `context` current for this call.
        check(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize")
    })?;
    synced.and(restored)
}

/// Runs `call` with `context` current: as it is where `context` is current already, else with
/// `context` pushed for the call and popped after it, which leaves the caller's current context as
/// it was. Returns what `call` returned and whether the pop succeeded; fails, without calling, when
/// the push fails. `context` must be alive: one from [`current_context_kept`] (a primary context
/// retained for the process, or one the program keeps alive while the object that stored it
/// lives, the program's contract as in RMM), or the context of a live stream.
pub(super) fn in_context<T>(context: ContextHandle, call: impl FnOnce() -> T) -> Result<(T, Result<()>)> {
    if current_context()? == context {
        return Ok((call(), Ok(())));
    }
    // SAFETY: `context` is alive (this function's contract); pushed here, popped below.
    check(unsafe { sys::cuCtxPushCurrent_v2(context.raw()) }, "cuCtxPushCurrent")?;
    let out = call();
    let mut popped: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: pops what was pushed above; popped is a valid out pointer.
    let restored = check(unsafe { sys::cuCtxPopCurrent_v2(&mut popped) }, "cuCtxPopCurrent");
    Ok((out, restored))
}

/// Blocks until all work in `context` has finished, for a destructor: `context` is pushed for the
/// call whichever context is current, and errors are ignored. The driver must be initialised and
/// `context` must come from [`current_context_kept`].
pub(crate) fn synchronize_context_in_drop(context: ContextHandle) {
    // SAFETY: `context` came from `current_context_kept` (a primary context retained for the whole
    // process, or a context the program keeps alive while the object that stored it lives);
    // pushing it leaves the caller's current context as it was once popped.
    if unsafe { sys::cuCtxPushCurrent_v2(context.raw()) } != sys::CUresult::CUDA_SUCCESS {
        return;
    }
    // SAFETY: a context is current (pushed above).
    let _ = unsafe { sys::cuCtxSynchronize() };
    let mut popped: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: pops what was pushed above; popped is a valid out pointer.
    let _ = unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
}

/// Retains the primary context of `device` and makes it current on this thread (`cudaSetDevice`).
pub(crate) fn make_primary_current(device: DeviceId) -> Result<()> {
    ensure_driver()?;
    let mut dev: sys::CUdevice = 0;
    // SAFETY: the driver is initialised; out pointers are valid.
    check(unsafe { sys::cuDeviceGet(&mut dev, device.0) }, "cuDeviceGet")?;
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: as above. The retain is never released on purpose: the primary context then lives for
    // the whole process, as it does under the runtime, so no resource outlives its context.
    check(unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) }, "cuDevicePrimaryCtxRetain")?;
    // SAFETY: ctx was just retained.
    check(unsafe { sys::cuCtxSetCurrent(ctx) }, "cuCtxSetCurrent")
}
