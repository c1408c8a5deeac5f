/*
 * rmm-rs: rmm::mr::tracking_resource_adaptor, the Rust tracking adaptor of rmm-rs.
 */
#pragma once

#include <rmm/detail/stack_trace.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/mr/detail/shared_holder.hpp>
#include <rmm/mr/detail/tracking_resource_adaptor_impl.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

// RMM logs the outstanding allocations through its logger at debug level; rmm-rs does so where
// <rmm/logger.hpp> is part of the build.
#if __has_include(<rmm/logger.hpp>)
#include <rmm/logger.hpp>
#define RMM_RS_TRACKING_HAS_LOGGER 1
#endif

namespace rmm::mr {

namespace detail {

/**
 * @brief The C++ copy of a tracking adaptor's outstanding allocations that
 * get_outstanding_allocations() returns, shared by every copy of the adaptor (a shared_holder,
 * so its implicit copies may be called from __host__ __device__ code).
 */
class tracking_map_cache {
 public:
  using map_type = std::map<void*, tracking_resource_adaptor_impl::allocation_info>;

  tracking_map_cache() : state_{std::make_shared<shared>()} {}

  /// Rebuilds the map from what the Rust adaptor `handle` tracks now, and returns it.
  map_type const& refresh(rmm_rs::AdaptorResource const& handle) const
  {
    if (state_.get() == nullptr) {  // a moved-from adaptor tracks nothing
      static map_type const none;
      return none;
    }
    auto& s = *state_.get();
    std::lock_guard<std::mutex> lock{s.mutex};
    s.map.clear();
    rust::Vec<rmm_rs::TrackedAllocation> tracked;
    // On an error (not a tracking adaptor) the list stays empty, as the map then does.
    if (handle.tracked_allocations(tracked).kind != rmm_rs::ErrorKind::Ok) { tracked.clear(); }
    for (auto& a : tracked) {
      std::unique_ptr<rmm::detail::stack_trace> trace;
      if (a.captured) {
        std::vector<std::string> frames;
        frames.reserve(a.frames.size());
        for (auto const& f : a.frames) {
          frames.emplace_back(f.data(), f.size());
        }
        trace = std::make_unique<rmm::detail::stack_trace>(std::move(frames));
      }
      s.map.emplace(std::piecewise_construct,
                    std::forward_as_tuple(reinterpret_cast<void*>(a.ptr)),
                    std::forward_as_tuple(a.bytes, std::move(trace)));
    }
    return s.map;
  }

 private:
  struct shared {
    std::mutex mutex;
    map_type map;
  };
  shared_holder<shared> state_;
};

}  // namespace detail

/// Records every outstanding allocation (optionally with the stack that made it), to find leaks.
/// Copies share the record.
class tracking_resource_adaptor final
  : public detail::rust_resource<tracking_resource_adaptor,
                                 detail::shared_rust_state<rmm_rs::AdaptorResource>,
                                 cuda::mr::device_accessible> {
 public:
  /// Allocation info type (size, optional stack trace).
  using allocation_info = detail::tracking_resource_adaptor_impl::allocation_info;
  /// Shared-reader lock type.
  using read_lock_t = detail::tracking_resource_adaptor_impl::read_lock_t;
  /// Exclusive-writer lock type.
  using write_lock_t = detail::tracking_resource_adaptor_impl::write_lock_t;

  /**
   * @param upstream where allocations go
   * @param capture_stacks record the stack of every allocation (expensive)
   */
  template <class Upstream, std::enable_if_t<detail::is_upstream_for_v<Upstream, tracking_resource_adaptor>, int> = 0>
  tracking_resource_adaptor(Upstream&& upstream, bool capture_stacks = false)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)},
                    rmm_rs::new_tracking_adaptor,
                    capture_stacks}
  {
  }

  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    return upstream_ref();
  }

  /**
   * @brief The outstanding allocations, by pointer.
   *
   * @warning As RMM's, the reference is a view of mutable state, rebuilt by each call: use it only
   * while no other thread allocates or frees through this adaptor (or its copies) or calls this
   * function.
   */
  [[nodiscard]] std::map<void*, allocation_info> const& get_outstanding_allocations() const noexcept
  {
    return cache_.refresh(handle());
  }

  /// Bytes currently allocated through this adaptor.
  [[nodiscard]] std::size_t get_allocated_bytes() const noexcept
  {
    return detail::query_or_zero(handle().tracking_allocated_bytes());
  }

  /// One line per outstanding allocation, `<pointer>: <size> B`, followed by ` : callstack:` and
  /// the stack when captured (RMM's format).
  [[nodiscard]] std::string get_outstanding_allocations_str() const
  {
    std::ostringstream oss;
    for (auto const& [ptr, info] : get_outstanding_allocations()) {
      oss << ptr << ": " << info.allocation_size << " B";
      if (info.strace != nullptr) { oss << " : callstack:" << std::endl << *info.strace; }
      oss << std::endl;
    }
    return oss.str();
  }

  /// Logs get_outstanding_allocations_str() at debug level through rmm::default_logger(), as
  /// RMM does (nothing when debug logging is compiled out, RMM's default). Without
  /// <rmm/logger.hpp> in the build it writes to stderr.
  void log_outstanding_allocations() const
  {
#if defined(RMM_RS_TRACKING_HAS_LOGGER)
#if RMM_LOG_ACTIVE_LEVEL <= RAPIDS_LOGGER_LOG_LEVEL_DEBUG
    RMM_LOG_DEBUG("Outstanding Allocations: %s", get_outstanding_allocations_str());
#endif
#else
    std::cerr << "Outstanding Allocations: " << get_outstanding_allocations_str();
#endif
  }

 private:
  detail::tracking_map_cache cache_;
};

static_assert(cuda::mr::resource_with<tracking_resource_adaptor, cuda::mr::device_accessible>,
              "tracking_resource_adaptor does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
