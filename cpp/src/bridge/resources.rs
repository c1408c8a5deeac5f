//! The Rust side of the bridge: [`RustResource`] and the functions C++ calls.

use super::cpp_upstream::CppUpstream;
use super::ffi::{self, CounterPair, ErrorKind, Outcome};
use super::outcome::{caught, guard, guard_outcome, what_of, Context};
use rmm::adaptor::{
    Counter as StatCounter, CounterFrame, LimitingResourceAdaptor, LoggingResourceAdaptor, StatisticsResourceAdaptor,
    TrackingResourceAdaptor,
};
use rmm::device::DeviceId;
use rmm::error::{Error, Result};
use rmm::per_device_resource;
use rmm::resource::cuda_async_view::async_pool_of;
use rmm::resource::{
    ArenaMemoryResource, HostMemoryResource, ManagedMemoryResource, MemoryResource, PinnedHostMemoryResource,
    PoolMemoryResource, SharedResource,
};
use rmm::stream::CudaStreamView;
use std::any::Any;
use std::fmt::Display;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

thread_local! {
    /// The error of this thread's last failed [`RustResource::allocate_or_null`].
    static LAST_ALLOCATE_ERROR: std::cell::RefCell<Option<Outcome>> = const { std::cell::RefCell::new(None) };
}

/// A copy of the error that prevented making a resource (the rare path of
/// [`RustResource::shared`]).
#[cold]
#[inline(never)]
fn construction_error(e: &Error) -> Error {
    e.clone()
}

/// The pointer `f` allocates, or 0 with its error (or panic) kept for [`take_allocate_error`].
#[inline(always)]
fn pointer_or_null(f: impl FnOnce() -> Result<*mut u8>) -> usize {
    match caught("allocate", f) {
        Ok(Ok(p)) => p as usize,
        Ok(Err(e)) => keep_allocate_error(Outcome::from_error(&e, Context::Allocate)),
        Err(m) => keep_allocate_error(Outcome::error(ErrorKind::BadAlloc, m)),
    }
}

/// Keeps `out` as this thread's last allocation error and returns the null pointer.
#[cold]
#[inline(never)]
fn keep_allocate_error(out: Outcome) -> usize {
    // `try_with`: during thread teardown the error is lost, and C++ sees a bad_alloc.
    let _ = LAST_ALLOCATE_ERROR.try_with(|e| *e.borrow_mut() = Some(out));
    0
}

/// Why this thread's last `allocate_or_null` returned 0: its error (taken, so it is reported once),
/// or `Ok` when it returned 0 for a 0-byte request.
pub(crate) fn take_allocate_error() -> Outcome {
    guard_outcome("take_allocate_error", ErrorKind::BadAlloc, || {
        LAST_ALLOCATE_ERROR
            .try_with(|e| e.borrow_mut().take())
            .unwrap_or_else(|_| Some(Outcome::error(ErrorKind::BadAlloc, "allocation failed during thread exit")))
            .unwrap_or_else(|| Outcome::ok(0))
    })
}

/// A Rust resource held by C++, or the error that prevented making it.
///
/// Constructors cannot throw across the bridge, so a failed construction still yields a handle;
/// the C++ constructor reads [`RustResource::status`] and throws.
pub struct RustResource {
    made: std::result::Result<SharedResource, Error>,
    /// The same resource when it is a pool or an arena: calls from C++ reach it without dynamic
    /// dispatch.
    pub(super) direct: Direct,
    name: &'static str,
}

/// The resources whose allocations and frees the bridge calls statically (one discriminant test
/// on each call, so neither costs the other an instruction).
pub(super) enum Direct {
    None,
    Pool(Arc<Pool>),
    Arena(Arc<Arena>),
}

/// The arena as the bridge makes it: over a resource of either side.
pub(super) type Arena = ArenaMemoryResource<SharedResource>;

impl RustResource {
    pub(super) fn make(name: &'static str, f: impl FnOnce() -> Result<SharedResource>) -> Box<RustResource> {
        let made = guard(name, |m| Err(Error::InvalidArgument(m)), f);
        Box::new(RustResource { made, direct: Direct::None, name })
    }

    /// The resource, or the error of its construction. Inlined: every call from C++ to a
    /// resource other than the pool goes through here.
    #[inline]
    pub fn shared(&self) -> Result<&SharedResource> {
        match &self.made {
            Ok(r) => Ok(r),
            Err(e) => Err(construction_error(e)),
        }
    }

    /// The concrete resource when it is a `T`.
    pub(super) fn downcast<T: MemoryResource>(&self) -> Option<&T> {
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

    /// The allocation fast path: the pointer, or 0 with the error kept for
    /// [`take_allocate_error`] (an [`Outcome`] by value costs C++ a call back into Rust to drop
    /// its message, on every allocation).
    pub(crate) fn allocate_or_null(&self, bytes: usize, alignment: usize, stream: usize) -> usize {
        match &self.direct {
            Direct::Pool(pool) => {
                pointer_or_null(|| pool.allocate(bytes, alignment, CudaStreamView::from_handle(stream)))
            }
            _ => self.allocate_or_null_not_pool(bytes, alignment, stream),
        }
    }

    /// [`allocate_or_null`](Self::allocate_or_null) of any resource but the pool: out of line, so
    /// that the arena's fast path, inlined here, does not lengthen the pool's.
    #[inline(never)]
    fn allocate_or_null_not_pool(&self, bytes: usize, alignment: usize, stream: usize) -> usize {
        let view = CudaStreamView::from_handle(stream);
        match &self.direct {
            Direct::Arena(arena) => pointer_or_null(|| arena.allocate(bytes, alignment, view)),
            _ => pointer_or_null(|| self.shared().and_then(|r| r.allocate(bytes, alignment, view))),
        }
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
        let view = CudaStreamView::from_handle(stream);
        match &self.direct {
            Direct::Pool(pool) => self.free_or_report(ptr, bytes, alignment, stream, || {
                pool.deallocate(ptr as *mut u8, bytes, alignment, view)
            }),
            _ => self.deallocate_not_pool(ptr, bytes, alignment, stream),
        }
    }

    /// [`deallocate`](Self::deallocate) of any resource but the pool, out of line as
    /// [`allocate_or_null_not_pool`](Self::allocate_or_null_not_pool).
    #[inline(never)]
    fn deallocate_not_pool(&self, ptr: usize, bytes: usize, alignment: usize, stream: usize) {
        let view = CudaStreamView::from_handle(stream);
        let p = ptr as *mut u8;
        match &self.direct {
            Direct::Arena(arena) => {
                self.free_or_report(ptr, bytes, alignment, stream, || arena.deallocate(p, bytes, alignment, view))
            }
            _ => self.free_or_report(ptr, bytes, alignment, stream, || {
                self.shared().and_then(|r| r.deallocate(p, bytes, alignment, view))
            }),
        }
    }

    /// Runs the free `f`, reporting a refusal or a panic on stderr.
    #[inline(always)]
    fn free_or_report(
        &self,
        ptr: usize,
        bytes: usize,
        alignment: usize,
        stream: usize,
        f: impl FnOnce() -> Result<()>,
    ) {
        match caught("deallocate", f) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => self.report_refused_free(ptr, bytes, alignment, stream, &e),
            Err(m) => self.report_refused_free(ptr, bytes, alignment, stream, &m),
        }
    }

    /// A noexcept free has no one to tell but stderr; the resource refused the free and is
    /// unchanged. Write errors are ignored: there is nowhere left to report them.
    #[cold]
    #[inline(never)]
    fn report_refused_free(&self, ptr: usize, bytes: usize, alignment: usize, stream: usize, why: &dyn Display) {
        let _ = writeln!(
            std::io::stderr(),
            "rmm: deallocate({ptr:#x}, {bytes} bytes, alignment {alignment}, stream {stream:#x}) on {} failed: {why}",
            self.name,
        );
    }

    pub(crate) fn is_equal(&self, other: &RustResource) -> bool {
        guard(
            "is_equal",
            |_| false,
            || match (&self.made, &other.made) {
                (Ok(a), Ok(b)) => Arc::ptr_eq(a, b) || a.is_equal(&**b),
                _ => false,
            },
        )
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
            Err(e) => Outcome::error(ErrorKind::OutOfRange, what_of(&e)),
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

    pub(crate) fn cuda_async_pool_handle(&self) -> usize {
        guard("cuda_async_pool_handle", |_| 0, || self.shared().ok().and_then(|r| async_pool_of(&**r)).unwrap_or(0))
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

/// The resource of every C++ `cuda_memory_resource`: the Rust per-device table's initial resource
/// itself, so that the two tables can tell "still the initial resource" by identity.
pub(crate) fn new_cuda_memory_resource() -> Box<RustResource> {
    RustResource::make("cuda_memory_resource", || Ok(per_device_resource::initial_resource()))
}

/// What a moved-from C++ resource calls instead of its (gone) handle: it owns nothing, so every
/// allocation fails and every free is refused (and reported) by the construction error.
pub(crate) fn new_moved_from_resource() -> Box<RustResource> {
    RustResource::make("moved-from resource", || {
        Err(Error::InvalidArgument("the resource was moved from and owns no memory; nothing was freed".into()))
    })
}

pub(crate) fn new_managed_memory_resource() -> Box<RustResource> {
    RustResource::make("managed_memory_resource", || Ok(Arc::new(ManagedMemoryResource::new()) as SharedResource))
}

pub(crate) fn new_pinned_host_memory_resource() -> Box<RustResource> {
    RustResource::make(
        "pinned_host_memory_resource",
        || Ok(Arc::new(PinnedHostMemoryResource::new()) as SharedResource),
    )
}

pub(crate) fn new_pool_memory_resource(
    upstream: &RustResource,
    initial_size: usize,
    maximum_size: usize,
    has_maximum: bool,
) -> Box<RustResource> {
    let mut direct = Direct::None;
    let mut made = RustResource::make("pool_memory_resource", || {
        let pool = Arc::new(Pool::new(upstream.shared()?.clone(), initial_size, has_maximum.then_some(maximum_size))?);
        direct = Direct::Pool(Arc::clone(&pool));
        Ok(pool as SharedResource)
    });
    made.direct = direct;
    made
}

pub(crate) fn new_statistics_adaptor(upstream: &RustResource) -> Box<RustResource> {
    RustResource::make("statistics_resource_adaptor", || {
        Ok(Arc::new(Statistics::new(upstream.shared()?.clone())) as SharedResource)
    })
}

pub(crate) fn new_tracking_adaptor(upstream: &RustResource, capture_stacks: bool) -> Box<RustResource> {
    RustResource::make("tracking_resource_adaptor", || {
        Ok(Arc::new(Tracking::new(upstream.shared()?.clone(), capture_stacks)) as SharedResource)
    })
}

/// Counts each allocation as its size rounded up to `alignment` (a power of two), as RMM does.
pub(crate) fn new_limiting_adaptor(
    upstream: &RustResource,
    allocation_limit: usize,
    alignment: usize,
) -> Box<RustResource> {
    RustResource::make("limiting_resource_adaptor", || {
        let limiting = Limiting::with_alignment(upstream.shared()?.clone(), allocation_limit, alignment)?;
        Ok(Arc::new(limiting) as SharedResource)
    })
}

/// Logs to the file `path`; as with RMM, a path that cannot be opened (the empty one too) fails.
pub(crate) fn new_logging_adaptor(upstream: &RustResource, path: &str, auto_flush: bool) -> Box<RustResource> {
    RustResource::make("logging_resource_adaptor", || {
        let log = Logging::new(upstream.shared()?.clone(), Some(Path::new(path)))?;
        Ok(Arc::new(log.with_auto_flush(auto_flush)) as SharedResource)
    })
}

/// Makes `resource` the Rust per-device resource of `device` and returns the one it replaced, for
/// the caller to drop when it likes (C++ drops it after releasing its own table's lock). A handle
/// whose construction failed changes nothing and comes back with its error as the status.
pub(crate) fn exchange_rust_per_device_resource(device: i32, resource: &RustResource) -> Box<RustResource> {
    RustResource::make("per-device resource", || {
        let r = resource.shared()?.clone();
        Ok(per_device_resource::set_per_device_resource(DeviceId(device), r))
    })
}

/// Puts `device` back on the initial Rust resource and returns the one it had.
pub(crate) fn reset_rust_per_device_resource(device: i32) -> Box<RustResource> {
    RustResource::make("per-device resource", || Ok(per_device_resource::reset_per_device_resource(DeviceId(device))))
}

pub(crate) fn get_rust_per_device_resource(device: i32) -> Box<RustResource> {
    RustResource::make("per-device resource", || Ok(per_device_resource::get_per_device_resource(DeviceId(device))))
}

/// The Rust table's generation ([`per_device_resource::generation`]).
pub(crate) fn rust_per_device_generation() -> u64 {
    per_device_resource::generation()
}

/// Whether `resource` is (the same object as) the Rust per-device resource of `device`.
pub(crate) fn rust_per_device_resource_is(device: i32, resource: &RustResource) -> bool {
    guard(
        "rust_per_device_resource_is",
        |_| false,
        || {
            let current = per_device_resource::get_per_device_resource(DeviceId(device));
            resource.shared().is_ok_and(|r| Arc::ptr_eq(r, &current))
        },
    )
}

// ---------------------------------------------------------------------------------------------
// The concrete types the constructors above make. Adaptors and pools hold their upstream as a
// `SharedResource`, so the accessors below downcast to these concrete types.
// ---------------------------------------------------------------------------------------------

/// The pool as the bridge makes it: over a resource of either side.
pub(super) type Pool = PoolMemoryResource<SharedResource>;
type Statistics = StatisticsResourceAdaptor<SharedResource>;
type Tracking = TrackingResourceAdaptor<SharedResource>;
type Limiting = LimitingResourceAdaptor<SharedResource>;
type Logging = LoggingResourceAdaptor<SharedResource>;

fn pool_size_of(r: &RustResource) -> usize {
    r.downcast::<Pool>().map_or(0, |p| p.pool_size())
}

fn frame_to_pair(f: CounterFrame) -> CounterPair {
    let c = |c: StatCounter| ffi::Counter { value: c.value, peak: c.peak, total: c.total };
    CounterPair { bytes: c(f.bytes), allocations: c(f.allocations) }
}

fn counters_of(r: &RustResource) -> CounterPair {
    r.downcast::<Statistics>().map_or_else(CounterPair::default, |s| frame_to_pair(s.counters()))
}

fn push_counters_of(r: &RustResource) -> CounterPair {
    r.downcast::<Statistics>().map_or_else(CounterPair::default, |s| frame_to_pair(s.push_counters()))
}

fn pop_counters_of(r: &RustResource) -> Result<CounterPair> {
    let s = r.downcast::<Statistics>().ok_or_else(|| Error::InvalidArgument(format!("{} has no counters", r.name)))?;
    s.pop_counters().map(frame_to_pair)
}

fn allocated_bytes_of(r: &RustResource) -> usize {
    if let Some(t) = r.downcast::<Tracking>() {
        t.allocated_bytes()
    } else {
        r.downcast::<Limiting>().map_or(0, |l| l.allocated_bytes())
    }
}

fn allocation_limit_of(r: &RustResource) -> usize {
    r.downcast::<Limiting>().map_or(0, |l| l.allocation_limit())
}

fn outstanding_allocations_of(r: &RustResource) -> String {
    r.downcast::<Tracking>().map_or_else(String::new, |t| t.report())
}

fn flush_log_of(r: &RustResource) -> Result<()> {
    r.downcast::<Logging>().map_or(Ok(()), |l| l.flush())
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
    fn the_fast_path_keeps_the_error_for_take_allocate_error() {
        let pool = new_pool_memory_resource(&new_host_memory_resource(), 0, 4096, true);
        assert!(take_allocate_error().is_ok(), "nothing failed yet");
        assert_eq!(pool.allocate_or_null(0, 256, 0), 0);
        assert!(take_allocate_error().is_ok(), "a 0-byte request is null without an error");
        assert_eq!(pool.allocate_or_null(8, 3, 0), 0);
        let bad = take_allocate_error();
        assert_eq!(bad.kind, ErrorKind::BadAlloc, "{}", bad.message);
        assert!(take_allocate_error().is_ok(), "an error is reported once");
        assert_eq!(pool.allocate_or_null(8192, 256, 0), 0);
        let oom = take_allocate_error();
        assert_eq!(oom.kind, ErrorKind::OutOfMemory);
        assert!(oom.message.contains("(failed to allocate 8.000000 KiB)"), "{}", oom.message);
        let p = pool.allocate_or_null(4096, 256, 0);
        assert!(p != 0 && p % 256 == 0);
        pool.deallocate(p, 4096, 256, 0);
        assert_eq!(pool.pool_size(), 4096);
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
        let a2 = Box::new(RustResource { made: Ok(a.shared().unwrap().clone()), direct: Direct::None, name: "copy" });
        assert!(a.is_equal(&a2));
        assert!(!a.is_equal(&b));
    }

    #[test]
    fn pool_statistics_and_limits_through_the_bridge_on_host_memory() {
        let host = new_host_memory_resource();
        let pool = new_pool_memory_resource(&host, 1 << 20, 0, false);
        assert!(pool.status().is_ok(), "{}", pool.status().message);
        assert_eq!(pool.pool_size(), 1 << 20);
        let stats = new_statistics_adaptor(&pool);
        let limit = new_limiting_adaptor(&stats, 4096, 256);

        let a = limit.allocate(3000, 256, 0);
        assert!(a.is_ok(), "{}", a.message);
        let refused = limit.allocate(3000, 256, 0);
        assert_eq!(refused.kind, ErrorKind::OutOfMemory);
        assert!(refused.message.contains("3000"), "{}", refused.message);
        assert_eq!(limit.allocated_bytes(), 3072);
        assert_eq!(limit.allocation_limit(), 4096);

        let c = stats.counters();
        assert_eq!((c.bytes.value, c.allocations.value, c.allocations.total), (3000, 1, 1));
        stats.push_counters();
        let mut popped = CounterPair::default();
        assert!(stats.pop_counters(&mut popped).is_ok());
        let refused = stats.pop_counters(&mut popped);
        assert_eq!(refused.kind, ErrorKind::OutOfRange);
        assert_eq!(refused.message, "cannot pop the last counter pair");

        assert!(limit.try_deallocate(a.ptr, 3000, 256, 0).is_ok());
        assert_eq!(stats.counters().bytes.value, 0);
        // A second free is refused by the pool and changes no counter.
        assert_eq!(limit.try_deallocate(a.ptr, 3000, 256, 0).kind, ErrorKind::Logic);
        assert_eq!(stats.counters().allocations.value, 0);
    }

    #[test]
    fn bad_pool_sizes_are_logic_errors() {
        let host = new_host_memory_resource();
        let pool = new_pool_memory_resource(&host, 1000, 0, false);
        assert_eq!(pool.status().kind, ErrorKind::Logic);
    }
}
