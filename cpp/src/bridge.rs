//! The C++ face: one cxx bridge between the Rust resources and the headers under `include/rmm/`.
//!
//! # One handle type per family
//!
//! C++ holds a Rust resource as `rust::Box<H>` (behind a `std::shared_ptr`, so copies of a C++
//! resource share one Rust resource), where `H` is the opaque type of the resource's family, which
//! carries that family's queries and nothing else:
//!
//! | type | family | reached |
//! | --- | --- | --- |
//! | `PoolResource` | `pool_memory_resource`, `virtual_pool_memory_resource` | directly |
//! | `ArenaResource` | `arena_memory_resource` | directly |
//! | `BlockResource` | `fixed_size_memory_resource`, `binning_memory_resource` | directly |
//! | `AdaptorResource` | the resource adaptors (statistics, tracking, limiting, logging, history, aligned, thread-safe, prefetch) | trait object |
//! | `AsyncResource` | `cuda_async_memory_resource`, its view and managed variant | trait object |
//! | `PlainResource` | cuda, managed, pinned host, system, SAM-headroom and host memory, the callback resource, a C++ resource, the per-device table's | trait object |
//!
//! Each family has one allocation and one free entry, a pair of plain C symbols beside the bridge
//! (`rmm_rs_<family>_allocate`, `rmm_rs_<family>_deallocate`: see `bridge/resource.rs`). What takes
//! a resource of any family (an upstream, a bin, the per-device table) takes the family-neutral
//! `AnyResource` every handle has (`resource()`), which also answers what every resource answers
//! (status, equality, accessibility). A C++ resource that is not ours crosses the other way as
//! `CppResource` and becomes an ordinary [`MemoryResource`](rmm::MemoryResource) (`CppUpstream`).
//! The implementations live in `bridge/`, one file per family or kind; this file only declares
//! the boundary.
//!
//! # How errors cross
//!
//! Every error crosses as an `Outcome` (an `ErrorKind` and the message), made in one place
//! (`bridge/outcome.rs`) and thrown by one C++ function (`throw_outcome` in
//! `rmm/mr/detail/rust_resource.hpp`) as RMM's exception of its kind. It reaches C++ as the value
//! of the call (queries, changes), as `take_allocate_error()` after a fast-path allocation returned
//! 0, or as `status()` of a handle whose constructor failed (constructors always return a handle).
//! The `noexcept` paths have no one to throw to: a refused free is reported on stderr (naming
//! pointer, size, alignment and stream; the resource is unchanged), as is a failure of
//! `register_stream` or `retire_stream`.
//!
//! A panic inside any of these functions is caught where it starts (`outcome::guard`) and becomes
//! that function's error with the panic's message. The other way, a C++ exception from a
//! `CppResource` allocation comes back in the `Outcome` passed to it, as one from a
//! `CppAllocationCallbacks` allocate does; a `CppLogSink` that throws reports `false`, which the
//! log keeps as its first write error.

// What every family shares, and the way errors cross.
mod outcome;
mod resource;
// The families: one file per family, with a file per kind where a kind has queries of its own.
mod adaptors;
mod arena;
mod block;
mod capture;
mod cuda_async;
mod direct;
mod history;
mod limiting;
mod logging;
mod plain;
mod pool;
mod statistics;
mod tracking;
mod virtual_pool;
// A C++ resource as a Rust upstream; the per-device table, streams, logger and driver questions.
mod capabilities;
mod cpp_upstream;
mod logger;
mod per_device;
mod pointer_check;
mod streams;
#[cfg(test)]
mod tests;

pub use adaptors::AdaptorResource;
pub use arena::ArenaResource;
pub use block::BlockResource;
pub use cuda_async::AsyncResource;
pub use plain::PlainResource;
pub use pool::PoolResource;
pub use resource::AnyResource;

use adaptors::*;
use arena::*;
use block::*;
use capabilities::*;
use cuda_async::*;
use history::*;
use limiting::*;
use logger::*;
use logging::*;
use per_device::*;
use plain::*;
use pool::*;
use resource::take_allocate_error;
use rmm::build_cuda_major;
use rmm::process_exit::{mark_process_exiting, process_is_exiting};
use statistics::*;
use streams::{register_stream, retire_stream};
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

    // What every handle has; queries answer in the `Outcome`'s `ptr` (or an out parameter), and a
    // query of one kind asked of another kind of its family is a `Logic` error naming both.
    extern "Rust" {
        /// The resource behind a handle of any family (or why it could not be made).
        type AnyResource;
        /// `Ok`, or why the constructor that made this handle failed.
        fn status(self: &AnyResource) -> Outcome;
        /// True when memory of one may be freed through the other.
        fn is_equal(self: &AnyResource, other: &AnyResource) -> bool;
        fn is_device_accessible(self: &AnyResource) -> bool;
        fn is_host_accessible(self: &AnyResource) -> bool;
        /// The resource's type, for messages.
        fn describe(self: &AnyResource) -> String;
        /// Why this thread's last fast-path allocation returned 0 (`Ok` for a 0-byte request); taken.
        fn take_allocate_error() -> Outcome;
    }

    // The pool family (bridge/pool.rs, virtual_pool.rs, capture.rs).
    extern "Rust" {
        type PoolResource;
        fn resource(self: &PoolResource) -> &AnyResource;
        fn new_pool_memory_resource(
            upstream: &AnyResource,
            initial_size: usize,
            maximum_size: usize,
            has_maximum: bool,
        ) -> Box<PoolResource>;
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
        ) -> Box<PoolResource>;
        fn new_moved_from_pool_resource() -> Box<PoolResource>;
        /// Bytes the pool holds (the classic pool: those it took from its upstream).
        fn pool_size(self: &PoolResource) -> Outcome;
        /// Gives the classic pool's wholly free chunks back to its upstream; the bytes given back.
        fn release(self: &PoolResource) -> Outcome;
        /// Unmaps a virtual pool's whole free granules until at most `keep` bytes stay mapped.
        fn release_above(self: &PoolResource, keep: usize) -> Outcome;
        /// Bytes mapped into a virtual pool's reservation.
        fn mapped_bytes(self: &PoolResource) -> Outcome;
        /// Bytes of a virtual pool's reservation.
        fn reserved_bytes(self: &PoolResource) -> Outcome;
        /// Bytes of one granule of a virtual pool.
        fn granularity(self: &PoolResource) -> Outcome;
        /// A POSIX file descriptor for a virtual pool's mapped granule at `addr` (the caller closes it).
        fn export_posix_fd(self: &PoolResource, addr: usize) -> Outcome;
        // Allocation during stream capture (not in RMM 26.10).
        /// Marks `stream`, being captured, as allocating from memory private to its capture;
        /// the capture's id (a `Logic` error for a stream not capturing).
        unsafe fn capture_begin(self: &PoolResource, stream: usize) -> Outcome;
        /// The capture on `stream` ended; a stream never marked is left alone.
        unsafe fn capture_end(self: &PoolResource, stream: usize) -> Outcome;
        /// Gives capture `id`'s private memory back to the pool (a `Logic` error while it is
        /// marked on a stream or holds live blocks, or for an unknown id).
        fn capture_release(self: &PoolResource, id: u64) -> Outcome;
        /// The ids of the captures whose private memory the pool keeps, into `out`.
        fn capture_ids(self: &PoolResource, out: &mut Vec<u64>) -> Outcome;
        /// Bytes of private memory kept for capture `id` (0 for an unknown one).
        fn capture_pool_bytes(self: &PoolResource, id: u64) -> Outcome;
    }

    // The arena family (bridge/arena.rs).
    extern "Rust" {
        type ArenaResource;
        fn resource(self: &ArenaResource) -> &AnyResource;
        fn new_arena_memory_resource(
            upstream: &AnyResource,
            arena_size: usize,
            has_arena_size: bool,
            dump_log_on_failure: bool,
        ) -> Box<ArenaResource>;
        fn new_moved_from_arena_resource() -> Box<ArenaResource>;
    }

    // The block family (bridge/block.rs).
    extern "Rust" {
        type BlockResource;
        fn resource(self: &BlockResource) -> &AnyResource;
        fn new_fixed_size_memory_resource(
            upstream: &AnyResource,
            block_size: usize,
            blocks_to_preallocate: usize,
        ) -> Box<BlockResource>;
        /// Without `has_range` no bins; with it fixed-size bins of 2^min to 2^max bytes.
        fn new_binning_memory_resource(
            upstream: &AnyResource,
            min_size_exponent: i8,
            max_size_exponent: i8,
            has_range: bool,
        ) -> Box<BlockResource>;
        fn new_moved_from_block_resource() -> Box<BlockResource>;
        /// The block size of a fixed-size resource.
        fn block_size(self: &BlockResource) -> Outcome;
        /// Adds a fixed-size bin over a binning resource's upstream.
        fn add_bin(self: &BlockResource, allocation_size: usize) -> Outcome;
        /// Adds a bin served by `bin`.
        fn add_bin_resource(self: &BlockResource, allocation_size: usize, bin: &AnyResource) -> Outcome;
    }

    // The adaptor family (bridge/adaptors.rs, and a file per adaptor with queries).
    extern "Rust" {
        type AdaptorResource;
        fn resource(self: &AdaptorResource) -> &AnyResource;
        fn new_aligned_adaptor(
            upstream: &AnyResource,
            alignment: usize,
            alignment_threshold: usize,
        ) -> Box<AdaptorResource>;
        fn new_thread_safe_adaptor(upstream: &AnyResource) -> Box<AdaptorResource>;
        fn new_prefetch_adaptor(upstream: &AnyResource) -> Box<AdaptorResource>;
        fn new_statistics_adaptor(upstream: &AnyResource) -> Box<AdaptorResource>;
        fn new_tracking_adaptor(upstream: &AnyResource, capture_stacks: bool) -> Box<AdaptorResource>;
        fn new_limiting_adaptor(
            upstream: &AnyResource,
            allocation_limit: usize,
            alignment: usize,
        ) -> Box<AdaptorResource>;
        fn new_logging_adaptor(upstream: &AnyResource, path: &str, auto_flush: bool) -> Box<AdaptorResource>;
        /// A logging adaptor writing its lines to `sink` (a std::ostream or rapids_logger sinks).
        fn new_logging_adaptor_to_sink(
            upstream: &AnyResource,
            sink: UniquePtr<CppLogSink>,
            auto_flush: bool,
        ) -> Box<AdaptorResource>;
        /// An rmm-rs addition.
        fn new_history_adaptor(upstream: &AnyResource) -> Box<AdaptorResource>;
        fn new_moved_from_adaptor_resource() -> Box<AdaptorResource>;

        /// A statistics adaptor's counters of the current region.
        fn statistics_counters(self: &AdaptorResource, counters: &mut CounterPair) -> Outcome;
        /// Starts a region; `counters` gets those of the enclosing one.
        fn statistics_push_counters(self: &AdaptorResource, counters: &mut CounterPair) -> Outcome;
        /// Ends the innermost region (`OutOfRange` when there is none); `popped` gets its counters.
        fn statistics_pop_counters(self: &AdaptorResource, popped: &mut CounterPair) -> Outcome;
        /// Bytes allocated through a tracking adaptor.
        fn tracking_allocated_bytes(self: &AdaptorResource) -> Outcome;
        /// The outstanding allocations of a tracking adaptor, by address, into `out`.
        fn tracked_allocations(self: &AdaptorResource, out: &mut Vec<TrackedAllocation>) -> Outcome;
        /// Bytes allocated through a limiting adaptor (each rounded up to its alignment).
        fn limiting_allocated_bytes(self: &AdaptorResource) -> Outcome;
        /// A limiting adaptor's limit.
        fn limiting_allocation_limit(self: &AdaptorResource) -> Outcome;
        /// Writes a logging adaptor's buffered lines out.
        fn logging_flush(self: &AdaptorResource) -> Outcome;
        /// Starts (`enabled`) or stops a history adaptor's recording, keeping at most `max_entries`
        /// events (0 is an invalid argument); `clear` forgets those recorded; `stacks` records
        /// native stacks.
        fn history_record(
            self: &AdaptorResource,
            enabled: bool,
            max_entries: usize,
            clear: bool,
            stacks: bool,
        ) -> Outcome;
        /// 1 while recording, else 0.
        fn history_is_recording(self: &AdaptorResource) -> Outcome;
        /// The number of events kept.
        fn history_length(self: &AdaptorResource) -> Outcome;
        /// Writes the snapshot's pickle to `path`.
        fn history_dump_snapshot(self: &AdaptorResource, path: &str) -> Outcome;
        /// The snapshot's pickle into `out`.
        fn history_snapshot(self: &AdaptorResource, out: &mut Vec<u8>) -> Outcome;
        /// Writes the snapshot and memory map into `dir` on out-of-memory (`""`: no more).
        fn history_dump_on_oom(self: &AdaptorResource, dir: &str) -> Outcome;
    }

    // The cuda_async family (bridge/cuda_async.rs).
    extern "Rust" {
        type AsyncResource;
        fn resource(self: &AsyncResource) -> &AnyResource;
        fn new_cuda_async_memory_resource(
            initial_pool_size: usize,
            has_initial_pool_size: bool,
            release_threshold: usize,
            has_release_threshold: bool,
            export_handle_type: u32,
        ) -> Box<AsyncResource>;
        /// A view of the `cudaMemPool_t` `pool` (0: an empty view); the pool stays the caller's.
        fn new_cuda_async_view_memory_resource(pool: usize) -> Box<AsyncResource>;
        fn new_cuda_async_managed_memory_resource() -> Box<AsyncResource>;
        fn new_moved_from_async_resource() -> Box<AsyncResource>;
        /// The `CUmemoryPool` the resource allocates from.
        fn pool_handle(self: &AsyncResource) -> Outcome;
    }

    // The plain family (bridge/plain.rs) and the Rust per-device table (bridge/per_device.rs),
    // which `rmm/mr/per_device_resource.hpp` keeps in agreement with the C++ one.
    extern "Rust" {
        type PlainResource;
        fn resource(self: &PlainResource) -> &AnyResource;
        fn new_cuda_memory_resource() -> Box<PlainResource>;
        fn new_managed_memory_resource() -> Box<PlainResource>;
        fn new_pinned_host_memory_resource() -> Box<PlainResource>;
        fn new_system_memory_resource() -> Box<PlainResource>;
        fn new_sam_headroom_memory_resource(headroom: usize) -> Box<PlainResource>;
        /// Host memory from the global allocator: lets the bridge be tested without a GPU.
        fn new_host_memory_resource() -> Box<PlainResource>;
        fn new_callback_memory_resource(callbacks: UniquePtr<CppAllocationCallbacks>) -> Box<PlainResource>;
        /// A C++ resource that is not ours, seen as a Rust resource (for example a pool's upstream).
        fn new_cpp_resource_wrapper(resource: UniquePtr<CppResource>) -> Box<PlainResource>;
        fn new_moved_from_plain_resource() -> Box<PlainResource>;

        /// Makes `resource` the Rust per-device resource of `device`, so Rust code called from C++
        /// uses the same memory as the C++ code that set it; returns the one it replaced (a
        /// handle whose `status` is the error when `resource` failed construction: then nothing
        /// changed).
        fn exchange_rust_per_device_resource(device: i32, resource: &AnyResource) -> Box<PlainResource>;
        /// Puts `device` back on the initial Rust resource; returns the one it had.
        fn reset_rust_per_device_resource(device: i32) -> Box<PlainResource>;
        /// The Rust per-device resource of `device` (the initial one, `cuda_memory_resource`'s,
        /// unless one was set).
        fn get_rust_per_device_resource(device: i32) -> Box<PlainResource>;
        /// Changes whenever any device's Rust resource is set or reset.
        fn rust_per_device_generation() -> u64;
        /// Whether `resource` is the very Rust per-device resource of `device` (not merely equal).
        fn rust_per_device_resource_is(device: i32, resource: &AnyResource) -> bool;
    }

    // Streams, driver questions, logger and process state.
    extern "Rust" {
        /// `rmm::cuda_stream` created the stream `handle`: pools trust its handle until it retires.
        unsafe fn register_stream(handle: usize);
        /// `rmm::cuda_stream` is about to destroy the stream `handle` (still alive): pools capture
        /// its queued work and keep its free blocks from the next stream to get the handle.
        unsafe fn retire_stream(handle: usize);
        /// Whether device `device` has `capability` (`ptr` 1 or 0), or the driver's error.
        fn runtime_capability(capability: Capability, device: i32, handle_types: u32) -> Outcome;
        /// Prefetches managed memory to `device` on `stream`; other memory is left alone.
        unsafe fn prefetch_memory(ptr: usize, bytes: usize, device: i32, stream: usize) -> Outcome;

        // The C++ default logger's level lives here, and its lines go to the Rust sink
        // (`rmm::logger`).
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
        /// From an exit hook: from now on Rust destructors and frees leave the CUDA driver alone
        /// (see `rmm::process_exit`). Cannot fail or panic (an atomic store and a debug log line).
        fn mark_process_exiting();
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
