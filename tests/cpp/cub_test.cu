// CUB over RMM: the two-phase calls with their scratch in an rmm::device_buffer from the current
// device resource, and CCCL 3.5's single-call forms with an environment carrying the stream and a
// device_async_resource_ref. Results are checked against the host; the statistics adaptor over
// the pool must have counted the scratch, and all of it must have come back.

#include "test_utils.hpp"

#include <rmm/cuda_stream.hpp>
#include <rmm/device_buffer.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/resource_ref.hpp>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <cub/device/device_select.cuh>
#include <cuda/std/execution>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

namespace {

struct cub_is_even {
  __host__ __device__ bool operator()(int x) const { return x % 2 == 0; }
};

using mr_prop = cuda::std::execution::prop<cuda::mr::get_memory_resource_t, rmm::device_async_resource_ref>;
using stream_mr_env = cuda::std::execution::env<cuda::stream_ref, mr_prop>;

class Cub : public ::testing::Test {
 protected:
  static constexpr std::size_t n = (1 << 20) + 77;  // not a multiple of any tile size

  void SetUp() override
  {
    RMM_SKIP_WITHOUT_GPU();
    stream_.emplace();
    pool_.emplace(rmm::mr::cuda_memory_resource{}, std::size_t{32} << 20);
    stats_.emplace(*pool_);
    rmm::mr::set_current_device_resource(*stats_);
    std::mt19937 rng{1234};
    std::uniform_int_distribution<int> value{-1000, 1000};
    host_.resize(n);
    for (auto& x : host_) { x = value(rng); }
    in_.emplace(to_device(host_));
    out_.emplace(n, stream());
  }
  void TearDown() override
  {
    if (!stats_) { return; }
    in_.reset();
    out_.reset();
    stream_->synchronize();
    EXPECT_EQ(stats_->get_bytes_counter().value, 0) << "scratch or data still held";
    rmm::mr::reset_current_device_resource();
  }

  cuda::stream_ref stream() const { return *stream_; }
  int count() const { return static_cast<int>(n); }
  long long allocations() const { return static_cast<long long>(stats_->get_allocations_counter().total); }
  stream_mr_env env(rmm::device_async_resource_ref mr) const
  {
    return stream_mr_env{stream(), mr_prop{cuda::mr::get_memory_resource, mr}};
  }
  stream_mr_env env() const { return env(rmm::mr::get_current_device_resource_ref()); }

  rmm::device_uvector<int> to_device(std::vector<int> const& host) const
  {
    rmm::device_uvector<int> d(host.size(), stream());
    RMM_CUDA_TRY(cudaMemcpyAsync(
      d.data(), host.data(), host.size() * sizeof(int), cudaMemcpyHostToDevice, stream().get()));
    return d;
  }
  std::vector<int> to_host(int const* d, std::size_t size) const
  {
    std::vector<int> host(size);
    RMM_CUDA_TRY(cudaMemcpyAsync(host.data(), d, size * sizeof(int), cudaMemcpyDeviceToHost, stream().get()));
    stream().sync();
    return host;
  }

  /// CUB's two-phase protocol: `call(nullptr, bytes)` asks the size, the scratch is a
  /// device_buffer from the current resource, `call(scratch, bytes)` runs. Checks that the
  /// scratch was counted by the statistics adaptor.
  template <class Call>
  void two_phase(Call&& call)
  {
    auto const before = allocations();
    std::size_t bytes = 0;
    RMM_CUDA_TRY(call(nullptr, bytes));
    EXPECT_GT(bytes, 0U);
    {
      rmm::device_buffer scratch(bytes, stream());
      RMM_CUDA_TRY(call(scratch.data(), bytes));
      EXPECT_GE(stats_->get_bytes_counter().value, static_cast<std::int64_t>(bytes));
    }
    EXPECT_EQ(allocations() - before, 1) << "the scratch is one allocation of the current resource";
  }

  std::vector<int> host_;
  std::optional<rmm::mr::pool_memory_resource> pool_;
  std::optional<rmm::mr::statistics_resource_adaptor> stats_;
  std::optional<rmm::cuda_stream> stream_;
  std::optional<rmm::device_uvector<int>> in_;
  std::optional<rmm::device_uvector<int>> out_;
};

TEST_F(Cub, ReduceSum)
{
  int const sum = std::accumulate(host_.begin(), host_.end(), 0);
  int* out = out_->data();
  int const* in = in_->data();
  two_phase([&](void* t, std::size_t& b) {
    return cub::DeviceReduce::Sum(t, b, in, out, count(), stream().get());
  });
  EXPECT_EQ(to_host(out, 1)[0], sum);

  RMM_CUDA_TRY(cudaMemsetAsync(out, 0, sizeof(int), stream().get()));
  auto const before = allocations();
  RMM_CUDA_TRY(cub::DeviceReduce::Sum(in, out, count(), env()));
  EXPECT_GE(allocations() - before, 1);
  EXPECT_EQ(to_host(out, 1)[0], sum);
}

TEST_F(Cub, ScanInclusiveSum)
{
  std::vector<int> expected(n);
  std::partial_sum(host_.begin(), host_.end(), expected.begin());
  int* out = out_->data();
  int const* in = in_->data();
  two_phase([&](void* t, std::size_t& b) {
    return cub::DeviceScan::InclusiveSum(t, b, in, out, count(), stream().get());
  });
  EXPECT_EQ(to_host(out, n), expected);

  RMM_CUDA_TRY(cudaMemsetAsync(out, 0, n * sizeof(int), stream().get()));
  auto const before = allocations();
  RMM_CUDA_TRY(cub::DeviceScan::InclusiveSum(in, out, count(), env()));
  EXPECT_GE(allocations() - before, 1);
  EXPECT_EQ(to_host(out, n), expected);
}

TEST_F(Cub, RadixSortKeys)
{
  std::vector<int> expected = host_;
  std::sort(expected.begin(), expected.end());
  int* out = out_->data();
  int const* in = in_->data();
  two_phase([&](void* t, std::size_t& b) {
    return cub::DeviceRadixSort::SortKeys(t, b, in, out, count(), 0, 32, stream().get());
  });
  EXPECT_EQ(to_host(out, n), expected);

  RMM_CUDA_TRY(cudaMemsetAsync(out, 0, n * sizeof(int), stream().get()));
  auto const before = allocations();
  RMM_CUDA_TRY(cub::DeviceRadixSort::SortKeys(in, out, count(), 0, 32, env()));
  EXPECT_GE(allocations() - before, 1);
  EXPECT_EQ(to_host(out, n), expected);
}

TEST_F(Cub, SegmentedSortKeys)
{
  // Segments of random lengths, some empty, covering the whole input.
  std::mt19937 rng{99};
  std::uniform_int_distribution<int> length{0, 3000};
  std::vector<int> offsets{0};
  while (offsets.back() < count()) { offsets.push_back(std::min(count(), offsets.back() + length(rng))); }
  std::vector<int> expected = host_;
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
    std::sort(expected.begin() + offsets[s], expected.begin() + offsets[s + 1]);
  }
  auto const d_offsets = to_device(offsets);
  auto const segments = static_cast<std::int64_t>(offsets.size() - 1);
  int const* begins = d_offsets.data();
  int const* ends = d_offsets.data() + 1;
  int* out = out_->data();
  int const* in = in_->data();
  two_phase([&](void* t, std::size_t& b) {
    return cub::DeviceSegmentedSort::SortKeys(t, b, in, out, count(), segments, begins, ends, stream().get());
  });
  EXPECT_EQ(to_host(out, n), expected);

  RMM_CUDA_TRY(cudaMemsetAsync(out, 0, n * sizeof(int), stream().get()));
  auto const before = allocations();
  RMM_CUDA_TRY(cub::DeviceSegmentedSort::SortKeys(in, out, count(), segments, begins, ends, env()));
  EXPECT_GE(allocations() - before, 1);
  EXPECT_EQ(to_host(out, n), expected);
}

TEST_F(Cub, SelectIf)
{
  std::vector<int> expected;
  std::copy_if(host_.begin(), host_.end(), std::back_inserter(expected), cub_is_even{});
  rmm::device_uvector<int> selected(1, stream());
  int* out = out_->data();
  int const* in = in_->data();
  int* num = selected.data();
  two_phase([&](void* t, std::size_t& b) {
    return cub::DeviceSelect::If(t, b, in, out, num, count(), cub_is_even{}, stream().get());
  });
  auto got = static_cast<std::size_t>(to_host(num, 1)[0]);
  ASSERT_EQ(got, expected.size());
  EXPECT_EQ(to_host(out, got), expected);

  RMM_CUDA_TRY(cudaMemsetAsync(num, 0, sizeof(int), stream().get()));
  auto const before = allocations();
  RMM_CUDA_TRY(cub::DeviceSelect::If(in, out, num, count(), cub_is_even{}, env()));
  EXPECT_GE(allocations() - before, 1);
  got = static_cast<std::size_t>(to_host(num, 1)[0]);
  ASSERT_EQ(got, expected.size());
  EXPECT_EQ(to_host(out, got), expected);
}

// The environment's resource, not the current one, gives the scratch of a single-call form.
TEST_F(Cub, EnvironmentResourceOverridesTheCurrentOne)
{
  rmm::mr::statistics_resource_adaptor other{*pool_};
  std::vector<int> expected = host_;
  std::sort(expected.begin(), expected.end());
  auto const current_before = allocations();
  RMM_CUDA_TRY(cub::DeviceRadixSort::SortKeys(in_->data(), out_->data(), count(), 0, 32, env(other)));
  EXPECT_EQ(to_host(out_->data(), n), expected);
  EXPECT_EQ(allocations(), current_before) << "the scratch came from the current resource";
  EXPECT_GE(other.get_allocations_counter().total, 1);
  EXPECT_GT(other.get_bytes_counter().peak, 0);
  EXPECT_EQ(other.get_bytes_counter().value, 0) << "the scratch was not given back";
}

}  // namespace
