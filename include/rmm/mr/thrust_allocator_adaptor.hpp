/*
 * rmm-rs: a Thrust allocator over any device resource (RMM's rmm/mr/thrust_allocator_adaptor.hpp).
 * rmm::device_vector and rmm::exec_policy use it, so Thrust containers and the scratch memory of
 * Thrust algorithms come from the given resource -- by default the current device resource.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream_view.hpp>
#include <rmm/detail/exec_check_disable.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>
#include <thrust/device_malloc_allocator.h>
#include <thrust/device_ptr.h>
#include <thrust/memory.h>

#include <utility>

namespace rmm::mr {

/**
 * @brief Allocates `T`s from a device resource on a stream.
 *
 * Holds the resource as an any_resource (a copy of one of ours shares it), the stream, and the
 * device that was current at construction, which is made current around each call.
 */
template <typename T>
class thrust_allocator : public thrust::device_malloc_allocator<T> {
 public:
  using Base      = thrust::device_malloc_allocator<T>;  ///< The base type of this allocator
  using pointer   = typename Base::pointer;              ///< The pointer type
  using size_type = typename Base::size_type;            ///< The size type

  /// The same allocator for another type.
  template <typename U>
  struct rebind {
    using other = thrust_allocator<U>;  ///< The type to bind to
  };

  /// The current device resource, on the default stream.
  RMM_EXEC_CHECK_DISABLE
  thrust_allocator() {}

  /// The current device resource, on `stream`.
  RMM_EXEC_CHECK_DISABLE
  explicit thrust_allocator(cuda::stream_ref stream) : _stream{stream} {}

  /// `mr`, on `stream`.
  RMM_EXEC_CHECK_DISABLE
  thrust_allocator(cuda::stream_ref stream, cuda::mr::any_resource<cuda::mr::device_accessible> mr)
    : _stream{stream}, _mr(std::move(mr))
  {
  }

  RMM_EXEC_CHECK_DISABLE
  thrust_allocator(thrust_allocator const& other)
    : Base(other), _stream{other._stream}, _mr(other._mr), _device{other._device}
  {
  }

  RMM_EXEC_CHECK_DISABLE
  thrust_allocator(thrust_allocator&& other) noexcept
    : Base(std::move(other)), _stream{other._stream}, _mr(std::move(other._mr)), _device{other._device}
  {
  }

  thrust_allocator& operator=(thrust_allocator const&)     = default;
  thrust_allocator& operator=(thrust_allocator&&) noexcept = default;

  /// Converts from an allocator of another type, keeping resource, stream and device.
  RMM_EXEC_CHECK_DISABLE
  template <typename U>
  thrust_allocator(thrust_allocator<U> const& other)
    : _stream{other.stream()}, _mr(other.resource()), _device{other.device()}
  {
  }

  /// Allocates `num` objects; throws rmm::bad_alloc / rmm::out_of_memory on failure.
  pointer allocate(size_type num)
  {
    cuda_set_device_raii dev{_device};
    return thrust::device_pointer_cast(
      static_cast<T*>(_mr.allocate(_stream, num * sizeof(T), rmm::CUDA_ALLOCATION_ALIGNMENT)));
  }

  /// Frees `num` objects at `ptr`.
  void deallocate(pointer ptr, size_type num) noexcept
  {
    cuda_set_device_raii dev{_device};
    _mr.deallocate(_stream, thrust::raw_pointer_cast(ptr), num * sizeof(T), rmm::CUDA_ALLOCATION_ALIGNMENT);
  }

  /// The resource allocations come from.
  [[nodiscard]] rmm::device_async_resource_ref get_upstream_resource() const noexcept
  {
    return rmm::device_async_resource_ref{_mr};
  }
  /// The resource, as the owning any_resource.
  [[nodiscard]] cuda::mr::any_resource<cuda::mr::device_accessible> const& resource() const noexcept
  {
    return _mr;
  }
  /// The stream allocations are ordered on.
  [[nodiscard]] cuda::stream_ref stream() const noexcept { return _stream; }
  /// The device current at construction.
  [[nodiscard]] cuda_device_id device() const noexcept { return _device; }

  friend void get_property(thrust_allocator const&, cuda::mr::device_accessible) noexcept {}

 private:
  cuda::stream_ref _stream{cudaStream_t{nullptr}};
  mutable cuda::mr::any_resource<cuda::mr::device_accessible> _mr{
    rmm::mr::get_current_device_resource_ref()};
  cuda_device_id _device{get_current_cuda_device()};
};

/// Allocators are equal when their resources are.
template <typename A, typename O>
bool operator==(thrust_allocator<A> const& lhs, thrust_allocator<O> const& rhs)
{
  return lhs.get_upstream_resource() == rhs.get_upstream_resource();
}
template <typename A, typename O>
bool operator!=(thrust_allocator<A> const& lhs, thrust_allocator<O> const& rhs)
{
  return not(lhs == rhs);
}

}  // namespace rmm::mr
