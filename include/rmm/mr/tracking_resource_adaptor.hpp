/*
 * rmm-rs: rmm::mr::tracking_resource_adaptor, the Rust tracking adaptor of rmm-rs.
 */
#pragma once

#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>
#include <iostream>
#include <string>
#include <utility>

namespace rmm::mr {

/// Records every outstanding allocation (optionally with the stack that made it), to find leaks.
/// Copies share the record.
class tracking_resource_adaptor final
  : public detail::rust_resource<tracking_resource_adaptor,
                                 detail::shared_rust_state,
                                 cuda::mr::device_accessible> {
 public:
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

  /// Bytes currently allocated through this adaptor.
  [[nodiscard]] std::size_t get_allocated_bytes() const noexcept
  {
    return handle().allocated_bytes();
  }

  /// One line per outstanding allocation (pointer, size, stream, and stack when captured).
  [[nodiscard]] std::string get_outstanding_allocations_str() const
  {
    return std::string{handle().outstanding_allocations()};
  }

  /// Writes get_outstanding_allocations_str() to stderr.
  void log_outstanding_allocations() const { std::cerr << get_outstanding_allocations_str(); }
};

static_assert(cuda::mr::resource_with<tracking_resource_adaptor, cuda::mr::device_accessible>,
              "tracking_resource_adaptor does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
