// The cuda_async family (export handle types, views, the managed pool), the system and
// SAM-headroom resources, runtime_capabilities.hpp and a pool over pinned host memory. Requests a
// device cannot serve are refused before any driver call, so no call here fails on purpose.
#include "test_utils.hpp"

#include <rmm/build_info.hpp>
#include <rmm/detail/runtime_capabilities.hpp>
#include <rmm/mr/cuda_async_managed_memory_resource.hpp>
#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_async_view_memory_resource.hpp>
#include <rmm/mr/detail/cuda_async_managed_memory_resource_impl.hpp>
#include <rmm/mr/detail/cuda_async_memory_resource_impl.hpp>
#include <rmm/mr/detail/sam_headroom_memory_resource_impl.hpp>
#include <rmm/mr/pinned_host_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/sam_headroom_memory_resource.hpp>
#include <rmm/mr/system_memory_resource.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <thread>
#include <type_traits>

namespace {
using async_mr = rmm::mr::cuda_async_memory_resource;
using handle   = async_mr::allocation_handle_type;
cuda::stream_ref const stream{cudaStream_t{nullptr}};

static_assert(std::is_same_v<std::underlying_type_t<handle>, std::int32_t>);
static_assert(static_cast<int>(handle::none) == cudaMemHandleTypeNone);
static_assert(static_cast<int>(handle::posix_file_descriptor) == cudaMemHandleTypePosixFileDescriptor);
static_assert(static_cast<int>(handle::win32) == cudaMemHandleTypeWin32);
static_assert(static_cast<int>(handle::win32_kmt) == cudaMemHandleTypeWin32Kmt);
static_assert(static_cast<int>(handle::fabric) == 0x8);
static_assert(!std::is_default_constructible_v<rmm::mr::sam_headroom_memory_resource>);
static_assert(!std::is_convertible_v<std::size_t, rmm::mr::sam_headroom_memory_resource>);
static_assert(std::is_convertible_v<cudaMemPool_t, rmm::mr::cuda_async_view_memory_resource>);
static_assert(RMM_MIN_ASYNC_MANAGED_ALLOC_CUDA_VERSION == 13000);

/// One allocation and free, with a device write to it.
template <class MR>
void keeps_working(MR& mr)
{
  void* p = mr.allocate(stream, MiB);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(cudaMemsetAsync(p, 1, MiB, nullptr), cudaSuccess);
  mr.deallocate(stream, p, MiB);
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
}

std::uint64_t release_threshold(cudaMemPool_t pool)
{
  std::uint64_t threshold = 0;
  RMM_CUDA_TRY(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  return threshold;
}
}  // namespace

TEST(RuntimeCapabilities, NoneIsAlwaysAnExportHandleType)
{
  EXPECT_TRUE(rmm::detail::export_handle_type::is_supported(cudaMemHandleTypeNone));
}

TEST(RuntimeCapabilities, AnswerOnAGpu)
{
  RMM_SKIP_WITHOUT_GPU();
  EXPECT_TRUE(rmm::detail::runtime_async_alloc::is_supported());
  EXPECT_FALSE(rmm::detail::export_handle_type::is_supported(cudaMemHandleTypeWin32));
  // Each answers without throwing; what they answer depends on the machine.
  std::printf("hwdecompress %d, concurrent managed %d, async managed %d, integrated %d, SAM %d\n",
              rmm::detail::hwdecompress::is_supported(),
              rmm::detail::concurrent_managed_access::is_supported(),
              rmm::detail::runtime_async_managed_alloc::is_supported(),
              rmm::detail::device_integrated_memory::is_supported(),
              rmm::mr::detail::is_system_memory_supported(rmm::get_current_cuda_device()));
}

TEST(RuntimeCapabilities, WithoutADeviceTheCachedChecksAnswerFalse)
{
  if (rmm::get_num_cuda_devices() > 0) { GTEST_SKIP() << "skipped: a CUDA device is present"; }
  // As RMM's: false, not an exception; export_handle_type is not cached and throws, as RMM's does
  // when the driver cannot be asked.
  EXPECT_FALSE(rmm::detail::runtime_async_alloc::is_supported());
  EXPECT_FALSE(rmm::detail::concurrent_managed_access::is_supported());
  EXPECT_FALSE(rmm::detail::runtime_async_managed_alloc::is_supported());
  EXPECT_FALSE(rmm::detail::device_integrated_memory::is_supported());
  EXPECT_FALSE(rmm::detail::hwdecompress::is_supported());
  EXPECT_THROW((void)rmm::detail::export_handle_type::is_supported(cudaMemHandleTypePosixFileDescriptor),
               rmm::cuda_error);
}

TEST(RuntimeCapabilities, CachedAnswersStayTheSame)
{
  // Answered once (on a GPU or not), then the same on every call and on every thread.
  bool const async  = rmm::detail::runtime_async_alloc::is_supported();
  bool const hw     = rmm::detail::hwdecompress::is_supported();
  bool const cma    = rmm::detail::concurrent_managed_access::is_supported();
  bool const amanaged = rmm::detail::runtime_async_managed_alloc::is_supported();
  bool const integrated = rmm::detail::device_integrated_memory::is_supported();
  std::thread other{[&] {
    EXPECT_EQ(rmm::detail::runtime_async_alloc::is_supported(), async);
    EXPECT_EQ(rmm::detail::hwdecompress::is_supported(), hw);
    EXPECT_EQ(rmm::detail::concurrent_managed_access::is_supported(), cma);
    EXPECT_EQ(rmm::detail::runtime_async_managed_alloc::is_supported(), amanaged);
    EXPECT_EQ(rmm::detail::device_integrated_memory::is_supported(), integrated);
  }};
  other.join();
  // Pools of managed memory need concurrent managed access.
  if (amanaged) { EXPECT_TRUE(cma); }
  if (rmm::get_num_cuda_devices() == 0) { return; }
  // On a GPU, the answers are the runtime's own (asked here of device 0, current throughout).
  auto attribute = [](cudaDeviceAttr a) {
    int value = 0;
    EXPECT_EQ(cudaDeviceGetAttribute(&value, a, rmm::get_current_cuda_device().value()), cudaSuccess);
    return value == 1;
  };
  int driver = 0;
  ASSERT_EQ(cudaDriverGetVersion(&driver), cudaSuccess);
  EXPECT_EQ(async, attribute(cudaDevAttrMemoryPoolsSupported));
  EXPECT_EQ(cma, attribute(cudaDevAttrConcurrentManagedAccess));
  EXPECT_EQ(integrated, attribute(cudaDevAttrIntegrated));
  EXPECT_EQ(hw, driver >= RMM_MIN_HWDECOMPRESS_CUDA_VERSION);
  // A CUDA 12 build has no pools of managed memory, whatever the driver.
  EXPECT_EQ(amanaged,
            cma && driver >= RMM_MIN_ASYNC_MANAGED_ALLOC_CUDA_VERSION && rmm::rs::build_cuda_major() >= 13);
}

TEST(AsyncResource, ExportHandleTypesAreMadeWhereSupportedAndRefusedElsewhere)
{
  RMM_SKIP_WITHOUT_GPU();
  for (handle t : {handle::posix_file_descriptor, handle::win32, handle::win32_kmt}) {
    auto const type = static_cast<cudaMemAllocationHandleType>(t);
    if (rmm::detail::export_handle_type::is_supported(type)) {
      async_mr mr{std::nullopt, std::nullopt, t};
      keeps_working(mr);
    } else {
      EXPECT_THROW((async_mr{std::nullopt, std::nullopt, t}), rmm::logic_error) << static_cast<int>(t);
    }
  }
  // A fabric pool also needs an IMEX channel, which no attribute tells: only its refusal is tried.
  if (!rmm::detail::export_handle_type::is_supported(cudaMemAllocationHandleType(0x8))) {
    EXPECT_THROW((async_mr{std::nullopt, std::nullopt, handle::fabric}), rmm::logic_error);
  }
  // A value that is no handle type.
  EXPECT_THROW((async_mr{std::nullopt, std::nullopt, static_cast<handle>(0x10)}), rmm::logic_error);
}

TEST(AsyncResource, ReleaseThresholdDefaultsToUint64Max)
{
  RMM_SKIP_WITHOUT_GPU();
  async_mr mr{};
  EXPECT_EQ(release_threshold(mr.pool_handle()), std::numeric_limits<std::uint64_t>::max());
  async_mr primed{std::size_t{4} * MiB};
  EXPECT_EQ(release_threshold(primed.pool_handle()), std::numeric_limits<std::uint64_t>::max());
}

TEST(AsyncViewResource, DoesNotDestroyThePoolItViews)
{
  RMM_SKIP_WITHOUT_GPU();
  cudaMemPoolProps props{};
  props.allocType     = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id   = rmm::get_current_cuda_device().value();
  cudaMemPool_t pool{};
  ASSERT_EQ(cudaMemPoolCreate(&pool, &props), cudaSuccess);
  {
    rmm::mr::cuda_async_view_memory_resource view{pool};
    EXPECT_EQ(view.pool_handle(), pool);
    keeps_working(view);
    auto copy = view;
    EXPECT_TRUE(copy == view);
    EXPECT_TRUE(view == rmm::mr::cuda_async_view_memory_resource{pool});
  }
  rmm::mr::cuda_async_view_memory_resource again{pool};
  keeps_working(again);
  // Still ours: destroying it succeeds only if no view destroyed it.
  EXPECT_EQ(cudaMemPoolDestroy(pool), cudaSuccess);
}

TEST(AsyncViewResource, ViewsTheOwnersPool)
{
  RMM_SKIP_WITHOUT_GPU();
  async_mr owner{};
  rmm::mr::cuda_async_view_memory_resource view{owner.pool_handle()};
  EXPECT_EQ(view.pool_handle(), owner.pool_handle());
  void* p = owner.allocate(stream, MiB);
  view.deallocate(stream, p, MiB);  // same pool: either may free
  keeps_working(owner);
}

TEST(AsyncViewResource, AnEmptyViewRefusesAllocations)
{
  rmm::mr::cuda_async_view_memory_resource empty{};
  EXPECT_EQ(empty.pool_handle(), nullptr);
  EXPECT_EQ(empty.allocate(stream, 0), nullptr);
  EXPECT_THROW((void)empty.allocate(stream, 256), rmm::bad_alloc);
}

TEST(AsyncManagedResource, UsesTheDefaultManagedPoolOrIsRefused)
{
  RMM_SKIP_WITHOUT_GPU();
  if (!rmm::detail::runtime_async_managed_alloc::is_supported()) {
    EXPECT_THROW(rmm::mr::cuda_async_managed_memory_resource{}, rmm::logic_error);
    GTEST_SKIP() << "skipped: no pools of managed memory on this driver/device";
  }
  rmm::mr::cuda_async_managed_memory_resource mr{};
  ASSERT_NE(mr.pool_handle(), nullptr);
  EXPECT_EQ(release_threshold(mr.pool_handle()), std::numeric_limits<std::uint64_t>::max());
  EXPECT_TRUE(mr == rmm::mr::cuda_async_managed_memory_resource{});
  auto* p = static_cast<unsigned char*>(mr.allocate(stream, MiB));
  ASSERT_EQ(cudaMemsetAsync(p, 0x3C, MiB, nullptr), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  EXPECT_EQ(p[0], 0x3C);
  EXPECT_EQ(p[MiB - 1], 0x3C);
  mr.deallocate(stream, p, MiB);
}

TEST(SystemResource, WorksWhereSupportedAndIsRefusedElsewhere)
{
  RMM_SKIP_WITHOUT_GPU();
  if (!rmm::mr::detail::is_system_memory_supported(rmm::get_current_cuda_device())) {
    EXPECT_THROW(rmm::mr::system_memory_resource{}, rmm::logic_error);
    EXPECT_THROW(rmm::mr::sam_headroom_memory_resource{0}, rmm::logic_error);
    GTEST_SKIP() << "skipped: the device cannot access system-allocated memory";
  }
  rmm::mr::system_memory_resource mr{};
  auto* p = static_cast<unsigned char*>(mr.allocate(stream, MiB));
  ASSERT_EQ(cudaMemsetAsync(p, 0x7E, MiB, nullptr), cudaSuccess);
  mr.deallocate_sync(nullptr, 0);
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  EXPECT_EQ(p[MiB - 1], 0x7E);
  rmm::mr::system_memory_resource{}.deallocate(stream, p, MiB);  // all instances are equal

  rmm::mr::sam_headroom_memory_resource sam{std::size_t{1} << 30};
  EXPECT_TRUE(sam == rmm::mr::sam_headroom_memory_resource{std::size_t{1} << 30});
  EXPECT_FALSE(sam == rmm::mr::sam_headroom_memory_resource{0});
  keeps_working(sam);
}

TEST(PinnedPool, WrittenAsRmmUsersWriteIt)
{
  RMM_SKIP_WITHOUT_GPU();
  rmm::mr::pool_memory_resource pool{rmm::mr::pinned_host_memory_resource{}, 4 * MiB};
  EXPECT_TRUE(pool.handle().resource().is_host_accessible());
  auto* p = static_cast<unsigned char*>(pool.allocate_sync(MiB));
  std::memset(p, 0xA5, MiB);  // host-accessible memory
  void* d{};
  ASSERT_EQ(cudaMalloc(&d, MiB), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d, p, MiB, cudaMemcpyDefault), cudaSuccess);
  std::memset(p, 0, MiB);
  ASSERT_EQ(cudaMemcpy(p, d, MiB, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(p[0], 0xA5);
  EXPECT_EQ(p[MiB - 1], 0xA5);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
  pool.deallocate_sync(p, MiB);
}
