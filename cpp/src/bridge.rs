//! The C++ face: one cxx bridge between the Rust resources and the headers under `include/rmm/`.
//!
//! C++ holds a Rust resource as `rust::Box<RustResource>` (behind a `std::shared_ptr`, so copies of a
//! C++ resource share one Rust resource). A C++ resource that is not ours crosses the other way as
//! `CppResource` and becomes an ordinary [`MemoryResource`](rmm::MemoryResource) (`CppUpstream`),
//! so it can feed a Rust pool. The implementations live in `bridge/`; this file only declares
//! the boundary.
//!
//! # How errors cross
//!
//! Neither a panic nor a C++ exception may cross the boundary, so every error takes one of these
//! channels, and the C++ headers (`rmm/detail/rust_bridge.hpp`, `rmm/mr/detail/rust_resource.hpp`)
//! turn each into RMM's exception types by its `ErrorKind`:
//!
//! | channel | used by | on the C++ side |
//! | --- | --- | --- |
//! | an `Outcome` returned (kind, message, pointer) | `allocate`, `try_deallocate`, the queries of one kind (`pool_size`, `statistics_*`, `logging_flush`, ...) | thrown by kind (the `noexcept` queries read 0 or empty counters instead) |
//! | 0 from `rmm_rs_allocate_or_null`, the error kept per thread and read by `take_allocate_error` | the allocation fast path, which returns just the pointer (a plain C symbol beside the bridge, as is `rmm_rs_deallocate`: see `bridge/handle.rs`) | a 0 with a non-`Ok` error is thrown; 0 with `Ok` was a 0-byte request |
//! | kept in the handle, read by `status` | every `new_*` constructor and `exchange_rust_per_device_resource`: a handle is always returned | thrown by the C++ constructor or setter |
//! | a line on stderr naming pointer, size, alignment and stream; the resource is unchanged | `rmm_rs_deallocate`, which C++ calls from `noexcept` code | nothing to throw |
//! | a line on stderr | `register_stream`, `retire_stream` (stream constructors and destructors) | nothing to throw |
//!
//! A panic inside any of these functions is caught where it starts (`outcome::guard`) and becomes
//! that function's channel with the panic's message: for an `Outcome`, the kind the function gives
//! for it. The other way, a C++ exception from a `CppResource` allocation comes back in the
//! `Outcome` passed to it, as one from a `CppAllocationCallbacks` allocate does; a `CppLogSink`
//! that throws reports `false`, which the log keeps as its first write error.

// The handle and the calls every kind answers.
mod handle;
mod outcome;
// One file per kind of resource or adaptor: its constructor and its queries.
mod adaptors;
mod arena;
mod binning;
mod capture;
mod cuda_async;
mod fixed_size;
mod history;
mod limiting;
mod logging;
mod plain;
mod pool;
mod statistics;
mod system;
mod tracking;
mod virtual_pool;
// A C++ resource as a Rust upstream; the per-device table, streams, logger and capabilities.
mod capabilities;
mod cpp_upstream;
mod logger;
mod per_device;
mod pointer_check;
mod streams;
#[cfg(test)]
mod tests;

pub use handle::RustResource;

use adaptors::*;
use arena::new_arena_memory_resource;
use binning::*;
use capabilities::runtime_capability;
use capture::*;
use cuda_async::*;
use fixed_size::*;
use handle::take_allocate_error;
use history::*;
use limiting::*;
use logger::*;
use logging::*;
use per_device::*;
use plain::*;
use pool::*;
use rmm::build_cuda_major;
use rmm::process_exit::{mark_process_exiting, process_is_exiting};
use statistics::*;
use streams::{register_stream, retire_stream};
use system::*;
use tracking::*;
use virtual_pool::*;

#[cxx::bridge(namespace = "rmm_rs")]
pub(crate) mod ffi {
    // ---------------------------------------------------------------------------------------------
    // Shared types
    // ---------------------------------------------------------------------------------------------

    /// Which exception the C++ side throws for a failed call.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum ErrorKind {
        /// No error.
        Ok,
        /// `rmm::out_of_memory`.
        OutOfMemory,
        /// `rmm::bad_alloc`: an allocation failed for a reason other than memory running out.
        BadAlloc,
        /// `rmm::logic_error`: the caller broke a contract (misuse, bad constructor argument).
        Logic,
        /// `rmm::out_of_range` (for example popping an empty statistics stack).
        OutOfRange,
        /// `rmm::cuda_error`: a CUDA call failed, or there is no driver.
        Cuda,
    }

    /// The result of a call: `kind == Ok` and `ptr` set, or an error kind and its message.
    #[derive(Debug, Clone)]
    struct Outcome {
        kind: ErrorKind,
        message: String,
        ptr: usize,
    }

    /// One statistics counter, as RMM's `statistics_resource_adaptor::counter`.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    struct Counter {
        value: i64,
        peak: i64,
        total: i64,
    }

    /// The two counters of a statistics adaptor.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    struct CounterPair {
        bytes: Counter,
        allocations: Counter,
    }

    /// What `rmm/detail/runtime_capabilities.hpp` asks of the device and driver.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Capability {
        /// Memory pools (`cudaMallocAsync`).
        AsyncAlloc,
        /// Pools exporting allocations as the given handle types.
        ExportHandleType,
        /// Hardware decompression (a 12.8 driver).
        HwDecompress,
        /// Concurrent managed access.
        ConcurrentManagedAccess,
        /// Pools of managed memory (a 13.0 driver and concurrent managed access).
        AsyncManagedAlloc,
        /// An integrated GPU.
        DeviceIntegratedMemory,
        /// Access to system-allocated memory (HMM or ATS).
        SystemMemory,
    }

    /// One outstanding allocation of a tracking adaptor, for its C++ map.
    #[derive(Debug, Clone)]
    struct TrackedAllocation {
        ptr: usize,
        bytes: usize,
        /// Whether a stack was captured (then `frames`, innermost first, says where).
        captured: bool,
        frames: Vec<String>,
    }

    // ---------------------------------------------------------------------------------------------
    // extern "Rust": what the C++ headers call
    // ---------------------------------------------------------------------------------------------
    extern "Rust" {
        /// A Rust resource (or a failed attempt to make one: see `status`).
        type RustResource;

        /// `Ok`, or why the constructor that made this handle failed.
        fn status(self: &RustResource) -> Outcome;
        /// Allocates `bytes` on `stream` (a `cudaStream_t` as an integer).
        unsafe fn allocate(self: &RustResource, bytes: usize, alignment: usize, stream: usize) -> Outcome;
        /// Like `rmm_rs_deallocate`, but hands the refusal back instead of printing it.
        unsafe fn try_deallocate(
            self: &RustResource,
            ptr: usize,
            bytes: usize,
            alignment: usize,
            stream: usize,
        ) -> Outcome;
        /// Why this thread's last `rmm_rs_allocate_or_null` returned 0 (`Ok` for a 0-byte request); taken.
        fn take_allocate_error() -> Outcome;
        /// True when memory of one may be freed through the other.
        fn is_equal(self: &RustResource, other: &RustResource) -> bool;
        fn is_device_accessible(self: &RustResource) -> bool;
        fn is_host_accessible(self: &RustResource) -> bool;
        /// The resource's type, for messages.
        fn describe(self: &RustResource) -> String;

        // Queries of one kind of resource, each named after its kind. The value comes in the
        // `Outcome`'s `ptr` (or in the out parameter); asked of a resource of another kind (or a
        // moved-from one) the `Outcome` is a `Logic` error naming both kinds.
        /// Bytes a pool took from its upstream.
        fn pool_size(r: &RustResource) -> Outcome;
        /// Gives a pool's wholly free chunks back to its upstream; the bytes given back.
        fn pool_release(r: &RustResource) -> Outcome;
        /// A statistics adaptor's counters of the current region.
        fn statistics_counters(r: &RustResource, counters: &mut CounterPair) -> Outcome;
        /// Starts a region; `counters` gets those of the enclosing one.
        fn statistics_push_counters(r: &RustResource, counters: &mut CounterPair) -> Outcome;
        /// Ends the innermost region (`OutOfRange` when there is none); `popped` gets its counters.
        fn statistics_pop_counters(r: &RustResource, popped: &mut CounterPair) -> Outcome;
        /// Bytes allocated through a tracking adaptor.
        fn tracking_allocated_bytes(r: &RustResource) -> Outcome;
        /// Bytes allocated through a limiting adaptor (each rounded up to its alignment).
        fn limiting_allocated_bytes(r: &RustResource) -> Outcome;
        /// A limiting adaptor's limit.
        fn limiting_allocation_limit(r: &RustResource) -> Outcome;
        /// Writes a logging adaptor's buffered lines out.
        fn logging_flush(r: &RustResource) -> Outcome;
        /// The `CUmemoryPool` of a resource of the cuda_async family.
        fn cuda_async_pool_handle(r: &RustResource) -> Outcome;

        // Constructors. They never fail outright: a failure is kept in the handle (`status`).
        fn new_cuda_memory_resource() -> Box<RustResource>;
        fn new_managed_memory_resource() -> Box<RustResource>;
        fn new_pinned_host_memory_resource() -> Box<RustResource>;
        fn new_cuda_async_memory_resource(
            initial_pool_size: usize,
            has_initial_pool_size: bool,
            release_threshold: usize,
            has_release_threshold: bool,
            export_handle_type: u32,
        ) -> Box<RustResource>;
        fn new_pool_memory_resource(
            upstream: &RustResource,
            initial_size: usize,
            maximum_size: usize,
            has_maximum: bool,
        ) -> Box<RustResource>;
        fn new_statistics_adaptor(upstream: &RustResource) -> Box<RustResource>;
        fn new_tracking_adaptor(upstream: &RustResource, capture_stacks: bool) -> Box<RustResource>;
        fn new_limiting_adaptor(
            upstream: &RustResource,
            allocation_limit: usize,
            alignment: usize,
        ) -> Box<RustResource>;
        fn new_logging_adaptor(upstream: &RustResource, path: &str, auto_flush: bool) -> Box<RustResource>;
        // The cuda_async family (bridge/cuda_async.rs), system and SAM-headroom resources
        // (bridge/system.rs), capability checks (bridge/capabilities.rs).
        /// A view of the `cudaMemPool_t` `pool` (0: an empty view); the pool stays the caller's.
        fn new_cuda_async_view_memory_resource(pool: usize) -> Box<RustResource>;
        fn new_cuda_async_managed_memory_resource() -> Box<RustResource>;
        fn new_system_memory_resource() -> Box<RustResource>;
        fn new_sam_headroom_memory_resource(headroom: usize) -> Box<RustResource>;
        /// Whether device `device` has `capability` (`ptr` 1 or 0), or the driver's error.
        fn runtime_capability(capability: Capability, device: i32, handle_types: u32) -> Outcome;
        // arena_memory_resource (bridge/arena.rs)
        fn new_arena_memory_resource(
            upstream: &RustResource,
            arena_size: usize,
            has_arena_size: bool,
            dump_log_on_failure: bool,
        ) -> Box<RustResource>;

        /// Host memory from the global allocator: lets the bridge be tested without a GPU.
        fn new_host_memory_resource() -> Box<RustResource>;
        /// A C++ resource that is not ours, seen as a Rust resource (for example a pool's upstream).
        fn new_cpp_resource_wrapper(resource: UniquePtr<CppResource>) -> Box<RustResource>;

        // The Rust per-device table, which `rmm/mr/per_device_resource.hpp` keeps in agreement
        // with the C++ one.
        /// Makes `resource` the Rust per-device resource of `device`, so Rust code called from C++
        /// uses the same memory as the C++ code that set it; returns the one it replaced (a
        /// handle whose `status` is the error when `resource` failed construction: then nothing
        /// changed).
        fn exchange_rust_per_device_resource(device: i32, resource: &RustResource) -> Box<RustResource>;
        /// Puts `device` back on the initial Rust resource; returns the one it had.
        fn reset_rust_per_device_resource(device: i32) -> Box<RustResource>;
        /// The Rust per-device resource of `device` (the initial one, `cuda_memory_resource`'s,
        /// unless one was set).
        fn get_rust_per_device_resource(device: i32) -> Box<RustResource>;
        /// Changes whenever any device's Rust resource is set or reset.
        fn rust_per_device_generation() -> u64;
        /// Whether `resource` is the very Rust per-device resource of `device` (not merely equal).
        fn rust_per_device_resource_is(device: i32, resource: &RustResource) -> bool;
        /// The handle a moved-from C++ resource calls: allocations fail, frees are refused.
        fn new_moved_from_resource() -> Box<RustResource>;

        /// `rmm::cuda_stream` created the stream `handle`: pools trust its handle until it retires.
        unsafe fn register_stream(handle: usize);
        /// `rmm::cuda_stream` is about to destroy the stream `handle` (still alive): pools capture
        /// its queued work and keep its free blocks from the next stream to get the handle.
        unsafe fn retire_stream(handle: usize);

        // fixed_size_memory_resource (bridge/fixed_size.rs), binning_memory_resource
        // (bridge/binning.rs).
        fn new_fixed_size_memory_resource(
            upstream: &RustResource,
            block_size: usize,
            blocks_to_preallocate: usize,
        ) -> Box<RustResource>;
        /// The block size of a fixed-size resource (a query: see above).
        fn fixed_size_block_size(r: &RustResource) -> Outcome;
        /// Without `has_range` no bins; with it fixed-size bins of 2^min to 2^max bytes.
        fn new_binning_memory_resource(
            upstream: &RustResource,
            min_size_exponent: i8,
            max_size_exponent: i8,
            has_range: bool,
        ) -> Box<RustResource>;
        /// Adds a fixed-size bin over the binning resource's upstream.
        fn binning_add_bin(r: &RustResource, allocation_size: usize) -> Outcome;
        /// Adds a bin served by `bin`.
        fn binning_add_bin_resource(r: &RustResource, allocation_size: usize, bin: &RustResource) -> Outcome;

        /// From an exit hook: from now on Rust destructors and frees leave the CUDA driver alone
        /// (see `rmm::process_exit`). Cannot fail or panic (an atomic store and a debug log line).
        fn mark_process_exiting();
    }

    // Aligned, thread-safe and prefetch adaptors, the callback resource, rmm::prefetch.
    extern "Rust" {
        fn new_aligned_adaptor(
            upstream: &RustResource,
            alignment: usize,
            alignment_threshold: usize,
        ) -> Box<RustResource>;
        fn new_thread_safe_adaptor(upstream: &RustResource) -> Box<RustResource>;
        fn new_prefetch_adaptor(upstream: &RustResource) -> Box<RustResource>;
        fn new_callback_memory_resource(callbacks: UniquePtr<CppAllocationCallbacks>) -> Box<RustResource>;
        /// Prefetches managed memory to `device` on `stream`; other memory is left alone.
        unsafe fn prefetch_memory(ptr: usize, bytes: usize, device: i32, stream: usize) -> Outcome;
    }

    // history_resource_adaptor (bridge/history.rs, an rmm-rs addition): the queries answer as
    // those above.
    extern "Rust" {
        fn new_history_adaptor(upstream: &RustResource) -> Box<RustResource>;
        /// Starts (`enabled`) or stops recording, keeping at most `max_entries` events (0 is an
        /// invalid argument); `clear` forgets those recorded; `stacks` records native stacks.
        fn history_record(r: &RustResource, enabled: bool, max_entries: usize, clear: bool, stacks: bool) -> Outcome;
        /// 1 while recording, else 0.
        fn history_is_recording(r: &RustResource) -> Outcome;
        /// The number of events kept.
        fn history_length(r: &RustResource) -> Outcome;
        /// Writes the snapshot's pickle to `path`.
        fn history_dump_snapshot(r: &RustResource, path: &str) -> Outcome;
        /// The snapshot's pickle into `out`.
        fn history_snapshot(r: &RustResource, out: &mut Vec<u8>) -> Outcome;
        /// Writes the snapshot and memory map into `dir` on out-of-memory (`""`: no more).
        fn history_dump_on_oom(r: &RustResource, dir: &str) -> Outcome;
    }

    // virtual_pool_memory_resource (bridge/virtual_pool.rs): the queries answer as those above.
    extern "Rust" {
        /// A pool over `maximum_size` bytes of reserved addresses, `initial_size` mapped at once, on
        /// `device` (the current one without `has_device`), `peers` given access, in granules of
        /// `granule` bytes (0: the device's), exportable as POSIX file descriptors if asked.
        fn new_virtual_pool_memory_resource(
            maximum_size: usize,
            initial_size: usize,
            device: i32,
            has_device: bool,
            peers: &[i32],
            granule: usize,
            export_posix_fd: bool,
        ) -> Box<RustResource>;
        /// Unmaps whole free granules until at most `keep` bytes stay mapped; the bytes unmapped.
        fn virtual_pool_release_above(r: &RustResource, keep: usize) -> Outcome;
        /// Bytes mapped into the reservation.
        fn virtual_pool_mapped_bytes(r: &RustResource) -> Outcome;
        /// Bytes of the reservation.
        fn virtual_pool_reserved_bytes(r: &RustResource) -> Outcome;
        /// Bytes of one granule.
        fn virtual_pool_granularity(r: &RustResource) -> Outcome;
        /// Bytes the pool holds (handed out and free).
        fn virtual_pool_size(r: &RustResource) -> Outcome;
        /// A POSIX file descriptor for the mapped granule at `addr` (the caller closes it).
        fn virtual_pool_export_posix_fd(r: &RustResource, addr: usize) -> Outcome;
    }

    // Allocation during stream capture, for both pools (bridge/capture.rs): not in RMM 26.10.
    // Each answers as the queries above (a `Logic` error for another kind of resource).
    extern "Rust" {
        /// Marks `stream`, being captured, as allocating from memory private to its capture;
        /// the capture's id (a `Logic` error for a stream not capturing).
        unsafe fn capture_begin(r: &RustResource, stream: usize) -> Outcome;
        /// The capture on `stream` ended; a stream never marked is left alone.
        unsafe fn capture_end(r: &RustResource, stream: usize) -> Outcome;
        /// Gives capture `id`'s private memory back to the pool (a `Logic` error while it is
        /// marked on a stream or holds live blocks, or for an unknown id).
        fn capture_release(r: &RustResource, id: u64) -> Outcome;
        /// The ids of the captures whose private memory the pool keeps, into `out`.
        fn capture_ids(r: &RustResource, out: &mut Vec<u64>) -> Outcome;
        /// Bytes of private memory kept for capture `id` (0 for an unknown one).
        fn capture_pool_bytes(r: &RustResource, id: u64) -> Outcome;
    }

    // Tracking adaptor's map, logging adaptor to C++ sinks.
    extern "Rust" {
        /// The outstanding allocations of a tracking adaptor, by address, into `out` (a query).
        fn tracked_allocations(r: &RustResource, out: &mut Vec<TrackedAllocation>) -> Outcome;
        /// A logging adaptor writing its lines to `sink` (a std::ostream or rapids_logger sinks).
        fn new_logging_adaptor_to_sink(
            upstream: &RustResource,
            sink: UniquePtr<CppLogSink>,
            auto_flush: bool,
        ) -> Box<RustResource>;
    }

    // Logger and process state (rmm/logger.hpp, rmm/process_is_exiting.hpp): the C++ default
    // logger's level lives here, and its lines go to the Rust sink (`rmm::logger`).
    extern "Rust" {
        /// The default logger's level (a `rapids_logger::level_enum` value).
        fn logger_level() -> i32;
        fn logger_set_level(level: i32);
        /// The level at and above which a line flushes the sink.
        fn logger_flush_level() -> i32;
        fn logger_set_flush_level(level: i32);
        /// Writes one line formatted (and filtered) by C++, logged at `level` (bytes: C++ strings
        /// need not be UTF-8; invalid sequences are replaced).
        fn logger_write(level: i32, line: &[u8]);
        fn logger_flush();
        /// True once the process has begun to exit (`rmm::process_is_exiting()`).
        fn process_is_exiting() -> bool;
        /// The CUDA major the library was built for, 12 or 13 (`rmm::rs::build_cuda_major()`).
        fn build_cuda_major() -> u32;
    }

    // ---------------------------------------------------------------------------------------------
    // extern "C++": C++ objects Rust calls back into (declared in plain C++, no CUDA headers)
    // ---------------------------------------------------------------------------------------------
    unsafe extern "C++" {
        include!("rmm/detail/rust_bridge.hpp");

        /// Any CCCL `cuda::mr` resource, type-erased on the C++ side. Its methods never throw:
        /// a C++ exception from `allocate` comes back in `out`.
        type CppResource;
        fn allocate(self: &CppResource, bytes: usize, alignment: usize, stream: usize, out: &mut Outcome);
        fn deallocate(self: &CppResource, ptr: usize, bytes: usize, alignment: usize, stream: usize);
        fn equals(self: &CppResource, other: &CppResource) -> bool;
        fn host_accessible(self: &CppResource) -> bool;
    }

    // The callbacks of a callback_memory_resource.
    unsafe extern "C++" {
        include!("rmm/detail/rust_bridge_callbacks.hpp");

        /// The two functions of a `callback_memory_resource`. Neither throws: an exception of the
        /// allocate callback comes back in `out`, one of the deallocate callback is printed.
        type CppAllocationCallbacks;
        fn allocate(self: &CppAllocationCallbacks, bytes: usize, stream: usize, out: &mut Outcome);
        fn deallocate(self: &CppAllocationCallbacks, ptr: usize, bytes: usize, stream: usize);
    }

    // Where a logging adaptor writes when a C++ stream or sinks were given.
    unsafe extern "C++" {
        include!("rmm/detail/rust_bridge_log_sink.hpp");

        /// Takes whole lines (the `len` bytes at address `data`, no end of line); returns false
        /// when the C++ side threw, which never crosses into Rust.
        type CppLogSink;
        fn write_line(self: &CppLogSink, data: usize, len: usize) -> bool;
        fn flush(self: &CppLogSink) -> bool;
    }
}
