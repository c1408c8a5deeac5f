/*
 * rmm-rs: rmm::mr::aligned_resource_adaptor, the Rust aligned adaptor of rmm-rs.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>
#include <utility>

namespace rmm::mr {

/**
 * @brief Aligns allocations of at least `alignment_threshold` bytes to `alignment` by
 * over-allocating from the upstream; the upstream's pointer is remembered for the free. Copies
 * share the record. A request's own larger alignment is honoured as well.
 */
class aligned_resource_adaptor final
  : public detail::rust_resource<aligned_resource_adaptor,
                                 detail::shared_rust_state<rmm_rs::AdaptorResource>,
                                 cuda::mr::device_accessible> {
 public:
  /// Allocations of at least this size are aligned: 0, every allocation.
  static constexpr std::size_t default_alignment_threshold = 0;

  /**
   * @throws rmm::logic_error if `alignment` is not a power of two
   */
  template <class Upstream, std::enable_if_t<detail::is_upstream_for_v<Upstream, aligned_resource_adaptor>, int> = 0>
  explicit aligned_resource_adaptor(Upstream&& upstream,
                                    std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT,
                                    std::size_t alignment_threshold = default_alignment_threshold)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)},
                    rmm_rs::new_aligned_adaptor,
                    alignment,
                    alignment_threshold}
  {
  }

  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    return upstream_ref();
  }
};

static_assert(cuda::mr::resource_with<aligned_resource_adaptor, cuda::mr::device_accessible>,
              "aligned_resource_adaptor does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
