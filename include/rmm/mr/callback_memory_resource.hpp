/*
 * rmm-rs: rmm::mr::callback_memory_resource, a Rust resource over two C++ callbacks.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/detail/rust_bridge_callbacks.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <utility>

namespace rmm::mr {

/// Allocates `bytes` for `stream`; the last argument is the user's `allocate_callback_arg`.
using allocate_callback_t = std::function<void*(std::size_t, cuda::stream_ref, void*)>;

/// Frees `ptr` of `bytes` for `stream`; the last argument is the user's `deallocate_callback_arg`.
using deallocate_callback_t = std::function<void(void*, std::size_t, cuda::stream_ref, void*)>;

namespace detail {
class callback_pair;

/// The exception an allocate callback threw, kept while the failure crosses the Rust layer.
struct callback_exception {
  callback_pair const* owner{nullptr};  ///< whose callback threw it
  std::exception_ptr exception;         ///< what it threw
};

/// The last exception an allocate callback threw on this thread (none once taken).
inline callback_exception& last_callback_exception() noexcept
{
  thread_local callback_exception last;
  return last;
}

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
  // The exception goes on to the bridge, which reports it to Rust as an error; a copy stays
  // here for callback_memory_resource::allocate to rethrow with its own type.
  void* do_allocate(std::size_t bytes, std::size_t stream) const override
  {
    try {
      return allocate_(bytes, cuda::stream_ref{reinterpret_cast<cudaStream_t>(stream)}, allocate_arg_);
    } catch (...) {
      last_callback_exception() = callback_exception{this, std::current_exception()};
      throw;
    }
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
 * As in RMM, zero-byte requests and frees of null reach the callbacks too, and a null pointer
 * returned for zero bytes is handed on. An exception thrown by the
 * allocate callback reaches the caller of allocate with its own type, as in RMM (it crosses the
 * Rust layer as an error, and is rethrown here); a null pointer returned for a non-empty request
 * is rmm::out_of_memory. Used as the upstream of a Rust pool or adaptor, whose callers see an RMM
 * exception, the callback's exception is what that resource reacts to (an out-of-memory pool
 * backs off, for instance).
 */
class callback_memory_resource final
  : public detail::rust_resource<callback_memory_resource,
                                 detail::shared_rust_state<rmm_rs::PlainResource>,
                                 cuda::mr::device_accessible> {
 public:
  callback_memory_resource(allocate_callback_t allocate_callback,
                           deallocate_callback_t deallocate_callback,
                           void* allocate_callback_arg   = nullptr,
                           void* deallocate_callback_arg = nullptr)
    : callback_memory_resource{std::make_unique<detail::callback_pair>(std::move(allocate_callback),
                                                                       std::move(deallocate_callback),
                                                                       allocate_callback_arg,
                                                                       deallocate_callback_arg)}
  {
  }
  callback_memory_resource() = delete;

  /// @throws whatever the allocate callback throws; rmm::out_of_memory when it returns null
  [[nodiscard]] void* allocate(cuda::stream_ref stream,
                               std::size_t bytes,
                               std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT)
  {
    auto& last = detail::last_callback_exception();
    last       = {};
    try {
      return rust_resource::allocate(stream, bytes, alignment);
    } catch (...) {
      auto const thrown = std::exchange(last, detail::callback_exception{});
      if (thrown.owner == callbacks_ && thrown.exception) { std::rethrow_exception(thrown.exception); }
      throw;
    }
  }

  /// @throws whatever the allocate callback throws; rmm::out_of_memory when it returns null
  [[nodiscard]] void* allocate_sync(std::size_t bytes,
                                    std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT)
  {
    return allocate(detail::default_stream, bytes, alignment);
  }

 private:
  explicit callback_memory_resource(std::unique_ptr<detail::callback_pair> callbacks)
    : callback_memory_resource{callbacks.get(),
                               rmm_rs::new_callback_memory_resource(std::move(callbacks))}
  {
  }
  callback_memory_resource(detail::callback_pair const* callbacks,
                           rust::Box<rmm_rs::PlainResource> handle)
    : rust_resource{std::move(handle)}, callbacks_{callbacks}
  {
  }

  /// The callbacks, owned by the Rust resource that every copy shares (so they live as long).
  detail::callback_pair const* callbacks_;
};

static_assert(cuda::mr::resource_with<callback_memory_resource, cuda::mr::device_accessible>,
              "callback_memory_resource does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
