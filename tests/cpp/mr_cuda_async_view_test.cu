// The conformance suite (mr_conformance.hpp) for `rmm::mr::cuda_async_view_memory_resource`, over
// the pool of a cuda_async_memory_resource that lives for the whole program; and what allocating
// from a view of a pool destroyed afterwards throws (a CUDA call that fails on purpose: the suite
// is listed in tests/gpu/failing_on_purpose.txt).
#include "mr_conformance.hpp"
#include "test_utils.hpp"

#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_async_view_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <cstdlib>

namespace rmm::test {
namespace {
struct cuda_async_view_factory {
  static constexpr bool needs_gpu = true;
  static auto make()
  {
    static auto* const owner = new rmm::mr::cuda_async_memory_resource{};  // NOLINT: kept to exit
    return rmm::mr::cuda_async_view_memory_resource{owner->pool_handle()};
  }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(CudaAsyncView, MrConformance, cuda_async_view_factory);

namespace {
/// RMM_CUDA_TRY_ALLOC's rule: cudaMallocFromPoolAsync's cudaErrorInvalidValue is rmm::bad_alloc
/// (not rmm::out_of_memory), naming the error; an adaptor lets it through and counts nothing; a
/// pool over the view refuses with rmm::out_of_memory quoting it, as RMM's pool does.
void allocate_from_a_view_of_a_destroyed_pool()
{
  constexpr std::size_t KiB = 1024;
  cudaMemPoolProps props{};
  props.allocType     = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id   = rmm::get_current_cuda_device().value();
  cudaMemPool_t pool{};
  ASSERT_EQ(cudaMemPoolCreate(&pool, &props), cudaSuccess);
  rmm::mr::cuda_async_view_memory_resource view{pool};
  view.deallocate_sync(view.allocate_sync(KiB), KiB);
  // Every free of the pool completed first: a pool destroyed with a free still pending lives on
  // in the driver until it completes, and an allocation from it meanwhile crashed in the driver.
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemPoolDestroy(pool), cudaSuccess);

  expect_throws_exactly<rmm::bad_alloc>([&] { (void)view.allocate_sync(KiB); },
                                        "CUDA_ERROR_INVALID_VALUE");
  rmm::mr::statistics_resource_adaptor stats{view};
  expect_throws_exactly<rmm::bad_alloc>([&] { (void)stats.allocate_sync(KiB); },
                                        "std::bad_alloc: CUDA error (failed to allocate 1024 bytes)");
  EXPECT_EQ(stats.get_allocations_counter().total, 0);
  rmm::mr::pool_memory_resource pool_over_view{view, 0};
  expect_throws_exactly<rmm::out_of_memory>([&] { (void)pool_over_view.allocate_sync(KiB); },
                                            "CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(pool_over_view.pool_size(), std::size_t{0});
}
}  // namespace

/// In a process of its own (gtest's threadsafe death-test style re-runs this test alone): what a
/// destroyed pool's handle does in the driver is the driver's, and among the earlier tests of
/// one long process it once crashed there, taking every later test with it.
TEST(CudaAsyncViewOfADestroyedPool, AllocationIsBadAllocNamingTheCudaError)
{
  RMM_SKIP_WITHOUT_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
    {
      allocate_from_a_view_of_a_destroyed_pool();
      std::exit(::testing::Test::HasFailure() ? 1 : 0);
    },
    ::testing::ExitedWithCode(0),
    "");
}
}  // namespace rmm::test
