// RMM takes any resource as upstream, so a pool over a pool and a limiting adaptor over a
// limiting adaptor compile and mean a new resource over the given one (not a copy of it).
#include "test_utils.hpp"

#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/pool_memory_resource.hpp>

#include <gtest/gtest.h>

#include <cstddef>

namespace rmm::test {
namespace {

constexpr std::size_t KiB = 1024;

TEST(UpstreamOfItsOwnType, PoolOverPool)
{
  rmm::mr::pool_memory_resource outer{new_delete_resource{}, 0};
  rmm::mr::pool_memory_resource inner{outer, 64 * KiB};
  auto const outer_size = outer.pool_size();
  EXPECT_GE(outer_size, 64 * KiB);  // the inner pool's chunk came from the outer pool
  EXPECT_EQ(inner.pool_size(), 64 * KiB);
  EXPECT_FALSE(inner == outer);
  EXPECT_TRUE(inner.get_upstream_resource() == rmm::device_async_resource_ref{outer});
  void* p = inner.allocate_sync(1000);
  EXPECT_EQ(outer.pool_size(), outer_size);  // served by the inner pool alone
  inner.deallocate_sync(p, 1000);
  rmm::mr::pool_memory_resource const& const_outer = outer;
  rmm::mr::pool_memory_resource third{const_outer, 0, 128 * KiB};
  EXPECT_FALSE(third == outer);
}

TEST(UpstreamOfItsOwnType, LimitingOverLimiting)
{
  rmm::mr::limiting_resource_adaptor outer{new_delete_resource{}, 4 * KiB};
  rmm::mr::limiting_resource_adaptor inner{outer, 2 * KiB};
  EXPECT_FALSE(inner == outer);
  void* p = inner.allocate_sync(1 * KiB);
  EXPECT_EQ(inner.get_allocated_bytes(), 1 * KiB);
  EXPECT_EQ(outer.get_allocated_bytes(), 1 * KiB);  // counted by both
  EXPECT_THROW((void)inner.allocate_sync(2 * KiB), rmm::out_of_memory);
  void* q = outer.allocate_sync(3 * KiB);
  EXPECT_EQ(outer.get_allocated_bytes(), 4 * KiB);
  outer.deallocate_sync(q, 3 * KiB);
  inner.deallocate_sync(p, 1 * KiB);
  EXPECT_EQ(outer.get_allocated_bytes(), 0u);
  // A copy is still a copy: the same adaptor.
  rmm::mr::limiting_resource_adaptor copy{inner};
  EXPECT_TRUE(copy == inner);
}

}  // namespace
}  // namespace rmm::test
