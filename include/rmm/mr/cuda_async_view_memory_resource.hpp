/*
 * rmm-rs: rmm::mr::cuda_async_view_memory_resource, backed by the Rust resource of rmm-rs:
 * stream-ordered allocation from a CUDA memory pool the caller owns.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace rmm::mr {

/// Device memory from an existing `cudaMemPool_t`, which this resource never destroys. Copies
/// view the same pool; views of one pool are equal.
class cuda_async_view_memory_resource final
  : public detail::rust_resource<cuda_async_view_memory_resource,
                                 detail::shared_rust_state<rmm_rs::AsyncResource>,
                                 cuda::mr::device_accessible> {
 public:
  /**
   * @param pool_handle the pool allocations come from; it must stay valid while this resource
   * (or memory from it) is in use
   * @throws rmm::logic_error if the device does not support cudaMallocAsync
   */
  cuda_async_view_memory_resource(cudaMemPool_t pool_handle)  // NOLINT(google-explicit-constructor)
    : rust_resource{
        rmm_rs::new_cuda_async_view_memory_resource(reinterpret_cast<std::uintptr_t>(pool_handle))}
  {
  }

  /// A view of no pool: every allocation of a nonzero size is refused (rmm::bad_alloc).
  cuda_async_view_memory_resource()
    : rust_resource{rmm_rs::new_cuda_async_view_memory_resource(0)}
  {
  }

  ~cuda_async_view_memory_resource()                                                 = default;
  cuda_async_view_memory_resource(cuda_async_view_memory_resource const&)            = default;
  cuda_async_view_memory_resource(cuda_async_view_memory_resource&&)                 = default;
  cuda_async_view_memory_resource& operator=(cuda_async_view_memory_resource const&) = default;
  cuda_async_view_memory_resource& operator=(cuda_async_view_memory_resource&&)      = default;

  /// The CUDA memory pool viewed.
  [[nodiscard]] cudaMemPool_t pool_handle() const noexcept
  {
    return reinterpret_cast<cudaMemPool_t>(
      detail::query_or_zero(handle().pool_handle()));
  }

  // Declared here as in RMM (see the macro), forwarding to the shared base.
  RMM_RS_DECLARE_OWN_RESOURCE_MEMBERS(cuda_async_view_memory_resource)
};

static_assert(cuda::mr::resource_with<cuda_async_view_memory_resource, cuda::mr::device_accessible>,
              "cuda_async_view_memory_resource does not satisfy the cuda::mr::resource concept");
static_assert(
  cuda::mr::synchronous_resource_with<cuda_async_view_memory_resource, cuda::mr::device_accessible>,
  "cuda_async_view_memory_resource does not satisfy the cuda::mr::synchronous_resource concept");

}  // namespace rmm::mr
