/*
 * rmm-rs: RMM's detail path of tracking_resource_adaptor. RMM implements the adaptor in this class;
 * in rmm-rs the tracking is done by the Rust resource behind rmm::mr::tracking_resource_adaptor,
 * and this class keeps what the adaptor's public API names from it: the type of an entry of the
 * outstanding-allocation map and the lock types.
 */
#pragma once

#include <rmm/detail/stack_trace.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <utility>

namespace rmm::mr::detail {

/// The types rmm::mr::tracking_resource_adaptor re-exports (allocation_info, read_lock_t,
/// write_lock_t). Not a resource: rmm-rs tracks in Rust.
class tracking_resource_adaptor_impl {
 public:
  /// Shared-reader lock type.
  using read_lock_t = std::shared_lock<std::shared_mutex>;
  /// Exclusive-writer lock type.
  using write_lock_t = std::unique_lock<std::shared_mutex>;

  /// One outstanding allocation: its size, and where it was made when stacks are captured.
  struct allocation_info {
    std::unique_ptr<rmm::detail::stack_trace> strace;  ///< null unless stacks are captured
    std::size_t allocation_size;                       ///< bytes requested

    allocation_info() = delete;
    /// Captures the calling stack when `capture_stack`.
    allocation_info(std::size_t size, bool capture_stack)
      : strace{capture_stack ? std::make_unique<rmm::detail::stack_trace>() : nullptr},
        allocation_size{size}
    {
    }
    /// With a stack captured elsewhere (null for none).
    allocation_info(std::size_t size, std::unique_ptr<rmm::detail::stack_trace> trace)
      : strace{std::move(trace)}, allocation_size{size}
    {
    }
  };

  tracking_resource_adaptor_impl() = delete;
};

}  // namespace rmm::mr::detail
