/*
 * rmm-rs: rmm::mr::failure_callback_resource_adaptor.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/detail/failure_callback_resource_adaptor_impl.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/mr/detail/shared_holder.hpp>
#include <rmm/mr/failure_callback_t.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace rmm::mr {

/**
 * @brief Calls a callback when an allocation fails with `ExceptionType` (or a type derived from
 * it); retries while the callback returns true, and otherwise rethrows the original exception,
 * with its original type. Other exceptions pass through untouched.
 *
 * The catching and retrying happen in C++ (detail::failure_callback_resource_adaptor_impl), so the
 * exception of a C++ upstream keeps its type. Used as the upstream of a Rust resource (a pool),
 * the adaptor is reached through the bridge like any C++ resource. Copies share the callback.
 *
 * @tparam ExceptionType the exception that triggers the callback
 */
template <typename ExceptionType = rmm::out_of_memory>
class failure_callback_resource_adaptor final
  : public detail::rust_resource<failure_callback_resource_adaptor<ExceptionType>,
                                 detail::shared_rust_state<rmm_rs::PlainResource>,
                                 cuda::mr::device_accessible> {
  // The base depends on ExceptionType, so its injected name `rust_resource` is not visible here.
  using base = detail::rust_resource<failure_callback_resource_adaptor,
                                     detail::shared_rust_state<rmm_rs::PlainResource>,
                                     cuda::mr::device_accessible>;
  using impl_type = detail::failure_callback_resource_adaptor_impl<ExceptionType>;

  /// The shared impl, seen as a cuda::mr resource: what the Rust handle calls.
  struct impl_ref {
    std::shared_ptr<impl_type> impl;
    void* allocate(cuda::stream_ref s, std::size_t bytes, std::size_t alignment)
    {
      return impl->allocate(s, bytes, alignment);
    }
    void deallocate(cuda::stream_ref s, void* p, std::size_t bytes, std::size_t alignment) noexcept
    {
      impl->deallocate(s, p, bytes, alignment);
    }
    void* allocate_sync(std::size_t bytes, std::size_t alignment)
    {
      return allocate(detail::default_stream, bytes, alignment);
    }
    void deallocate_sync(void* p, std::size_t bytes, std::size_t alignment) noexcept
    {
      deallocate(detail::default_stream, p, bytes, alignment);
    }
    bool operator==(impl_ref const& o) const noexcept { return impl == o.impl; }
    bool operator!=(impl_ref const& o) const noexcept { return impl != o.impl; }
    friend void get_property(impl_ref const&, cuda::mr::device_accessible) noexcept {}
  };

  static rust::Box<rmm_rs::PlainResource> make_handle(std::shared_ptr<impl_type> const& impl)
  {
    auto resource = std::make_shared<detail::any_device_resource>(impl_ref{impl});
    return rmm_rs::new_cpp_resource_wrapper(
      std::make_unique<detail::cpp_resource>(std::move(resource), false));
  }

 public:
  using exception_type = ExceptionType;  ///< The type of exception this object catches/throws

  /**
   * @param upstream where allocations go
   * @param callback called with the size of a failed allocation and `callback_arg`; true retries
   * @param callback_arg passed to `callback`
   */
  template <class Upstream, std::enable_if_t<detail::is_upstream_for_v<Upstream, failure_callback_resource_adaptor>, int> = 0>
  failure_callback_resource_adaptor(Upstream&& upstream, failure_callback_t callback, void* callback_arg)
    : failure_callback_resource_adaptor{std::make_shared<impl_type>(
        detail::upstream_resource{std::forward<Upstream>(upstream)}.resource(),
        std::move(callback),
        callback_arg)}
  {
  }

  /// The upstream given at construction (a moved-from adaptor's is detail::moved_from_resource).
  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    if (impl_.get() == nullptr) { return device_async_resource_ref{detail::moved_from_upstream()}; }
    return impl_.get()->get_upstream_resource();
  }

  /// @throws ExceptionType (the upstream's own exception) once the callback returns false
  /// @throws rmm::logic_error when this adaptor was moved from
  [[nodiscard]] void* allocate(cuda::stream_ref stream,
                               std::size_t bytes,
                               std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT)
  {
    if (impl_.get() == nullptr) { detail::throw_moved_from(); }
    return impl_.get()->allocate(stream, bytes, alignment);
  }

  /// On a moved-from adaptor the free is refused and reported, as by every Rust-backed resource.
  void deallocate(cuda::stream_ref stream,
                  void* ptr,
                  std::size_t bytes,
                  std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT) noexcept
  {
    if (impl_.get() == nullptr) {
      base::deallocate(stream, ptr, bytes, alignment);
      return;
    }
    impl_.get()->deallocate(stream, ptr, bytes, alignment);
  }

  [[nodiscard]] void* allocate_sync(std::size_t bytes,
                                    std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT)
  {
    return allocate(detail::default_stream, bytes, alignment);
  }

  void deallocate_sync(void* ptr,
                       std::size_t bytes,
                       std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT) noexcept
  {
    deallocate(detail::default_stream, ptr, bytes, alignment);
  }

 private:
  explicit failure_callback_resource_adaptor(std::shared_ptr<impl_type> impl)
    : base{make_handle(impl)}, impl_{std::move(impl)}
  {
  }

  /// The impl every copy shares.
  detail::shared_holder<impl_type> impl_;
};

static_assert(cuda::mr::resource_with<failure_callback_resource_adaptor<>, cuda::mr::device_accessible>,
              "failure_callback_resource_adaptor does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
