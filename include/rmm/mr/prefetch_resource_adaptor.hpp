/*
 * rmm-rs: rmm::mr::prefetch_resource_adaptor, the Rust prefetch adaptor of rmm-rs.
 */
#pragma once

#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>
#include <utility>

namespace rmm::mr {

/**
 * @brief Prefetches every allocation to the current device on the allocation's stream. Only
 * managed memory is prefetched; other memory is handed out as it is (the driver is asked what
 * the memory is, so no call fails for it).
 */
class prefetch_resource_adaptor final
  : public detail::rust_resource<prefetch_resource_adaptor,
                                 detail::shared_rust_state<rmm_rs::AdaptorResource>,
                                 cuda::mr::device_accessible> {
 public:
  template <class Upstream, std::enable_if_t<detail::is_upstream_for_v<Upstream, prefetch_resource_adaptor>, int> = 0>
  explicit prefetch_resource_adaptor(Upstream&& upstream)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)},
                    rmm_rs::new_prefetch_adaptor}
  {
  }

  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    return upstream_ref();
  }
};

static_assert(cuda::mr::resource_with<prefetch_resource_adaptor, cuda::mr::device_accessible>,
              "prefetch_resource_adaptor does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
