/*
 * rmm-rs: rmm::mr::failure_callback_resource_adaptor, the Rust failure-callback adaptor of rmm-rs.
 */
#pragma once

#include <rmm/error.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/mr/failure_callback_t.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <memory>
#include <type_traits>
#include <utility>

namespace rmm::mr {

/**
 * @brief Calls a callback when an allocation runs out of memory; retries while it returns true.
 *
 * @tparam ExceptionType the failure that triggers the callback. rmm::out_of_memory (the default)
 * is the one supported: the Rust adaptor calls back on out-of-memory errors only.
 */
template <typename ExceptionType = rmm::out_of_memory>
class failure_callback_resource_adaptor final
  : public detail::rust_resource<failure_callback_resource_adaptor<ExceptionType>,
                                 detail::shared_rust_state,
                                 cuda::mr::device_accessible> {
  static_assert(std::is_base_of_v<rmm::out_of_memory, ExceptionType> ||
                  std::is_same_v<ExceptionType, rmm::bad_alloc>,
                "the callback is called on out-of-memory failures");
  // The base depends on ExceptionType, so its injected name `rust_resource` is not visible here.
  using base = detail::rust_resource<failure_callback_resource_adaptor,
                                     detail::shared_rust_state,
                                     cuda::mr::device_accessible>;

 public:
  using exception_type = ExceptionType;  ///< The type of exception this object catches/throws

  template <class Upstream, std::enable_if_t<detail::is_upstream_for_v<Upstream, failure_callback_resource_adaptor>, int> = 0>
  failure_callback_resource_adaptor(Upstream&& upstream, failure_callback_t callback, void* callback_arg)
    : base{detail::upstream_resource{std::forward<Upstream>(upstream)},
           rmm_rs::new_failure_callback_adaptor,
           std::make_unique<rmm_rs::CppCallback>(std::move(callback), callback_arg)}
  {
  }

  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    return this->upstream_ref();
  }
};

static_assert(cuda::mr::resource_with<failure_callback_resource_adaptor<>, cuda::mr::device_accessible>,
              "failure_callback_resource_adaptor does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
