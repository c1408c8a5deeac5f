/*
 * rmm-rs: rmm::mr::system_memory_resource, backed by the Rust resource of rmm-rs: host memory
 * from the system allocator that the GPU accesses through HMM or ATS.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/cuda_device.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

namespace rmm::mr {
namespace detail {

/**
 * @brief Whether system-allocated memory (SAM) is supported on `device_id`: pageable memory
 * access, through HMM or ATS.
 * @throws rmm::cuda_error when the driver cannot be asked
 */
inline bool is_system_memory_supported(cuda_device_id device_id)
{
  auto const out = rmm_rs::runtime_capability(rmm_rs::Capability::SystemMemory, device_id.value(), 0);
  check(out);
  return out.ptr != 0;
}

}  // namespace detail

/// Memory from the system allocator, accessible from host and device. Allocation ignores the
/// stream; deallocation synchronizes it first. All instances are equal.
class system_memory_resource final
  : public detail::rust_resource<system_memory_resource,
                                 detail::shared_rust_state<rmm_rs::PlainResource>,
                                 cuda::mr::device_accessible,
                                 cuda::mr::host_accessible> {
 public:
  /// @throws rmm::logic_error if the current device cannot access system-allocated memory
  system_memory_resource() : rust_resource{rmm_rs::new_system_memory_resource()} {}

  RMM_RS_DECLARE_OWN_RESOURCE_MEMBERS(system_memory_resource)
};

static_assert(cuda::mr::resource_with<system_memory_resource, cuda::mr::device_accessible>,
              "system_memory_resource does not satisfy the cuda::mr::resource concept");
static_assert(cuda::mr::resource_with<system_memory_resource, cuda::mr::host_accessible>,
              "system_memory_resource must be host accessible");

}  // namespace rmm::mr
