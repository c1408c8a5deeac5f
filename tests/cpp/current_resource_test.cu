// The current resource wrapped, replaced and restored, as RMM programs observe their memory:
//
//   auto ref = rmm::mr::get_current_device_resource_ref();
//   rmm::mr::set_current_device_resource(rmm::mr::statistics_resource_adaptor{ref});
//   ... containers ...
//   rmm::mr::set_current_device_resource(ref);
//
// `ref` refers to the table's copy of the initial resource, which the first set destroys; as in
// RMM, the initial cuda_memory_resource holds no state, so the pattern works any number of times.

#include "test_utils.hpp"

#include <rmm/cuda_stream.hpp>
#include <rmm/device_buffer.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <utility>

namespace {

/// One round of the pattern on the current device: wrap, use, restore. The adaptor's counters
/// must see exactly the containers' memory.
void wrap_use_restore(cuda::stream_ref stream)
{
  auto ref = rmm::mr::get_current_device_resource_ref();
  rmm::mr::set_current_device_resource(rmm::mr::statistics_resource_adaptor{ref});
  {
    rmm::device_buffer a(1000, stream);
    rmm::device_buffer b(std::move(a));
    rmm::device_uvector<int> v(250, stream);
    auto moved = std::move(v);
    EXPECT_EQ(b.size(), 1000u);
    EXPECT_EQ(moved.size(), 250u);
  }
  stream.sync();
  rmm::mr::set_current_device_resource(ref);
}

TEST(CurrentResource, WrapAndRestoreTheInitialResourceAThousandTimes)
{
  RMM_SKIP_WITHOUT_GPU();
  rmm::mr::reset_current_device_resource();
  rmm::cuda_stream stream;
  for (int round = 0; round < 1000; ++round) {
    wrap_use_restore(stream);
    if (HasFailure()) { FAIL() << "round " << round; }
  }
  rmm::mr::reset_current_device_resource();
}

TEST(CurrentResource, AdaptorCountsWhatTheContainersTookWhileItWasCurrent)
{
  RMM_SKIP_WITHOUT_GPU();
  rmm::mr::reset_current_device_resource();
  rmm::cuda_stream stream;
  auto ref = rmm::mr::get_current_device_resource_ref();
  rmm::mr::statistics_resource_adaptor stats{ref};
  auto previous = rmm::mr::set_current_device_resource(stats);
  {
    rmm::device_buffer a(1000, stream);
    EXPECT_EQ(stats.get_bytes_counter().value, 1000);
    rmm::device_buffer b(std::move(a));
    EXPECT_EQ(stats.get_bytes_counter().value, 1000) << "a move allocates nothing";
  }
  EXPECT_EQ(stats.get_bytes_counter().value, 0);
  EXPECT_EQ(stats.get_allocations_counter().total, 1);
  rmm::mr::set_current_device_resource(std::move(previous));
  rmm::mr::reset_current_device_resource();
}

/// Wrapping a pool that is current, then restoring it from the value the first set returned (the
/// way to restore a resource that holds state: a reference to the table's copy of it dangles once
/// the copy is replaced, in RMM as here).
TEST(CurrentResource, WrapAndRestoreAPoolThroughTheReturnedResource)
{
  RMM_SKIP_WITHOUT_GPU();
  rmm::cuda_stream stream;
  rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, std::size_t{4} << 20};
  rmm::mr::set_current_device_resource(pool);
  for (int round = 0; round < 1000; ++round) {
    auto previous = rmm::mr::set_current_device_resource(
      rmm::mr::statistics_resource_adaptor{rmm::mr::get_current_device_resource_ref()});
    {
      rmm::device_buffer a(1000, stream);
      rmm::device_buffer b(std::move(a));
    }
    rmm::mr::set_current_device_resource(std::move(previous));
    ASSERT_TRUE(rmm::mr::get_current_device_resource_ref() == rmm::device_async_resource_ref{pool})
      << "round " << round;
  }
  stream.synchronize();
  EXPECT_EQ(pool.pool_size(), std::size_t{4} << 20) << "the pool never grew: every block came back";
  rmm::mr::reset_current_device_resource();
}

}  // namespace
