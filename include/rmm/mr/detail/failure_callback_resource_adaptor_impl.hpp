/*
 * rmm-rs: what a failure_callback_resource_adaptor does, in C++, so that the exception it catches
 * and rethrows keeps its type.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/failure_callback_t.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

namespace rmm::mr::detail {

/**
 * @brief Allocates from the upstream; on an `ExceptionType` (or one derived from it) calls the
 * callback, retrying while it returns true, and otherwise rethrows that very exception.
 */
template <typename ExceptionType>
class failure_callback_resource_adaptor_impl {
 public:
  using upstream_type = cuda::mr::any_resource<cuda::mr::device_accessible>;

  failure_callback_resource_adaptor_impl(std::shared_ptr<upstream_type> upstream,
                                         failure_callback_t callback,
                                         void* callback_arg)
    : upstream_{std::move(upstream)}, callback_{std::move(callback)}, callback_arg_{callback_arg}
  {
  }
  failure_callback_resource_adaptor_impl(failure_callback_resource_adaptor_impl const&) = delete;
  failure_callback_resource_adaptor_impl& operator=(failure_callback_resource_adaptor_impl const&) =
    delete;

  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    return device_async_resource_ref{*upstream_};
  }

  [[nodiscard]] void* allocate(cuda::stream_ref stream, std::size_t bytes, std::size_t alignment)
  {
    while (true) {
      try {
        void* const ptr = upstream_->allocate(stream, bytes, alignment);
        // As every resource of ours: a non-zero request never returns null (see rust_resource).
        if (ptr == nullptr && bytes != 0) {
          throw rmm::bad_alloc{"the upstream returned a null pointer for a request of " +
                               std::to_string(bytes) + " bytes"};
        }
        return ptr;
      } catch (ExceptionType const&) {
        if (!callback_ || !callback_(bytes, callback_arg_)) { throw; }
      }
    }
  }

  void deallocate(cuda::stream_ref stream, void* ptr, std::size_t bytes, std::size_t alignment) noexcept
  {
    upstream_->deallocate(stream, ptr, bytes, alignment);
  }

 private:
  std::shared_ptr<upstream_type> upstream_;
  failure_callback_t callback_;
  void* callback_arg_;
};

}  // namespace rmm::mr::detail
