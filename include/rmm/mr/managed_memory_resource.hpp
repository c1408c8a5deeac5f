/*
 * rmm-rs: rmm::mr::managed_memory_resource, backed by the Rust resource of rmm-rs.
 * Unified (managed) memory, accessible from host and device; every instance is interchangeable.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

namespace rmm::mr {

/// Unified (managed) memory, accessible from host and device; every instance is interchangeable.
class managed_memory_resource final : public detail::stateless_rust_resource<rmm_rs::new_managed_memory_resource> {
 public:
  managed_memory_resource() = default;

  /// Every instance is interchangeable: memory of one may be freed through another.
  [[nodiscard]] bool operator==(managed_memory_resource const&) const noexcept { return true; }
  [[nodiscard]] bool operator!=(managed_memory_resource const&) const noexcept { return false; }

  friend void get_property(managed_memory_resource const&, cuda::mr::device_accessible) noexcept {}
  friend void get_property(managed_memory_resource const&, cuda::mr::host_accessible) noexcept {}
};

static_assert(cuda::mr::resource_with<managed_memory_resource, cuda::mr::device_accessible>,
              "managed_memory_resource does not satisfy the cuda::mr::resource concept");
static_assert(cuda::mr::synchronous_resource_with<managed_memory_resource, cuda::mr::device_accessible>,
              "managed_memory_resource does not satisfy the cuda::mr::synchronous_resource concept");
static_assert(cuda::mr::resource_with<managed_memory_resource, cuda::mr::host_accessible>,
              "managed_memory_resource must be host accessible");

}  // namespace rmm::mr
