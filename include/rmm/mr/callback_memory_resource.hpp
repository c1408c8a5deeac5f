/*
 * rmm-rs: rmm::mr::callback_memory_resource, a Rust resource over two C++ callbacks.
 */
#pragma once

#include <rmm/detail/rust_bridge_callbacks.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

namespace rmm::mr {

/// Allocates `bytes` for `stream`; the last argument is the user's `allocate_callback_arg`.
using allocate_callback_t = std::function<void*(std::size_t, cuda::stream_ref, void*)>;

/// Frees `ptr` of `bytes` for `stream`; the last argument is the user's `deallocate_callback_arg`.
using deallocate_callback_t = std::function<void(void*, std::size_t, cuda::stream_ref, void*)>;

namespace detail {
/// The user's callbacks as the Rust side calls them.
class callback_pair final : public rmm_rs::CppAllocationCallbacks {
 public:
  callback_pair(allocate_callback_t allocate,
                deallocate_callback_t deallocate,
                void* allocate_arg,
                void* deallocate_arg)
    : allocate_{std::move(allocate)},
      deallocate_{std::move(deallocate)},
      allocate_arg_{allocate_arg},
      deallocate_arg_{deallocate_arg}
  {
  }

 private:
  void* do_allocate(std::size_t bytes, std::size_t stream) const override
  {
    return allocate_(bytes, cuda::stream_ref{reinterpret_cast<cudaStream_t>(stream)}, allocate_arg_);
  }
  void do_deallocate(void* ptr, std::size_t bytes, std::size_t stream) const override
  {
    deallocate_(ptr, bytes, cuda::stream_ref{reinterpret_cast<cudaStream_t>(stream)}, deallocate_arg_);
  }

  allocate_callback_t allocate_;
  deallocate_callback_t deallocate_;
  void* allocate_arg_;
  void* deallocate_arg_;
};
}  // namespace detail

/**
 * @brief A resource whose allocations and frees are the user's callbacks. Copies share them.
 *
 * Zero-byte requests and frees of null never reach the callbacks. An exception thrown by the
 * allocate callback crosses the Rust layer as an error: it comes back as rmm::out_of_memory when
 * it was a std::bad_alloc, as rmm::bad_alloc otherwise (RMM lets the callback's own exception
 * through); a null pointer returned for a non-empty request is rmm::out_of_memory.
 */
class callback_memory_resource final
  : public detail::rust_resource<callback_memory_resource,
                                 detail::shared_rust_state,
                                 cuda::mr::device_accessible> {
 public:
  callback_memory_resource(allocate_callback_t allocate_callback,
                           deallocate_callback_t deallocate_callback,
                           void* allocate_callback_arg   = nullptr,
                           void* deallocate_callback_arg = nullptr)
    : rust_resource{rmm_rs::new_callback_memory_resource(
        std::make_unique<detail::callback_pair>(std::move(allocate_callback),
                                                std::move(deallocate_callback),
                                                allocate_callback_arg,
                                                deallocate_callback_arg))}
  {
  }
  callback_memory_resource() = delete;
};

static_assert(cuda::mr::resource_with<callback_memory_resource, cuda::mr::device_accessible>,
              "callback_memory_resource does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
