/*
 * rmm-rs: rmm::mr::sam_headroom_memory_resource, backed by the Rust resource of rmm-rs: system
 * memory that prefers the GPU only while a headroom of device memory stays free.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>

namespace rmm::mr {

/// System-allocated memory whose preferred location is the current device for as much of each
/// allocation as fits without eating into `headroom` bytes of free device memory, and the host
/// for the rest. Copies share it; resources with the same headroom are equal.
class sam_headroom_memory_resource final
  : public detail::rust_resource<sam_headroom_memory_resource,
                                 detail::shared_rust_state<rmm_rs::PlainResource>,
                                 cuda::mr::device_accessible,
                                 cuda::mr::host_accessible> {
 public:
  /**
   * @param headroom bytes of device memory to keep free for other CUDA calls
   * @throws rmm::logic_error if the current device cannot access system-allocated memory
   */
  explicit sam_headroom_memory_resource(std::size_t headroom)
    : rust_resource{rmm_rs::new_sam_headroom_memory_resource(headroom)}
  {
  }
  sam_headroom_memory_resource() = delete;
};

static_assert(cuda::mr::resource_with<sam_headroom_memory_resource, cuda::mr::device_accessible>,
              "sam_headroom_memory_resource does not satisfy the cuda::mr::resource concept");
static_assert(cuda::mr::resource_with<sam_headroom_memory_resource, cuda::mr::host_accessible>,
              "sam_headroom_memory_resource must be host accessible");

}  // namespace rmm::mr
