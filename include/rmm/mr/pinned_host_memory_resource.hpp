/*
 * rmm-rs: rmm::mr::pinned_host_memory_resource, backed by the Rust resource of rmm-rs.
 * Page-locked host memory, accessible from host and device; every instance is interchangeable.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

namespace rmm::mr {

/// Page-locked host memory, accessible from host and device; every instance is interchangeable.
class pinned_host_memory_resource final
  : public detail::rust_resource<pinned_host_memory_resource,
                                 detail::stateless_rust_state<rmm_rs::new_pinned_host_memory_resource>,
                                 cuda::mr::device_accessible,
                                 cuda::mr::host_accessible> {
 public:
  pinned_host_memory_resource() = default;

  RMM_RS_DECLARE_OWN_RESOURCE_MEMBERS(pinned_host_memory_resource)
};

static_assert(cuda::mr::resource_with<pinned_host_memory_resource, cuda::mr::device_accessible>,
              "pinned_host_memory_resource does not satisfy the cuda::mr::resource concept");
static_assert(cuda::mr::synchronous_resource_with<pinned_host_memory_resource, cuda::mr::device_accessible>,
              "pinned_host_memory_resource does not satisfy the cuda::mr::synchronous_resource concept");
static_assert(cuda::mr::resource_with<pinned_host_memory_resource, cuda::mr::host_accessible>,
              "pinned_host_memory_resource must be host accessible");

}  // namespace rmm::mr
