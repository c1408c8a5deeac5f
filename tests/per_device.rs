//! The per-device resource table by device id: runs without a GPU. Each test uses its own device
//! ids because the table is process-wide and tests run in parallel.

use rmm::per_device_resource::{get_per_device_resource, reset_per_device_resource, set_per_device_resource};
use rmm::resource::{CudaMemoryResource, HostMemoryResource};
use rmm::{CudaStreamView, DeviceId, MemoryResource, SharedResource};
use std::sync::Arc;

fn host() -> SharedResource {
    Arc::new(HostMemoryResource::new())
}

#[test]
fn initial_resource_is_cuda_and_shared_by_all_devices() {
    let a = get_per_device_resource(DeviceId(100));
    let b = get_per_device_resource(DeviceId(101));
    assert!(Arc::ptr_eq(&a, &b));
    assert!(a.is_equal(&CudaMemoryResource::new()));
    assert!(a.is_device_accessible() && !a.is_host_accessible());
}

#[test]
fn set_returns_previous_and_get_sees_the_new_one() {
    let id = DeviceId(200);
    let initial = get_per_device_resource(id);
    let (h1, h2) = (host(), host());

    let prev = set_per_device_resource(id, h1.clone());
    assert!(Arc::ptr_eq(&prev, &initial));
    assert!(Arc::ptr_eq(&get_per_device_resource(id), &h1));

    let prev = set_per_device_resource(id, h2.clone());
    assert!(Arc::ptr_eq(&prev, &h1));
    assert!(Arc::ptr_eq(&get_per_device_resource(id), &h2));

    // The table holds the resource alive and it is usable through the handle.
    drop(h2);
    let r = get_per_device_resource(id);
    let p = r.allocate(4096, 256, CudaStreamView::DEFAULT).unwrap();
    assert!(!p.is_null() && (p as usize).is_multiple_of(256));
    r.deallocate(p, 4096, 256, CudaStreamView::DEFAULT).unwrap();

    reset_per_device_resource(id);
}

#[test]
fn reset_returns_previous_and_restores_the_initial() {
    let id = DeviceId(300);
    let initial = get_per_device_resource(id);
    let h = host();
    set_per_device_resource(id, h.clone());

    let prev = reset_per_device_resource(id);
    assert!(Arc::ptr_eq(&prev, &h));
    assert!(Arc::ptr_eq(&get_per_device_resource(id), &initial));

    // Resetting a device that was never set hands back the initial resource.
    let prev = reset_per_device_resource(id);
    assert!(Arc::ptr_eq(&prev, &initial));
}

#[test]
fn devices_are_independent() {
    let (a, b) = (DeviceId(400), DeviceId(401));
    let (ha, hb) = (host(), host());
    set_per_device_resource(a, ha.clone());
    set_per_device_resource(b, hb.clone());
    assert!(Arc::ptr_eq(&get_per_device_resource(a), &ha));
    assert!(Arc::ptr_eq(&get_per_device_resource(b), &hb));

    reset_per_device_resource(a);
    assert!(get_per_device_resource(a).is_equal(&CudaMemoryResource::new()));
    assert!(Arc::ptr_eq(&get_per_device_resource(b), &hb));
    reset_per_device_resource(b);
}

#[test]
fn many_threads_set_and_get_their_own_device() {
    let handles: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let id = DeviceId(500 + t);
                for _ in 0..200 {
                    let h = host();
                    set_per_device_resource(id, h.clone());
                    assert!(Arc::ptr_eq(&get_per_device_resource(id), &h));
                    assert!(Arc::ptr_eq(&reset_per_device_resource(id), &h));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
