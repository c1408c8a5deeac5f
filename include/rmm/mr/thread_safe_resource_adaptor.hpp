/*
 * rmm-rs: rmm::mr::thread_safe_resource_adaptor, the Rust thread-safe adaptor of rmm-rs.
 */
#pragma once

#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>
#include <mutex>
#include <utility>

namespace rmm::mr {

/// Holds one lock around every allocation and free of its upstream. Copies share the lock.
class thread_safe_resource_adaptor final
  : public detail::rust_resource<thread_safe_resource_adaptor,
                                 detail::shared_rust_state<rmm_rs::AdaptorResource>,
                                 cuda::mr::device_accessible> {
 public:
  using lock_t = std::lock_guard<std::mutex>;  ///< The lock RMM names (the Rust side holds its own)

  template <class Upstream, std::enable_if_t<detail::is_upstream_for_v<Upstream, thread_safe_resource_adaptor>, int> = 0>
  explicit thread_safe_resource_adaptor(Upstream&& upstream)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)},
                    rmm_rs::new_thread_safe_adaptor}
  {
  }

  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    return upstream_ref();
  }
};

static_assert(cuda::mr::resource_with<thread_safe_resource_adaptor, cuda::mr::device_accessible>,
              "thread_safe_resource_adaptor does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
