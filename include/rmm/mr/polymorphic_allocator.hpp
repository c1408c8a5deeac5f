/*
 * rmm-rs: stream-ordered allocators over a device resource (RMM's
 * rmm/mr/polymorphic_allocator.hpp): polymorphic_allocator allocates on a stream given per call;
 * stream_allocator_adaptor binds a stream so it can be used as a standard allocator.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>
#include <memory>
#include <utility>

namespace rmm::mr {

/// Allocates `T`s from a device resource (default: the current device resource).
template <typename T>
class polymorphic_allocator {
 public:
  using value_type = T;  ///< T, the value type of objects allocated by this allocator

  polymorphic_allocator() = default;

  /// Allocates from `mr`.
  polymorphic_allocator(cuda::mr::any_resource<cuda::mr::device_accessible> mr) : mr_(std::move(mr)) {}

  /// Allocates from the resource of `other`.
  template <typename U>
  polymorphic_allocator(polymorphic_allocator<U> const& other) noexcept
    : mr_(other.get_upstream_resource())
  {
  }

  /// Allocates `num` objects on `stream`.
  value_type* allocate(std::size_t num, cuda::stream_ref stream)
  {
    return static_cast<value_type*>(mr_.allocate(stream, num * sizeof(T), rmm::CUDA_ALLOCATION_ALIGNMENT));
  }

  /// Frees `num` objects at `ptr` on `stream`.
  void deallocate(value_type* ptr, std::size_t num, cuda::stream_ref stream) noexcept
  {
    mr_.deallocate(stream, ptr, num * sizeof(T), rmm::CUDA_ALLOCATION_ALIGNMENT);
  }

  /// The resource allocations come from.
  [[nodiscard]] rmm::device_async_resource_ref get_upstream_resource() const noexcept
  {
    return rmm::device_async_resource_ref{mr_};
  }

 private:
  mutable cuda::mr::any_resource<cuda::mr::device_accessible> mr_{get_current_device_resource_ref()};
};

template <typename T, typename U>
bool operator==(polymorphic_allocator<T> const& lhs, polymorphic_allocator<U> const& rhs)
{
  return lhs.get_upstream_resource() == rhs.get_upstream_resource();
}

template <typename T, typename U>
bool operator!=(polymorphic_allocator<T> const& lhs, polymorphic_allocator<U> const& rhs)
{
  return not(lhs == rhs);
}

/// Binds a stream to a stream-ordered allocator, giving the standard allocate(n)/deallocate(p, n).
template <typename Allocator>
class stream_allocator_adaptor {
 public:
  using value_type = typename std::allocator_traits<Allocator>::value_type;  ///< The value type

  stream_allocator_adaptor() = delete;

  /// Uses `allocator` on `stream`.
  stream_allocator_adaptor(Allocator const& allocator, cuda::stream_ref stream)
    : alloc_{allocator}, stream_{stream}
  {
  }

  /// Converts from an adaptor of another allocator type.
  template <typename OtherAllocator>
  stream_allocator_adaptor(stream_allocator_adaptor<OtherAllocator> const& other)
    : stream_allocator_adaptor{other.underlying_allocator(), other.stream()}
  {
  }

  /// The same adaptor for another type.
  template <typename T>
  struct rebind {
    using other =
      stream_allocator_adaptor<typename std::allocator_traits<Allocator>::template rebind_alloc<T>>;
  };

  value_type* allocate(std::size_t num) { return alloc_.allocate(num, stream()); }
  void deallocate(value_type* ptr, std::size_t num) noexcept { alloc_.deallocate(ptr, num, stream()); }

  [[nodiscard]] cuda::stream_ref stream() const noexcept { return stream_; }
  [[nodiscard]] Allocator underlying_allocator() const noexcept { return alloc_; }

 private:
  Allocator alloc_;
  cuda::stream_ref stream_{cudaStream_t{nullptr}};
};

template <typename A, typename O>
bool operator==(stream_allocator_adaptor<A> const& lhs, stream_allocator_adaptor<O> const& rhs)
{
  return lhs.underlying_allocator() == rhs.underlying_allocator();
}

template <typename A, typename O>
bool operator!=(stream_allocator_adaptor<A> const& lhs, stream_allocator_adaptor<O> const& rhs)
{
  return not(lhs == rhs);
}

/// A stream_allocator_adaptor of `allocator` on `stream`.
template <typename Allocator>
auto make_stream_allocator_adaptor(Allocator const& allocator, cuda::stream_ref stream)
{
  return stream_allocator_adaptor<Allocator>{allocator, stream};
}

}  // namespace rmm::mr
