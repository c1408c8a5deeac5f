// Every Rust-backed resource, written once and instantiated per resource: allocations are usable
// device memory, alignment is honoured, copies compare equal, refs convert; plus out-of-memory.

#include "test_utils.hpp"

#include <rmm/cuda_stream.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/managed_memory_resource.hpp>
#include <rmm/mr/pinned_host_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>
#include <rmm/resource_ref.hpp>

#include <cstdint>
#include <vector>

namespace {


// How each resource under test is made.
struct make_cuda {
  static rmm::mr::cuda_memory_resource make() { return {}; }
};
struct make_managed {
  static rmm::mr::managed_memory_resource make() { return {}; }
};
struct make_pinned {
  static rmm::mr::pinned_host_memory_resource make() { return {}; }
};
struct make_async {
  static rmm::mr::cuda_async_memory_resource make() { return rmm::mr::cuda_async_memory_resource{}; }
};
struct make_pool {
  static rmm::mr::pool_memory_resource make()
  {
    return rmm::mr::pool_memory_resource{rmm::mr::cuda_memory_resource{}, 4 * MiB};
  }
};
struct make_pool_over_async {
  static rmm::mr::pool_memory_resource make()
  {
    return rmm::mr::pool_memory_resource{rmm::mr::cuda_async_memory_resource{}, 0, 256 * MiB};
  }
};
struct make_statistics {
  static rmm::mr::statistics_resource_adaptor make()
  {
    return rmm::mr::statistics_resource_adaptor{make_pool::make()};
  }
};
struct make_tracking {
  static rmm::mr::tracking_resource_adaptor make()
  {
    return rmm::mr::tracking_resource_adaptor{rmm::mr::cuda_memory_resource{}};
  }
};

template <class Maker>
class Resource : public ::testing::Test {
 protected:
  void SetUp() override { RMM_SKIP_WITHOUT_GPU(); }
};

using Makers = ::testing::Types<make_cuda, make_managed, make_pinned, make_async, make_pool,
                                make_pool_over_async, make_statistics, make_tracking>;
TYPED_TEST_SUITE(Resource, Makers);

__global__ void write_bytes(unsigned char* p, std::size_t n)
{
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    p[i] = static_cast<unsigned char>(i);
  }
}

TYPED_TEST(Resource, AllocationsAreUsableAndAligned)
{
  auto mr = TypeParam::make();
  rmm::cuda_stream stream;
  std::vector<std::pair<void*, std::size_t>> blocks;
  for (std::size_t bytes : {std::size_t{1}, std::size_t{255}, std::size_t{4096}, MiB + 3}) {
    void* p = mr.allocate(stream, bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % rmm::CUDA_ALLOCATION_ALIGNMENT, 0u);
    write_bytes<<<32, 256, 0, stream.value()>>>(static_cast<unsigned char*>(p), bytes);
    RMM_CUDA_TRY(cudaGetLastError());
    blocks.emplace_back(p, bytes);
  }
  stream.synchronize();
  for (auto [p, bytes] : blocks) { mr.deallocate(stream, p, bytes); }
  void* s = mr.allocate_sync(1000);
  mr.deallocate_sync(s, 1000);
  stream.synchronize();
}

TYPED_TEST(Resource, CopiesAreEqualAndConvertToRefs)
{
  auto mr   = TypeParam::make();
  auto copy = mr;
  EXPECT_TRUE(mr == copy);
  EXPECT_FALSE(mr != copy);
  rmm::device_async_resource_ref ref{mr};
  rmm::device_resource_ref sync_ref{mr};
  EXPECT_TRUE(ref == rmm::device_async_resource_ref{copy});
  void* p = ref.allocate(rmm::test::default_stream(), 512, 256);
  sync_ref.deallocate_sync(p, 512, 256);
  RMM_CUDA_TRY(cudaDeviceSynchronize());
}

TEST(PoolOnGpu, InitialSizeGrowthAndMaximum)
{
  RMM_SKIP_WITHOUT_GPU();
  rmm::mr::statistics_resource_adaptor upstream{rmm::mr::cuda_memory_resource{}};
  rmm::mr::pool_memory_resource pool{upstream, 4 * MiB, 16 * MiB};
  EXPECT_EQ(pool.pool_size(), 4 * MiB);
  EXPECT_EQ(upstream.get_allocations_counter().value, 1);
  void* a = pool.allocate(rmm::test::default_stream(), 3 * MiB);
  void* b = pool.allocate(rmm::test::default_stream(), 3 * MiB);  // grows
  EXPECT_GT(pool.pool_size(), 4 * MiB);
  EXPECT_LE(pool.pool_size(), 16 * MiB);
  EXPECT_THROW((void)pool.allocate(rmm::test::default_stream(), 16 * MiB), rmm::out_of_memory);
  pool.deallocate(rmm::test::default_stream(), a, 3 * MiB);
  pool.deallocate(rmm::test::default_stream(), b, 3 * MiB);
  EXPECT_TRUE(pool.get_upstream_resource() == rmm::device_async_resource_ref{upstream});
}

TEST(ResourceErrors, LimitingAdaptorOverDeviceMemory)
{
  RMM_SKIP_WITHOUT_GPU();
  rmm::mr::limiting_resource_adaptor limit{rmm::mr::cuda_memory_resource{}, MiB};
  void* p = limit.allocate_sync(MiB);
  EXPECT_THROW((void)limit.allocate_sync(1), rmm::out_of_memory);
  limit.deallocate_sync(p, MiB);
  EXPECT_EQ(limit.get_allocated_bytes(), 0u);
}

TEST(AsyncResource, PoolHandleAndReleaseThreshold)
{
  RMM_SKIP_WITHOUT_GPU();
  rmm::mr::cuda_async_memory_resource mr{std::size_t{8} << 20, std::size_t{4} << 20};
  cudaMemPool_t pool = mr.pool_handle();
  ASSERT_NE(pool, nullptr);
  std::uint64_t threshold = 0;
  RMM_CUDA_TRY(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  EXPECT_EQ(threshold, std::uint64_t{4} << 20);
  rmm::mr::cuda_async_memory_resource copy = mr;
  EXPECT_EQ(copy.pool_handle(), pool);
  EXPECT_TRUE(copy == mr);
}

TEST(ResourceErrors, AsyncResourceRejectsUnsupportedExportHandles)
{
  RMM_SKIP_WITHOUT_GPU();
  // Linux has no Win32 handles: refused before any pool is made (async_system_test.cu has more).
  using handle = rmm::mr::cuda_async_memory_resource::allocation_handle_type;
  EXPECT_THROW((rmm::mr::cuda_async_memory_resource{std::nullopt, std::nullopt, handle::win32}),
               rmm::logic_error);
}

}  // namespace
