//! The one door to the CUDA driver API.
//!
//! Every driver call of the library goes through a typed function here (cudarc's `sys` layer
//! below, the resources above). Each function takes and returns Rust values (each kind of handle
//! its own type: [`DevicePtr`], [`StreamHandle`], [`EventHandle`], [`MemPoolHandle`],
//! [`ContextHandle`], [`DeviceId`]), turns the status into the crate's [`Result`] and applies the
//! context rule its call needs, so callers never touch a `CUresult`. Functions that free memory,
//! release a handle or let the driver write memory at an address are `unsafe`, with a `# Safety`
//! section saying what the caller promises.
//!
//! The driver imports nothing of the crate but [`crate::error`]; the modules above hand it raw
//! handles (a stream view its [`StreamHandle`], say).
//!
//! cudarc loads `libcuda.so.1` lazily and panics when it is missing, so every path into the driver
//! first calls [`ensure_driver`], which turns a missing library into [`Error::NoDriver`]. The driver
//! API (not the runtime) is used throughout so that Rust and a C++ program linked against a static
//! cudart share one notion of the current context.
//!
//! Functions called from destructors return nothing: a destructor has nowhere to send an error,
//! and naming one would cost another driver call.

use crate::error::{Error, Result};
use cudarc::driver::sys;
use std::sync::OnceLock;

mod address_range;
mod advise;
mod attribute;
mod context;
mod copy;
mod entry_points;
mod event;
mod handles;
mod memory;
mod mempool;
mod status;
mod stream;
mod vmm;

pub(crate) use address_range::mem_allocation_base;
pub(crate) use advise::{mem_advise_preferred_location, PreferredLocation};
pub(crate) use attribute::device_attribute;
pub(crate) use context::{
    current_context_kept, current_device, device_count, ensure_context, make_primary_current, synchronize_context,
    synchronize_context_in_drop, DeviceGuard,
};
pub(crate) use copy::{memcpy_async, memset_d8_async};
pub(crate) use event::{event_create, event_create_for, event_destroy, event_record};
pub use handles::{ContextHandle, DeviceId};
pub(crate) use handles::{DevicePtr, EventHandle, MemPoolHandle, StreamHandle};
pub(crate) use memory::{
    mem_alloc, mem_alloc_managed, mem_free, mem_free_host, mem_free_managed, mem_get_info, mem_host_alloc,
    mem_prefetch_async, pointer_is_managed, pointer_memory_type, PointerInfo,
};
pub(crate) use mempool::{
    mem_alloc_from_pool_async, mem_free_async, mem_get_default_managed_pool, mem_pool_check, mem_pool_create,
    mem_pool_destroy, mem_pool_release_threshold, mem_pool_reserved_mem_high, mem_pool_set_release_threshold,
    mem_pool_set_reuse_allow_opportunistic,
};
pub(crate) use stream::{
    exchange_capture_mode, stream_capture_id, stream_context, stream_create_with_flags, stream_destroy, stream_id,
    stream_synchronize, stream_wait_event, CAPTURE_MODE_RELAXED,
};
pub(crate) use vmm::{
    can_access_peer, mem_address_free, mem_address_reserve, mem_create, mem_export_posix_fd, mem_map,
    mem_recommended_granularity, mem_release, mem_set_access, mem_unmap, posix_fd_handles_supported, vmm_check,
    PhysicalHandle,
};

/// The device ordinal the older advice and prefetch entry points take for host memory.
#[cfg(feature = "cuda-12")]
const CU_DEVICE_CPU: i32 = -1;

use context::with_context;
use entry_points::{entry_point, missing, EntryPoint, Versioned};
use status::{check, check_alloc};

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

/// The driver's version, as `1000 * major + 10 * minor` (12040 for 12.4), asked once: it cannot
/// change while the library is loaded. The driver must be initialised.
pub(crate) fn driver_version() -> Result<i32> {
    static VERSION: OnceLock<i32> = OnceLock::new();
    if let Some(version) = VERSION.get() {
        return Ok(*version);
    }
    let mut version = 0;
    // SAFETY: the driver is initialised; version is a valid out pointer.
    check(unsafe { sys::cuDriverGetVersion(&mut version) }, "cuDriverGetVersion")?;
    Ok(*VERSION.get_or_init(|| version))
}
