/*
 * rmm-rs: rmm::mr::cuda_async_managed_memory_resource, backed by the Rust resource of rmm-rs:
 * stream-ordered managed memory from the device's default managed pool (CUDA 13.0 and later).
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda_runtime_api.h>

namespace rmm::mr {

/// Managed memory allocated in stream order from the current device's default managed memory
/// pool. Copies share it; resources over one pool are equal.
class cuda_async_managed_memory_resource final
  : public detail::rust_resource<cuda_async_managed_memory_resource,
                                 detail::shared_rust_state<rmm_rs::AsyncResource>,
                                 cuda::mr::device_accessible,
                                 cuda::mr::host_accessible> {
 public:
  /**
   * Sets the default managed pool's release threshold to the maximum of std::uint64_t, as RMM
   * does (every user of that pool sees it).
   *
   * @throws rmm::logic_error if the driver is older than CUDA 13.0 or the device lacks concurrent
   * managed access
   */
  cuda_async_managed_memory_resource()
    : rust_resource{rmm_rs::new_cuda_async_managed_memory_resource()}
  {
  }

  /// The device's default managed memory pool (owned by the driver).
  [[nodiscard]] cudaMemPool_t pool_handle() const noexcept
  {
    return reinterpret_cast<cudaMemPool_t>(
      detail::query_or_zero(handle().pool_handle()));
  }
};

static_assert(cuda::mr::resource_with<cuda_async_managed_memory_resource, cuda::mr::device_accessible>,
              "cuda_async_managed_memory_resource does not satisfy the cuda::mr::resource concept");
static_assert(cuda::mr::resource_with<cuda_async_managed_memory_resource, cuda::mr::host_accessible>,
              "cuda_async_managed_memory_resource must be host accessible");

}  // namespace rmm::mr
