//! The current resource of a device, cached per thread: the PyTorch hook, which allocates from
//! "the device's current resource" on every call, takes no lock for it and allocates nothing. Each thread checks the per-device table's generation
//! (one atomic load) to notice a change; its cache keeps the resource it last used alive until
//! that thread's next call after a change.

use rmm::per_device_resource::{generation, get_per_device_resource_with_generation};
use rmm::{DeviceId, SharedResource};
use std::cell::RefCell;

/// A cached table entry: the device, the table generation it was read at, and the resource.
type Entry = (i32, u64, SharedResource);

thread_local! {
    static CACHE: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

/// The current resource of `device` (a new handle to it), from this thread's cache when the table
/// has not changed since it was read.
pub fn resource_of(device: i32) -> SharedResource {
    let now = generation();
    let cached = CACHE.try_with(|cache| {
        let mut cache = cache.borrow_mut();
        let slot = match cache.iter().position(|e| e.0 == device) {
            Some(i) if cache[i].1 == now => return Some(cache[i].2.clone()),
            Some(i) => i,
            None => {
                let (resource, generation) = get_per_device_resource_with_generation(DeviceId(device));
                cache.push((device, generation, resource));
                cache.len() - 1
            }
        };
        let (resource, generation) = get_per_device_resource_with_generation(DeviceId(device));
        cache[slot] = (device, generation, resource);
        Some(cache[slot].2.clone())
    });
    match cached {
        Ok(Some(resource)) => resource,
        // The thread is being torn down and its cache is gone: read the table directly.
        _ => get_per_device_resource_with_generation(DeviceId(device)).0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmm::per_device_resource::{reset_per_device_resource, set_per_device_resource};
    use rmm::resource::HostMemoryResource;
    use std::sync::Arc;

    #[test]
    fn cache_follows_the_table() {
        // An id no real device has, so the test needs no driver.
        const ID: i32 = -31;
        let a: SharedResource = Arc::new(HostMemoryResource::new());
        let b: SharedResource = Arc::new(HostMemoryResource::new());
        set_per_device_resource(DeviceId(ID), a.clone());
        assert!(Arc::ptr_eq(&resource_of(ID), &a));
        assert!(Arc::ptr_eq(&resource_of(ID), &a));
        set_per_device_resource(DeviceId(ID), b.clone());
        assert!(Arc::ptr_eq(&resource_of(ID), &b));
        reset_per_device_resource(DeviceId(ID));
        assert!(!Arc::ptr_eq(&resource_of(ID), &b));
    }
}
