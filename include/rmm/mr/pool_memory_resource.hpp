/*
 * rmm-rs: rmm::mr::pool_memory_resource, the Rust pool of rmm-rs (a coalescing sub-allocator
 * over an upstream resource, stream-ordered, thread-safe).
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>
#include <optional>
#include <utility>

namespace rmm::mr {

/**
 * @brief A pool of device memory taken from an upstream resource in large chunks.
 *
 * The upstream is taken by value: any device-accessible cuda::mr resource, one of ours (then the
 * Rust pool uses the Rust upstream directly; another pool makes a pool over that pool), a user's
 * resource, a resource_ref or an any_resource; a pointer is taken as a reference to a resource that must outlive the pool.
 * Copies of a pool share it; its memory returns to the upstream when the last copy goes.
 */
class pool_memory_resource final
  : public detail::rust_resource<pool_memory_resource,
                                 detail::shared_rust_state,
                                 cuda::mr::device_accessible> {
 public:
  /**
   * @param upstream where the pool takes its chunks from
   * @param initial_pool_size bytes taken at once (a multiple of 256)
   * @param maximum_pool_size the most the pool may grow to (a multiple of 256; default unlimited)
   * @throws rmm::logic_error if a size is not a multiple of 256 or initial exceeds maximum
   * @throws rmm::out_of_memory if the initial pool cannot be allocated
   */
  template <class Upstream, std::enable_if_t<detail::is_upstream_v<Upstream>, int> = 0>
  explicit pool_memory_resource(Upstream&& upstream,
                                std::size_t initial_pool_size,
                                std::optional<std::size_t> maximum_pool_size = std::nullopt)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)},
                    make,
                    initial_pool_size,
                    maximum_pool_size}
  {
  }

  /// The upstream given at construction.
  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    return upstream_ref();
  }

  /// Bytes taken from the upstream (handed out and free).
  [[nodiscard]] std::size_t pool_size() const noexcept { return detail::query_or_zero(rmm_rs::pool_size(handle())); }

 private:
  static rust::Box<rmm_rs::RustResource> make(rmm_rs::RustResource const& upstream,
                                              std::size_t initial_pool_size,
                                              std::optional<std::size_t> maximum_pool_size)
  {
    RMM_EXPECTS(rmm::is_aligned(initial_pool_size, rmm::CUDA_ALLOCATION_ALIGNMENT),
                "Error, Initial pool size required to be a multiple of 256 bytes");
    RMM_EXPECTS(rmm::is_aligned(maximum_pool_size.value_or(0), rmm::CUDA_ALLOCATION_ALIGNMENT),
                "Error, Maximum pool size required to be a multiple of 256 bytes");
    RMM_EXPECTS(initial_pool_size <= maximum_pool_size.value_or(~std::size_t{0}),
                "Initial pool size exceeds the maximum pool size!");
    return rmm_rs::new_pool_memory_resource(upstream,
                                            initial_pool_size,
                                            maximum_pool_size.value_or(0),
                                            maximum_pool_size.has_value());
  }
};

static_assert(cuda::mr::resource_with<pool_memory_resource, cuda::mr::device_accessible>,
              "pool_memory_resource does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
