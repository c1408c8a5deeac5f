//! The initialise/finalise state: which resource `rmmInitialize` installed, what it replaced, and
//! the live allocations.
//!
//! Behaviour kept from the original: `rmmInitialize` while initialised is a no-op that returns
//! `RMM_SUCCESS` (the first options stay); a null `options` means the defaults (cuda allocation).
//! Behaviour the original left undefined, decided here: `rmmFinalize` frees every allocation still
//! live (the original destroyed its pool, and with it their memory; after finalize those pointers
//! are dangling in both), and before `rmmInitialize` it returns `RMM_ERROR_NOT_INITIALIZED`, as the
//! original header documents.
//!
//! The resource is set in the Rust per-device table; the C++ table (`rmm/mr/per_device_resource.hpp`)
//! takes over whatever that table holds on its next read, so C++ code of the same program allocates
//! from the resource `rmmInitialize` made, and from the restored one after `rmmFinalize`.

use super::codes::{code, status, RmmError, Status};
use super::event_log::{self, LogContext};
use super::guarded;
use super::live::LiveTable;
use super::options::RmmOptions;
use rmm::device::{ContextHandle, DeviceId};

use parking_lot::RwLock;
use rmm::per_device_resource::{get_per_device_resource, set_per_device_resource};
use rmm::resource::{SharedResource, DEFAULT_ALIGNMENT};
use rmm::stream::CudaStreamView;
use std::sync::Arc;

/// One `rmmInitialize` .. `rmmFinalize` span.
pub(crate) struct Session {
    /// The options it was initialised with.
    pub options: RmmOptions,
    /// The device whose current resource it set (the current device at `rmmInitialize`).
    pub device: DeviceId,
    /// That device's context, to wait for all its work at finalize (`None` in unit tests, which
    /// make no driver call).
    context: Option<ContextHandle>,
    /// The resource it made and installed.
    created: SharedResource,
    /// The resource that was current before, put back at finalize.
    previous: SharedResource,
    /// Every pointer handed out and not yet freed.
    pub live: LiveTable,
}

/// The session, if initialised. Entry points hold the read lock for their whole call, so
/// `rmmFinalize` (the write lock) waits for calls in flight and no call sees a half-torn session.
static SESSION: RwLock<Option<Session>> = RwLock::new(None);

/// Runs `f` on the session, or returns `RMM_ERROR_NOT_INITIALIZED`.
pub(crate) fn with_session<T>(f: impl FnOnce(&Session) -> Result<T, RmmError>) -> Result<T, RmmError> {
    // Recursive read: a resource that calls back into this API cannot deadlock against a waiting
    // rmmFinalize.
    let guard = SESSION.read_recursive();
    f(guard.as_ref().ok_or(RmmError::NOT_INITIALIZED)?)
}

impl LogContext for Session {
    fn logging_enabled(&self) -> bool {
        self.options.logging_enabled()
    }

    fn device(&self) -> i32 {
        self.device.value()
    }

    fn live_count(&self) -> usize {
        self.live.len()
    }
}

impl Session {
    /// The resource allocations come from now: the current resource of the session's device.
    pub fn current_resource(&self) -> SharedResource {
        get_per_device_resource(self.device)
    }

    /// A session on `device` that allocates from whatever is current there, for unit tests of the
    /// entry points' bodies (no driver needed).
    #[cfg(test)]
    pub(crate) fn for_tests(device: DeviceId) -> Session {
        let current = get_per_device_resource(device);
        Session {
            options: RmmOptions::default(),
            device,
            context: None,
            created: current.clone(),
            previous: current,
            live: LiveTable::default(),
        }
    }

    /// Frees what is still live and puts the previous resource back if ours is still current.
    fn release(self) -> Status {
        let live = self.live.drain();
        let mut outcome = Ok(());
        if !live.is_empty() {
            // Their streams may be gone by now: wait for all work, then free on the default stream.
            if let Some(context) = self.context {
                outcome = status(rmm::device::synchronize_context(context));
            }
            for (ptr, l) in live {
                let freed = l.resource.deallocate(ptr as *mut u8, l.bytes, DEFAULT_ALIGNMENT, CudaStreamView::DEFAULT);
                outcome = outcome.and(status(freed));
            }
        }
        if Arc::ptr_eq(&get_per_device_resource(self.device), &self.created) {
            set_per_device_resource(self.device, self.previous.clone());
        }
        outcome
    }
}

fn initialize(options: RmmOptions) -> Status {
    let mut slot = SESSION.write();
    if slot.is_some() {
        return Ok(());
    }
    let (device, context, created) = build(&options)?;
    switch(&mut slot, options, device, context, created);
    Ok(())
}

/// Checks `options` and makes their resource on the current device: everything a session needs
/// that may fail, done before any state changes.
fn build(options: &RmmOptions) -> Result<(DeviceId, Option<ContextHandle>, SharedResource), RmmError> {
    options.validate()?;
    let device = status(DeviceId::current())?;
    let context = Some(status(rmm::device::current_context_kept())?);
    let created = status(options.make_resource())?;
    Ok((device, context, created))
}

/// Installs `created` as the current resource of `device` in a new session in `slot`, taking over
/// the session there if any: its live allocations stay live (each is freed through the resource
/// it came from, which they keep alive), and the resource that was current before it is still the
/// one finalize puts back. No driver call: this cannot fail.
fn switch(
    slot: &mut Option<Session>,
    options: RmmOptions,
    device: DeviceId,
    context: Option<ContextHandle>,
    created: SharedResource,
) {
    let live = LiveTable::default();
    let previous = match slot.take() {
        None => set_per_device_resource(device, created.clone()),
        Some(old) => {
            for (ptr, l) in old.live.drain() {
                live.insert(ptr, l);
            }
            let old_is_current = Arc::ptr_eq(&get_per_device_resource(old.device), &old.created);
            if old.device != device {
                if old_is_current {
                    set_per_device_resource(old.device, old.previous.clone());
                }
                set_per_device_resource(device, created.clone())
            } else {
                let replaced = set_per_device_resource(device, created.clone());
                if old_is_current {
                    old.previous
                } else {
                    replaced
                }
            }
        }
    };
    event_log::clear();
    *slot = Some(Session { options, device, context, created, previous, live });
}

fn reinitialize_body(options: RmmOptions) -> Status {
    let mut slot = SESSION.write();
    if slot.as_ref().is_some_and(|s| s.options == options) {
        return Ok(());
    }
    let (device, context, created) = build(&options)?;
    switch(&mut slot, options, device, context, created);
    Ok(())
}

fn finalize() -> Status {
    let mut slot = SESSION.write();
    let session = slot.take().ok_or(RmmError::NOT_INITIALIZED)?;
    let outcome = session.release();
    event_log::clear();
    outcome
}

/// `rmmError_t rmmInitialize(rmmOptions_t* options)`: makes the resource `options` asks for (the
/// defaults when null) the current resource of the current device. `RMM_ERROR_CUDA_ERROR` without
/// a driver or device, `RMM_ERROR_INVALID_ARGUMENT` for unknown mode bits, `RMM_ERROR_OUT_OF_MEMORY`
/// when the pool's initial size cannot be had.
///
/// # Safety
/// `options` is null or points to a valid `rmmOptions_t`.
pub unsafe fn rmmInitialize(options: *mut RmmOptions) -> RmmError {
    guarded(RmmError::UNKNOWN, || {
        // SAFETY: the caller passes null or a valid rmmOptions_t.
        let options = unsafe { options.as_ref() }.copied().unwrap_or_default().normalized();
        code(initialize(options))
    })
}

/// `rmmError_t rmmFinalize(void)`: frees every allocation still live, puts back the resource that
/// was current before `rmmInitialize` (unless another was installed since) and destroys the one it
/// made. `RMM_ERROR_NOT_INITIALIZED` when not initialised.
pub fn rmmFinalize() -> RmmError {
    guarded(RmmError::UNKNOWN, || code(finalize()))
}

/// Initialises with `options` as `rmmInitialize` does, except when already initialised with
/// other options: then the resource they ask for replaces the session's (as the original's
/// `rmmInitialize` applied new options). Allocations made before stay valid and are freed by
/// `rmmFree` or `rmmFinalize` through the resource they came from, and `rmmFinalize` puts back the
/// resource that was current before the first initialisation (or the one installed since, if the
/// session's resource was no longer current). The same options again are a
/// no-op. On failure (bad options, no device, a pool that cannot be had) the session is unchanged.
/// Not part of the C ABI: the legacy Python module's `initialize()` calls it.
pub fn reinitialize(options: RmmOptions) -> RmmError {
    guarded(RmmError::UNKNOWN, || code(reinitialize_body(options.normalized())))
}

/// `bool rmmIsInitialized(rmmOptions_t* options)`: whether `rmmInitialize` succeeded and
/// `rmmFinalize` has not run since; when it has and `options` is not null, the options in use are
/// written there.
///
/// # Safety
/// `options` is null or points to writable memory for an `rmmOptions_t`.
pub unsafe fn rmmIsInitialized(options: *mut RmmOptions) -> bool {
    guarded(false, || {
        with_session(|s| {
            if !options.is_null() {
                // SAFETY: the caller passes null (checked above) or writable memory for the struct.
                unsafe { options.write(s.options) };
            }
            Ok(())
        })
        .is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::Live;
    use rmm::per_device_resource::reset_per_device_resource;
    use rmm::resource::{HostMemoryResource, MemoryResource};

    fn host() -> SharedResource {
        Arc::new(HostMemoryResource::new())
    }

    #[test]
    fn switch_keeps_live_blocks_and_the_first_previous_resource() {
        let device = DeviceId(-2811);
        let original = host();
        set_per_device_resource(device, original.clone());
        let (first, second) = (host(), host());
        let mut slot = None;
        switch(&mut slot, RmmOptions::default(), device, None, first.clone());
        assert!(Arc::ptr_eq(&get_per_device_resource(device), &first));
        let p = first.allocate(100, DEFAULT_ALIGNMENT, CudaStreamView::DEFAULT).unwrap() as usize;
        slot.as_ref().unwrap().live.insert(p, Live { bytes: 100, resource: first.clone() });

        let pool = RmmOptions::new(crate::RmmAllocationMode::POOL_ALLOCATION, 1 << 20, false);
        switch(&mut slot, pool, device, None, second.clone());
        let s = slot.take().unwrap();
        assert!(Arc::ptr_eq(&get_per_device_resource(device), &second), "the new resource is current");
        assert_eq!(s.options, pool);
        assert_eq!(s.live.containing(p), Some(p), "the old block is still live");
        assert!(Arc::ptr_eq(&s.previous, &original), "finalize still restores the first resource");
        drop(first);
        let l = s.live.take(p).unwrap();
        l.resource.deallocate(p as *mut u8, l.bytes, DEFAULT_ALIGNMENT, CudaStreamView::DEFAULT).unwrap();
        s.release().unwrap();
        assert!(Arc::ptr_eq(&get_per_device_resource(device), &original));
        reset_per_device_resource(device);
    }

    #[test]
    fn switch_after_another_resource_was_installed_restores_that_one() {
        let (device, other_device) = (DeviceId(-2812), DeviceId(-2813));
        let (first, user, second) = (host(), host(), host());
        let mut slot = None;
        switch(&mut slot, RmmOptions::default(), device, None, first);
        set_per_device_resource(device, user.clone());
        switch(&mut slot, RmmOptions::default(), device, None, second.clone());
        assert!(Arc::ptr_eq(&slot.as_ref().unwrap().previous, &user));

        // To another device: the first device gets its resource back at once.
        let third = host();
        switch(&mut slot, RmmOptions::default(), other_device, None, third.clone());
        assert!(Arc::ptr_eq(&get_per_device_resource(device), &user));
        assert!(Arc::ptr_eq(&get_per_device_resource(other_device), &third));
        slot.take().unwrap().release().unwrap();
        assert!(!Arc::ptr_eq(&get_per_device_resource(other_device), &third));
        reset_per_device_resource(device);
        reset_per_device_resource(other_device);
    }
}
