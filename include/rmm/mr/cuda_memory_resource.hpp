/*
 * rmm-rs: rmm::mr::cuda_memory_resource, backed by the Rust resource of rmm-rs.
 * Device memory straight from the driver (no pooling); every instance is interchangeable.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

namespace rmm::mr {

/// Device memory straight from the driver (no pooling); every instance is interchangeable.
class cuda_memory_resource final
  : public detail::rust_resource<cuda_memory_resource,
                                 detail::stateless_rust_state<rmm_rs::new_cuda_memory_resource>,
                                 cuda::mr::device_accessible> {
 public:
  cuda_memory_resource() = default;

  RMM_RS_DECLARE_OWN_RESOURCE_MEMBERS(cuda_memory_resource)
};

static_assert(cuda::mr::resource_with<cuda_memory_resource, cuda::mr::device_accessible>,
              "cuda_memory_resource does not satisfy the cuda::mr::resource concept");
static_assert(cuda::mr::synchronous_resource_with<cuda_memory_resource, cuda::mr::device_accessible>,
              "cuda_memory_resource does not satisfy the cuda::mr::synchronous_resource concept");

}  // namespace rmm::mr
