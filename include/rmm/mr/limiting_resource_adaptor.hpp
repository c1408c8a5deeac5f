/*
 * rmm-rs: rmm::mr::limiting_resource_adaptor, the Rust limiting adaptor of rmm-rs.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>
#include <utility>

namespace rmm::mr {

/// Refuses allocations that would take the bytes outstanding through it above a limit, with
/// rmm::out_of_memory. Copies share the count.
class limiting_resource_adaptor final
  : public detail::rust_resource<limiting_resource_adaptor,
                                 detail::shared_rust_state<rmm_rs::AdaptorResource>,
                                 cuda::mr::device_accessible> {
 public:
  /**
   * @param upstream where allocations go
   * @param allocation_limit the most bytes outstanding at once
   * @param alignment each allocation counts as its size rounded up to this power of two
   */
  template <class Upstream, std::enable_if_t<detail::is_upstream_v<Upstream>, int> = 0>
  limiting_resource_adaptor(Upstream&& upstream,
                            std::size_t allocation_limit,
                            std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)},
                    make,
                    allocation_limit,
                    alignment}
  {
  }

  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    return upstream_ref();
  }

  /// Bytes currently allocated through this adaptor.
  [[nodiscard]] std::size_t get_allocated_bytes() const
  {
    return detail::query(live_handle().limiting_allocated_bytes());
  }
  /// The limit given at construction.
  [[nodiscard]] std::size_t get_allocation_limit() const
  {
    return detail::query(live_handle().limiting_allocation_limit());
  }

 private:
  static rust::Box<rmm_rs::AdaptorResource> make(rmm_rs::AnyResource const& upstream,
                                              std::size_t allocation_limit,
                                              std::size_t alignment)
  {
    RMM_EXPECTS(rmm::is_pow2(alignment), "Alignment must be a power of two");
    return rmm_rs::new_limiting_adaptor(upstream, allocation_limit, alignment);
  }
};

static_assert(cuda::mr::resource_with<limiting_resource_adaptor, cuda::mr::device_accessible>,
              "limiting_resource_adaptor does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
