//! The current resource of each device (RMM's `get/set_per_device_resource`): what code that takes
//! no explicit resource allocates from.
//!
//! The table is process-wide and keyed by device id. A device that was never set uses the initial
//! resource, one shared [`CudaMemoryResource`]; building it makes no CUDA call, so the by-id
//! functions work without a driver.
//!
//! The table is a Rust static, and statics are never dropped at process exit. That is on purpose:
//! a resource still installed at exit (say a pool) is never torn down after the driver has begun
//! shutting down, which in C++ RMM is a classic crash at exit.

use crate::device::DeviceId;
use crate::error::Result;
use crate::resource::{CudaMemoryResource, SharedResource};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Devices whose resource was set; absent devices use [`initial_resource`].
static TABLE: Mutex<BTreeMap<DeviceId, SharedResource>> = Mutex::new(BTreeMap::new());

/// Bumped, under the table's lock, by every change of the table: lets hot paths (the PyTorch
/// allocator hook) cache a device's resource and notice a change without taking the lock.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The table's generation: it differs from an earlier reading exactly when some device's resource
/// was set or reset in between.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// The current resource of device `id` together with the [`generation`] it belongs to, read
/// atomically together.
pub fn get_per_device_resource_with_generation(id: DeviceId) -> (SharedResource, u64) {
    let table = TABLE.lock();
    let resource = table.get(&id).cloned();
    let generation = GENERATION.load(Ordering::Relaxed);
    drop(table);
    (resource.unwrap_or_else(initial_resource), generation)
}

/// The resource every device starts with. One instance, so that "still the initial resource" can be
/// checked with `Arc::ptr_eq`; the C++ `cuda_memory_resource` is this instance too. A
/// [`CudaMemoryResource`].
pub fn initial_resource() -> SharedResource {
    static INITIAL: OnceLock<SharedResource> = OnceLock::new();
    INITIAL.get_or_init(|| Arc::new(CudaMemoryResource::new())).clone()
}

/// The current resource of device `id`.
pub fn get_per_device_resource(id: DeviceId) -> SharedResource {
    TABLE.lock().get(&id).cloned().unwrap_or_else(initial_resource)
}

/// Makes `resource` the current resource of device `id` and returns the one it replaces. The caller
/// must make sure the resource allocates memory usable on that device.
pub fn set_per_device_resource(id: DeviceId, resource: SharedResource) -> SharedResource {
    // Bind the previous value so that it is returned (and if the caller drops it, dropped) after
    // the lock is released: dropping a resource may call back into this module.
    let previous = {
        let mut table = TABLE.lock();
        let previous = table.insert(id, resource);
        GENERATION.fetch_add(1, Ordering::Release);
        previous
    };
    previous.unwrap_or_else(initial_resource)
}

/// Puts device `id` back on the initial resource and returns the one it had.
pub fn reset_per_device_resource(id: DeviceId) -> SharedResource {
    let previous = {
        let mut table = TABLE.lock();
        let previous = table.remove(&id);
        GENERATION.fetch_add(1, Ordering::Release);
        previous
    };
    previous.unwrap_or_else(initial_resource)
}

/// The current resource of the current device. Fails with `NoDriver` without a CUDA driver.
pub fn get_current_device_resource() -> Result<SharedResource> {
    Ok(get_per_device_resource(DeviceId::current()?))
}

/// Sets the current resource of the current device; returns the previous one.
pub fn set_current_device_resource(resource: SharedResource) -> Result<SharedResource> {
    Ok(set_per_device_resource(DeviceId::current()?, resource))
}

/// Puts the current device back on the initial resource; returns the previous one.
pub fn reset_current_device_resource() -> Result<SharedResource> {
    Ok(reset_per_device_resource(DeviceId::current()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::resource::{HostMemoryResource, MemoryResource};

    // Ids far from real devices, so tests running in parallel do not share entries.
    const ID: DeviceId = DeviceId(-17);

    #[test]
    fn unset_device_uses_the_shared_initial_resource() {
        let a = get_per_device_resource(DeviceId(-1000));
        let b = get_per_device_resource(DeviceId(-1001));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(a.is_equal(&CudaMemoryResource::new()));
    }

    #[test]
    fn set_then_reset_round_trip() {
        let host: SharedResource = Arc::new(HostMemoryResource::new());
        let prev = set_per_device_resource(ID, host.clone());
        assert!(Arc::ptr_eq(&prev, &initial_resource()));
        assert!(Arc::ptr_eq(&get_per_device_resource(ID), &host));
        assert!(Arc::ptr_eq(&reset_per_device_resource(ID), &host));
        assert!(Arc::ptr_eq(&get_per_device_resource(ID), &initial_resource()));
    }

    #[test]
    fn every_change_moves_the_generation() {
        const GEN_ID: DeviceId = DeviceId(-18);
        let host: SharedResource = Arc::new(HostMemoryResource::new());
        let (_, before) = get_per_device_resource_with_generation(GEN_ID);
        set_per_device_resource(GEN_ID, host.clone());
        let (now, after_set) = get_per_device_resource_with_generation(GEN_ID);
        assert!(Arc::ptr_eq(&now, &host));
        assert!(after_set > before && generation() >= after_set);
        reset_per_device_resource(GEN_ID);
        let (now, after_reset) = get_per_device_resource_with_generation(GEN_ID);
        assert!(Arc::ptr_eq(&now, &initial_resource()));
        assert!(after_reset > after_set);
    }

    #[test]
    fn current_device_variants_report_missing_driver() {
        if crate::cuda_available() {
            return;
        }
        assert!(matches!(get_current_device_resource(), Err(Error::NoDriver(_))));
        let host: SharedResource = Arc::new(HostMemoryResource::new());
        assert!(matches!(set_current_device_resource(host), Err(Error::NoDriver(_))));
        assert!(matches!(reset_current_device_resource(), Err(Error::NoDriver(_))));
    }
}
