// Public declarations that RMM 26.10 makes in a class itself, checked by their exact types: code
// that names `&cuda_async_view_memory_resource::allocate` (or deduces from it) sees the class as
// in RMM, and every overload and default argument works; likewise for the cuda, managed,
// pinned_host and system resources, and the statistics adaptor's lock types. The calls run on a
// GPU only.

#include "test_utils.hpp"

#include <rmm/cuda_device.hpp>
#include <rmm/detail/runtime_capabilities.hpp>
#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_async_view_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/managed_memory_resource.hpp>
#include <rmm/mr/pinned_host_memory_resource.hpp>
#include <rmm/mr/system_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <mutex>
#include <shared_mutex>
#include <type_traits>
#include <utility>

namespace {

using rmm::mr::cuda_async_view_memory_resource;
using view = cuda_async_view_memory_resource;

/// The members RMM 26.10 declares in `R` itself, with its exact types and default arguments.
template <class R>
constexpr bool own_members()
{
  static_assert(std::is_same_v<decltype(&R::allocate), void* (R::*)(cuda::stream_ref, std::size_t, std::size_t)>);
  static_assert(
    std::is_same_v<decltype(&R::deallocate), void (R::*)(cuda::stream_ref, void*, std::size_t, std::size_t) noexcept>);
  static_assert(std::is_same_v<decltype(&R::allocate_sync), void* (R::*)(std::size_t, std::size_t)>);
  static_assert(
    std::is_same_v<decltype(&R::deallocate_sync), void (R::*)(void*, std::size_t, std::size_t) noexcept>);
  static_assert(std::is_same_v<decltype(&R::operator==), bool (R::*)(R const&) const noexcept>);
  static_assert(std::is_same_v<decltype(&R::operator!=), bool (R::*)(R const&) const noexcept>);
  // The default arguments: callable with the alignment left out.
  static_assert(std::is_same_v<decltype(std::declval<R&>().allocate(std::declval<cuda::stream_ref>(), 1)), void*>);
  static_assert(std::is_same_v<decltype(std::declval<R&>().allocate_sync(1)), void*>);
  static_assert(
    std::is_same_v<decltype(std::declval<R&>().deallocate(std::declval<cuda::stream_ref>(), nullptr, 1)), void>);
  static_assert(std::is_same_v<decltype(std::declval<R&>().deallocate_sync(nullptr, 1)), void>);
  return true;
}

static_assert(own_members<view>());
static_assert(own_members<rmm::mr::cuda_memory_resource>());
static_assert(own_members<rmm::mr::managed_memory_resource>());
static_assert(own_members<rmm::mr::pinned_host_memory_resource>());
static_assert(own_members<rmm::mr::system_memory_resource>());
static_assert(std::is_same_v<decltype(&view::pool_handle), cudaMemPool_t (view::*)() const noexcept>);
static_assert(std::is_default_constructible_v<view> && std::is_copy_constructible_v<view> &&
              std::is_move_constructible_v<view> && std::is_copy_assignable_v<view> &&
              std::is_move_assignable_v<view>);
static_assert(std::is_convertible_v<cudaMemPool_t, view>, "RMM's constructor is not explicit");

using stats = rmm::mr::statistics_resource_adaptor;
static_assert(std::is_same_v<stats::read_lock_t, std::shared_lock<std::shared_mutex>>);
static_assert(std::is_same_v<stats::write_lock_t, std::unique_lock<std::shared_mutex>>);

TEST(HeadersExactTypes, CudaAsyncViewEveryOverloadOnTheGpu)
{
  RMM_SKIP_WITHOUT_GPU();
  if (!rmm::detail::runtime_async_alloc::is_supported()) { GTEST_SKIP() << "skipped: no cudaMallocAsync"; }
  rmm::mr::cuda_async_memory_resource owner{};
  cudaMemPool_t const pool = owner.pool_handle();
  view mr                  = pool;  // implicit, as in RMM
  cuda::stream_ref const s{cudaStream_t{nullptr}};
  void* a = mr.allocate(s, 1000);
  void* b = mr.allocate(s, 1000, 256);
  void* c = mr.allocate_sync(1000);
  void* d = mr.allocate_sync(1000, 256);
  mr.deallocate(s, a, 1000);
  mr.deallocate(s, b, 1000, 256);
  mr.deallocate_sync(c, 1000);
  mr.deallocate_sync(d, 1000, 256);
  view const copy = mr;
  EXPECT_TRUE(copy == mr);
  EXPECT_FALSE(copy != mr);
  EXPECT_EQ(copy.pool_handle(), pool);
  RMM_CUDA_TRY(cudaDeviceSynchronize());
}

}  // namespace
