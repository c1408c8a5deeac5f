//! The Rust per-device table, which `rmm/mr/per_device_resource.hpp` keeps in agreement with the
//! C++ one.

use super::outcome::guard;
use super::plain::PlainResource;
use super::resource::AnyResource;
use rmm::device::DeviceId;
use rmm::per_device_resource;
use std::sync::Arc;

/// Makes `resource` the Rust per-device resource of `device` and returns the one it replaced, for
/// the caller to drop when it likes (C++ drops it after releasing its own table's lock). A handle
/// whose construction failed changes nothing and comes back with its error as the status.
pub(crate) fn exchange_rust_per_device_resource(device: i32, resource: &AnyResource) -> Box<PlainResource> {
    PlainResource::make("per-device resource", || {
        let r = resource.shared()?.clone();
        Ok(per_device_resource::set_per_device_resource(DeviceId(device), r))
    })
}

/// Puts `device` back on the initial Rust resource and returns the one it had.
pub(crate) fn reset_rust_per_device_resource(device: i32) -> Box<PlainResource> {
    PlainResource::make("per-device resource", || Ok(per_device_resource::reset_per_device_resource(DeviceId(device))))
}

pub(crate) fn get_rust_per_device_resource(device: i32) -> Box<PlainResource> {
    PlainResource::make("per-device resource", || Ok(per_device_resource::get_per_device_resource(DeviceId(device))))
}

/// The Rust table's generation ([`per_device_resource::generation`]).
pub(crate) fn rust_per_device_generation() -> u64 {
    per_device_resource::generation()
}

/// Whether `resource` is (the same object as) the Rust per-device resource of `device`.
pub(crate) fn rust_per_device_resource_is(device: i32, resource: &AnyResource) -> bool {
    guard(
        "rust_per_device_resource_is",
        |_| false,
        || {
            let current = per_device_resource::get_per_device_resource(DeviceId(device));
            resource.shared().is_ok_and(|r| Arc::ptr_eq(r, &current))
        },
    )
}
