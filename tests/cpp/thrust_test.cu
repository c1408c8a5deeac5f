// Thrust over RMM: thrust_allocator, device_vector and exec_policy with sort, reduce and scan;
// scratch memory must come from the current device resource (or the one given).

#include "test_utils.hpp"

#include <rmm/cuda_stream.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/device_vector.hpp>
#include <rmm/exec_policy.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/polymorphic_allocator.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/thrust_allocator_adaptor.hpp>

#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include <optional>
#include <vector>

namespace {

class Thrust : public ::testing::Test {
 protected:
  void SetUp() override
  {
    RMM_SKIP_WITHOUT_GPU();
    stream_.emplace();
    pool_.emplace(rmm::mr::cuda_memory_resource{}, std::size_t{32} << 20);
    stats_.emplace(*pool_);
    rmm::mr::set_current_device_resource(*stats_);
  }
  void TearDown() override
  {
    if (stats_) { rmm::mr::reset_current_device_resource(); }
  }
  std::optional<rmm::mr::pool_memory_resource> pool_;
  std::optional<rmm::mr::statistics_resource_adaptor> stats_;
  std::optional<rmm::cuda_stream> stream_;  // made in SetUp, after the GPU check
};

TEST_F(Thrust, SortTakesScratchFromTheCurrentResource)
{
  std::size_t const n = 1 << 20;
  rmm::device_uvector<int> v(n, *stream_);
  thrust::sequence(rmm::exec_policy(*stream_), v.begin(), v.end(), static_cast<int>(n), -1);
  auto const before = stats_->get_allocations_counter().total;
  thrust::sort(rmm::exec_policy(*stream_), v.begin(), v.end());
  EXPECT_GT(stats_->get_allocations_counter().total, before);
  EXPECT_EQ(v.front_element(*stream_), 1);
  EXPECT_EQ(v.back_element(*stream_), static_cast<int>(n));
  EXPECT_TRUE(thrust::is_sorted(rmm::exec_policy(*stream_), v.begin(), v.end()));
}

TEST_F(Thrust, ExplicitResourceOverridesTheCurrentOne)
{
  rmm::mr::statistics_resource_adaptor other{*pool_};
  rmm::device_uvector<float> v(1 << 18, *stream_, other);
  thrust::sequence(rmm::exec_policy(*stream_, other), v.begin(), v.end());
  auto const current_before = stats_->get_allocations_counter().total;
  thrust::sort(rmm::exec_policy(*stream_, other), v.begin(), v.end());
  EXPECT_EQ(stats_->get_allocations_counter().total, current_before);
  EXPECT_GE(other.get_allocations_counter().total, 2);
}

TEST_F(Thrust, ReduceAndScan)
{
  rmm::device_vector<long long> v(1000);
  thrust::sequence(rmm::exec_policy(*stream_), v.begin(), v.end(), 1LL);
  EXPECT_EQ(thrust::reduce(rmm::exec_policy(*stream_), v.begin(), v.end(), 0LL), 500500LL);
  rmm::device_vector<long long> out(1000);
  thrust::inclusive_scan(rmm::exec_policy_nosync(*stream_), v.begin(), v.end(), out.begin());
  stream_->synchronize();
  thrust::host_vector<long long> h = out;
  EXPECT_EQ(h[999], 500500LL);
  EXPECT_EQ(h[9], 55LL);
}

TEST_F(Thrust, DeviceVectorUsesTheThrustAllocator)
{
  auto const before = stats_->get_bytes_counter().value;
  {
    rmm::device_vector<int> v(1 << 16, 3);
    EXPECT_GE(stats_->get_bytes_counter().value - before, static_cast<long>((1 << 16) * sizeof(int)));
    EXPECT_EQ(thrust::reduce(rmm::exec_policy(*stream_), v.begin(), v.end()), 3 << 16);
    v.resize(1 << 17, 1);
    v.clear();
    v.shrink_to_fit();
  }
  EXPECT_EQ(stats_->get_bytes_counter().value, before);
}

TEST_F(Thrust, AllocatorsCompareByResource)
{
  rmm::mr::thrust_allocator<int> a(*stream_, *stats_);
  rmm::mr::thrust_allocator<double> b(*stream_, *stats_);
  rmm::mr::thrust_allocator<int> c(*stream_, *pool_);
  EXPECT_TRUE(a == b);
  EXPECT_TRUE(a != c);
  rmm::mr::thrust_allocator<char> rebound(a);
  EXPECT_EQ(rebound.stream(), cuda::stream_ref{*stream_});
  EXPECT_TRUE(rebound.get_upstream_resource() == rmm::device_async_resource_ref{*stats_});
  auto p = a.allocate(100);
  a.deallocate(p, 100);
}

TEST_F(Thrust, PolymorphicAndStreamAllocator)
{
  rmm::mr::polymorphic_allocator<int> poly{*stats_};
  int* p = poly.allocate(256, *stream_);
  EXPECT_EQ(stats_->get_allocations_counter().value, 1);
  poly.deallocate(p, 256, *stream_);
  auto bound = rmm::mr::stream_allocator_adaptor<rmm::mr::polymorphic_allocator<int>>{poly, *stream_};
  int* q = bound.allocate(10);
  bound.deallocate(q, 10);
  EXPECT_EQ(stats_->get_allocations_counter().value, 0);
  rmm::mr::polymorphic_allocator<int> current;  // the current device resource
  EXPECT_TRUE(current == poly);
}

}  // namespace
