/*
 * rmm-rs: rmm::mr::cuda_async_memory_resource, backed by the Rust resource of rmm-rs (the CUDA
 * driver's stream-ordered allocator, cudaMallocAsync).
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace rmm::mr {

/// Device memory from a CUDA memory pool with stream-ordered allocation. Copies share the pool.
class cuda_async_memory_resource final
  : public detail::rust_resource<cuda_async_memory_resource,
                                 detail::shared_rust_state<rmm_rs::AsyncResource>,
                                 cuda::mr::device_accessible> {
 public:
  /// How allocations may be exported to other processes (the values of
  /// `cudaMemAllocationHandleType`). Types the device does not support are refused.
  enum class allocation_handle_type : std::int32_t {
    none                  = cudaMemHandleTypeNone,
    posix_file_descriptor = cudaMemHandleTypePosixFileDescriptor,
    win32                 = cudaMemHandleTypeWin32,
    win32_kmt             = cudaMemHandleTypeWin32Kmt,
    fabric                = 0x8,
  };

  /**
   * @param initial_pool_size when given, the pool is primed by allocating and freeing this many
   * bytes on the default stream
   * @param release_threshold bytes the pool keeps reserved when synchronizing (default: the
   * maximum of std::uint64_t, so freed memory stays in the pool)
   * @param export_handle_type how allocations may be exported (default: none); the device's
   * supported types are asked first, so no driver call fails
   * @throws rmm::logic_error when the device has no memory pools or does not support the export
   * handle type
   * @throws rmm::cuda_error when there is no CUDA driver or the pool cannot be created
   */
  cuda_async_memory_resource(std::optional<std::size_t> initial_pool_size             = {},
                             std::optional<std::size_t> release_threshold             = {},
                             std::optional<allocation_handle_type> export_handle_type = {})
    : rust_resource{rmm_rs::new_cuda_async_memory_resource(
        initial_pool_size.value_or(0),
        initial_pool_size.has_value(),
        release_threshold.value_or(0),
        release_threshold.has_value(),
        static_cast<std::uint32_t>(export_handle_type.value_or(allocation_handle_type::none)))}
  {
  }

  /// The CUDA memory pool allocations come from.
  [[nodiscard]] cudaMemPool_t pool_handle() const noexcept
  {
    return reinterpret_cast<cudaMemPool_t>(
      detail::query_or_zero(handle().pool_handle()));
  }
};

static_assert(cuda::mr::resource_with<cuda_async_memory_resource, cuda::mr::device_accessible>,
              "cuda_async_memory_resource does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
