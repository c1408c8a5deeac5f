//! The Rust side of the bridge: [`RustResource`] and the functions C++ calls.

use super::cpp_upstream::CppUpstream;
use super::ffi::{self, CounterPair, ErrorKind, Outcome};
use super::outcome::{guard, guard_outcome, Context};
use crate::error::{Error, Result};
use crate::resource::{HostMemoryResource, MemoryResource, SharedResource};
use crate::stream::CudaStreamView;
use std::any::Any;
use std::io::Write;
use std::sync::Arc;

/// A Rust resource held by C++, or the error that prevented making it.
///
/// Constructors cannot throw across the bridge, so a failed construction still yields a handle;
/// the C++ constructor reads [`RustResource::status`] and throws.
pub struct RustResource {
    made: std::result::Result<SharedResource, Error>,
    name: &'static str,
}

impl RustResource {
    fn make(name: &'static str, f: impl FnOnce() -> Result<SharedResource>) -> Box<RustResource> {
        let made = guard(name, |m| Err(Error::InvalidArgument(m)), f);
        Box::new(RustResource { made, name })
    }

    /// The resource, or the error of its construction.
    pub fn shared(&self) -> Result<&SharedResource> {
        self.made.as_ref().map_err(Clone::clone)
    }

    /// The concrete resource when it is a `T`.
    fn downcast<T: MemoryResource>(&self) -> Option<&T> {
        let r: &dyn MemoryResource = &**self.made.as_ref().ok()?;
        (r as &dyn Any).downcast_ref::<T>()
    }

    pub(crate) fn status(&self) -> Outcome {
        match &self.made {
            Ok(_) => Outcome::ok(0),
            Err(e) => Outcome::from_error(e, Context::Construct),
        }
    }

    pub(crate) fn allocate(&self, bytes: usize, alignment: usize, stream: usize) -> Outcome {
        guard_outcome("allocate", ErrorKind::BadAlloc, || {
            match self.shared().and_then(|r| r.allocate(bytes, alignment, CudaStreamView::from_handle(stream))) {
                Ok(p) => Outcome::ok(p as usize),
                Err(e) => Outcome::from_error(&e, Context::Allocate),
            }
        })
    }

    pub(crate) fn try_deallocate(&self, ptr: usize, bytes: usize, alignment: usize, stream: usize) -> Outcome {
        guard_outcome("deallocate", ErrorKind::Logic, || {
            let view = CudaStreamView::from_handle(stream);
            match self.shared().and_then(|r| r.deallocate(ptr as *mut u8, bytes, alignment, view)) {
                Ok(()) => Outcome::ok(0),
                Err(e) => Outcome::from_error(&e, Context::Allocate),
            }
        })
    }

    pub(crate) fn deallocate(&self, ptr: usize, bytes: usize, alignment: usize, stream: usize) {
        let out = self.try_deallocate(ptr, bytes, alignment, stream);
        if !out.is_ok() {
            // A noexcept free has no one to tell but stderr; the resource refused the free and is
            // unchanged. Write errors are ignored: there is nowhere left to report them.
            let _ = writeln!(
                std::io::stderr(),
                "rmm: deallocate({ptr:#x}, {bytes} bytes, alignment {alignment}, stream {stream:#x}) on {} failed: {}",
                self.name,
                out.message
            );
        }
    }

    pub(crate) fn is_equal(&self, other: &RustResource) -> bool {
        guard("is_equal", |_| false, || match (&self.made, &other.made) {
            (Ok(a), Ok(b)) => Arc::ptr_eq(a, b) || a.is_equal(&**b),
            _ => false,
        })
    }

    pub(crate) fn is_device_accessible(&self) -> bool {
        guard("is_device_accessible", |_| false, || self.shared().is_ok_and(|r| r.is_device_accessible()))
    }

    pub(crate) fn is_host_accessible(&self) -> bool {
        guard("is_host_accessible", |_| false, || self.shared().is_ok_and(|r| r.is_host_accessible()))
    }

    pub(crate) fn describe(&self) -> String {
        self.name.to_string()
    }

    pub(crate) fn pool_size(&self) -> usize {
        guard("pool_size", |_| 0, || pool_size_of(self))
    }

    pub(crate) fn counters(&self) -> CounterPair {
        guard("counters", |_| CounterPair::default(), || counters_of(self))
    }

    pub(crate) fn push_counters(&self) -> CounterPair {
        guard("push_counters", |_| CounterPair::default(), || push_counters_of(self))
    }

    pub(crate) fn pop_counters(&self, popped: &mut CounterPair) -> Outcome {
        guard_outcome("pop_counters", ErrorKind::Logic, || match pop_counters_of(self) {
            Ok(p) => {
                *popped = p;
                Outcome::ok(0)
            }
            Err(e) => Outcome::error(ErrorKind::OutOfRange, e.to_string()),
        })
    }

    pub(crate) fn allocated_bytes(&self) -> usize {
        guard("allocated_bytes", |_| 0, || allocated_bytes_of(self))
    }

    pub(crate) fn allocation_limit(&self) -> usize {
        guard("allocation_limit", |_| 0, || allocation_limit_of(self))
    }

    pub(crate) fn outstanding_allocations(&self) -> String {
        guard("outstanding_allocations", |m| m, || outstanding_allocations_of(self))
    }

    pub(crate) fn flush_log(&self) -> Outcome {
        guard_outcome("flush_log", ErrorKind::Logic, || match flush_log_of(self) {
            Ok(()) => Outcome::ok(0),
            Err(e) => Outcome::from_error(&e, Context::Construct),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------------------------

pub(crate) fn new_host_memory_resource() -> Box<RustResource> {
    RustResource::make("host_memory_resource", || Ok(Arc::new(HostMemoryResource::new()) as SharedResource))
}

pub(crate) fn new_cpp_resource_wrapper(resource: cxx::UniquePtr<ffi::CppResource>) -> Box<RustResource> {
    RustResource::make("C++ resource", || {
        CppUpstream::new(resource)
            .map(|r| Arc::new(r) as SharedResource)
            .ok_or_else(|| Error::InvalidArgument("null C++ resource".into()))
    })
}

pub(crate) fn new_cuda_memory_resource() -> Box<RustResource> {
    RustResource::make("cuda_memory_resource", make_cuda)
}

pub(crate) fn new_managed_memory_resource() -> Box<RustResource> {
    RustResource::make("managed_memory_resource", make_managed)
}

pub(crate) fn new_pinned_host_memory_resource() -> Box<RustResource> {
    RustResource::make("pinned_host_memory_resource", make_pinned_host)
}

/// Sizes of zero mean "not given" (the driver's defaults). `flags` is RMM's export handle type.
pub(crate) fn new_cuda_async_memory_resource(initial_pool_size: usize, release_threshold: usize, flags: u32) -> Box<RustResource> {
    RustResource::make("cuda_async_memory_resource", || {
        if flags != 0 {
            return Err(Error::InvalidArgument(format!(
                "export handle type {flags} is not supported; only none (0)"
            )));
        }
        let opt = |v: usize| (v != 0).then_some(v);
        make_cuda_async(opt(initial_pool_size), opt(release_threshold))
    })
}

pub(crate) fn new_pool_memory_resource(
    upstream: &RustResource,
    initial_size: usize,
    maximum_size: usize,
    has_maximum: bool,
) -> Box<RustResource> {
    RustResource::make("pool_memory_resource", || {
        make_pool(upstream.shared()?.clone(), initial_size, has_maximum.then_some(maximum_size))
    })
}

pub(crate) fn new_statistics_adaptor(upstream: &RustResource) -> Box<RustResource> {
    RustResource::make("statistics_resource_adaptor", || make_statistics(upstream.shared()?.clone()))
}

pub(crate) fn new_tracking_adaptor(upstream: &RustResource, capture_stacks: bool) -> Box<RustResource> {
    RustResource::make("tracking_resource_adaptor", || make_tracking(upstream.shared()?.clone(), capture_stacks))
}

pub(crate) fn new_limiting_adaptor(upstream: &RustResource, allocation_limit: usize) -> Box<RustResource> {
    RustResource::make("limiting_resource_adaptor", || make_limiting(upstream.shared()?.clone(), allocation_limit))
}

/// An empty path logs to stdout.
pub(crate) fn new_logging_adaptor(upstream: &RustResource, path: &str) -> Box<RustResource> {
    RustResource::make("logging_resource_adaptor", || {
        let path = (!path.is_empty()).then(|| std::path::Path::new(path));
        make_logging(upstream.shared()?.clone(), path)
    })
}

pub(crate) fn new_failure_callback_adaptor(
    upstream: &RustResource,
    callback: cxx::UniquePtr<ffi::CppCallback>,
) -> Box<RustResource> {
    RustResource::make("failure_callback_resource_adaptor", || {
        if callback.is_null() {
            return Err(Error::InvalidArgument("null failure callback".into()));
        }
        let retry = move |bytes: usize| callback.as_ref().is_some_and(|c| c.call(bytes));
        make_failure_callback(upstream.shared()?.clone(), retry)
    })
}

pub(crate) fn set_rust_per_device_resource(device: i32, resource: &RustResource) -> Outcome {
    guard_outcome("set_rust_per_device_resource", ErrorKind::Logic, || {
        match resource.shared().and_then(|r| set_per_device(device, r.clone())) {
            Ok(()) => Outcome::ok(0),
            Err(e) => Outcome::from_error(&e, Context::Construct),
        }
    })
}

pub(crate) fn get_rust_per_device_resource(device: i32) -> Box<RustResource> {
    RustResource::make("per-device resource", || get_per_device(device))
}

// ---------------------------------------------------------------------------------------------
// The resources of the crate, one function each. Those whose Rust type has not landed in this
// branch yet report so as an error (the C++ constructor then throws `rmm::logic_error`).
// ---------------------------------------------------------------------------------------------

fn not_yet(what: &str) -> Error {
    Error::InvalidArgument(format!("{what} is not available in this build of rmm-rs yet"))
}

fn make_cuda() -> Result<SharedResource> {
    Err(not_yet("CudaMemoryResource"))
}

fn make_managed() -> Result<SharedResource> {
    Err(not_yet("ManagedMemoryResource"))
}

fn make_pinned_host() -> Result<SharedResource> {
    Err(not_yet("PinnedHostMemoryResource"))
}

fn make_cuda_async(_initial: Option<usize>, _release_threshold: Option<usize>) -> Result<SharedResource> {
    Err(not_yet("CudaAsyncMemoryResource"))
}

fn make_pool(_upstream: SharedResource, _initial: usize, _maximum: Option<usize>) -> Result<SharedResource> {
    Err(not_yet("PoolMemoryResource"))
}

fn make_statistics(_upstream: SharedResource) -> Result<SharedResource> {
    Err(not_yet("StatisticsResourceAdaptor"))
}

fn make_tracking(_upstream: SharedResource, _capture_stacks: bool) -> Result<SharedResource> {
    Err(not_yet("TrackingResourceAdaptor"))
}

fn make_limiting(_upstream: SharedResource, _limit: usize) -> Result<SharedResource> {
    Err(not_yet("LimitingResourceAdaptor"))
}

fn make_logging(_upstream: SharedResource, _path: Option<&std::path::Path>) -> Result<SharedResource> {
    Err(not_yet("LoggingResourceAdaptor"))
}

fn make_failure_callback(
    _upstream: SharedResource,
    _retry: impl Fn(usize) -> bool + Send + Sync + 'static,
) -> Result<SharedResource> {
    Err(not_yet("FailureCallbackResourceAdaptor"))
}

fn set_per_device(_device: i32, _resource: SharedResource) -> Result<()> {
    Err(not_yet("the Rust per-device resource table"))
}

fn get_per_device(_device: i32) -> Result<SharedResource> {
    Err(not_yet("the Rust per-device resource table"))
}

fn pool_size_of(_r: &RustResource) -> usize {
    0
}

fn counters_of(_r: &RustResource) -> CounterPair {
    CounterPair::default()
}

fn push_counters_of(_r: &RustResource) -> CounterPair {
    CounterPair::default()
}

fn pop_counters_of(_r: &RustResource) -> Result<CounterPair> {
    Err(not_yet("StatisticsResourceAdaptor"))
}

fn allocated_bytes_of(_r: &RustResource) -> usize {
    0
}

fn allocation_limit_of(_r: &RustResource) -> usize {
    0
}

fn outstanding_allocations_of(_r: &RustResource) -> String {
    String::new()
}

fn flush_log_of(_r: &RustResource) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_resource_round_trip_through_the_bridge_functions() {
        let r = new_host_memory_resource();
        assert!(r.status().is_ok());
        let a = r.allocate(1000, 256, 0);
        assert!(a.is_ok() && a.ptr % 256 == 0 && a.ptr != 0);
        assert!(r.try_deallocate(a.ptr, 1000, 256, 0).is_ok());
        // A second free is refused with a misuse error and leaves the resource as it was.
        let again = r.try_deallocate(a.ptr, 1000, 256, 0);
        assert_eq!(again.kind, ErrorKind::Logic, "{}", again.message);
        assert!(r.is_host_accessible() && !r.is_device_accessible());
    }

    #[test]
    fn bad_alignment_is_bad_alloc() {
        let r = new_host_memory_resource();
        assert_eq!(r.allocate(8, 3, 0).kind, ErrorKind::BadAlloc);
    }

    #[test]
    fn a_failed_upstream_fails_the_adaptor_with_its_reason() {
        let bad = RustResource::make("broken", || Err(Error::out_of_memory(1, "initial pool")));
        let s = new_statistics_adaptor(&bad);
        assert!(!s.status().is_ok());
        assert_eq!(s.allocate(8, 256, 0).kind, ErrorKind::OutOfMemory);
    }

    #[test]
    fn handles_of_one_resource_are_equal_and_distinct_resources_are_not() {
        let a = new_host_memory_resource();
        let b = new_host_memory_resource();
        let a2 = Box::new(RustResource { made: Ok(a.shared().unwrap().clone()), name: "copy" });
        assert!(a.is_equal(&a2));
        assert!(!a.is_equal(&b));
    }
}
