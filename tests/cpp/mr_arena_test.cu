// The conformance suite (mr_conformance.hpp) for `rmm::mr::arena_memory_resource` over host memory
// and over `cuda_memory_resource`, and the arena's constructor and exceptions.
#include "mr_conformance.hpp"

#include <rmm/error.hpp>
#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>

namespace rmm::test {
namespace {

struct arena_host_factory {
  static constexpr bool needs_gpu = false;
  static auto make() { return rmm::mr::arena_memory_resource{new_delete_resource{}, 64 * MiB}; }
};

struct arena_cuda_factory {
  static constexpr bool needs_gpu = true;
  static auto make() { return rmm::mr::arena_memory_resource{rmm::mr::cuda_memory_resource{}, 256 * MiB}; }
};

TEST(ArenaMemoryResource, SmallerThanASuperblockIsALogicError)
{
  EXPECT_THROW(rmm::mr::arena_memory_resource(new_delete_resource{}, MiB - 1), rmm::logic_error);
  EXPECT_NO_THROW(rmm::mr::arena_memory_resource(new_delete_resource{}, std::optional<std::size_t>{MiB}));
}

TEST(ArenaMemoryResource, ExhaustionThrowsOutOfMemory)
{
  rmm::mr::arena_memory_resource mr{new_delete_resource{}, 4 * MiB, false};
  void* big = mr.allocate_sync(3 * MiB);
  EXPECT_THROW(static_cast<void>(mr.allocate_sync(2 * MiB)), rmm::out_of_memory);
  EXPECT_THROW(static_cast<void>(mr.allocate_sync(2 * MiB)), rmm::bad_alloc);
  // Freed memory serves again, small and large.
  mr.deallocate_sync(big, 3 * MiB);
  void* again = mr.allocate_sync(3 * MiB);
  void* small = mr.allocate_sync(1000);
  EXPECT_NE(again, small);
  mr.deallocate_sync(small, 1000);
  mr.deallocate_sync(again, 3 * MiB);
}

TEST(ArenaMemoryResource, CopiesShareTheArena)
{
  rmm::mr::arena_memory_resource mr{new_delete_resource{}, 2 * MiB};
  rmm::mr::arena_memory_resource copy = mr;
  EXPECT_TRUE(mr == copy);
  void* p = copy.allocate_sync(512);
  mr.deallocate_sync(p, 512);
}

TEST(ArenaMemoryResource, DefaultSizeIsHalfTheFreeDeviceMemory)
{
  RMM_SKIP_WITHOUT_GPU();
  rmm::mr::arena_memory_resource mr{rmm::mr::cuda_memory_resource{}};
  void* p = mr.allocate_sync(4 * MiB);
  EXPECT_NE(p, nullptr);
  mr.deallocate_sync(p, 4 * MiB);
}
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(ArenaOverHost, MrConformance, arena_host_factory);
INSTANTIATE_TYPED_TEST_SUITE_P(ArenaOverCuda, MrConformance, arena_cuda_factory);
}  // namespace rmm::test
