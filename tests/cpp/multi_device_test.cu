// Two GPUs: a resource per device, the per-device table following cudaSetDevice, containers made
// on one device and destroyed while another is current, a pool per device under eight threads,
// peer copies between two pools' blocks. Each test skips, saying why, on a machine with fewer
// than two devices.

#include "test_utils.hpp"

#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/device_buffer.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <cstdint>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#define RMM_SKIP_WITHOUT_TWO_GPUS()                                                             \
  do {                                                                                          \
    if (rmm::get_num_cuda_devices() < 2) {                                                      \
      GTEST_SKIP() << "skipped: needs two CUDA devices, this machine has "                      \
                   << rmm::get_num_cuda_devices();                                              \
    }                                                                                           \
  } while (0)

namespace {


/// The device whose memory `p` is.
int device_holding(void const* p)
{
  cudaPointerAttributes attributes{};
  RMM_CUDA_TRY(cudaPointerGetAttributes(&attributes, p));
  return attributes.device;
}

__global__ void fill(std::uint32_t* p, std::size_t n, std::uint32_t tag)
{
  for (auto i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    p[i] = tag ^ static_cast<std::uint32_t>(i);
  }
}

/// Counts the words of `p` that do not hold `fill(p, n, tag)`'s pattern.
__global__ void count_wrong(std::uint32_t const* p, std::size_t n, std::uint32_t tag, unsigned* wrong)
{
  for (auto i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    if (p[i] != (tag ^ static_cast<std::uint32_t>(i))) { atomicAdd(wrong, 1u); }
  }
}

/// A pool on each of the first two devices, made with its device current, and the table set to
/// it; everything restored on destruction.
class TwoDevices : public ::testing::Test {
 protected:
  void SetUp() override
  {
    RMM_SKIP_WITHOUT_TWO_GPUS();
    for (int d = 0; d < 2; ++d) {
      rmm::cuda_set_device_raii dev{rmm::cuda_device_id{d}};
      pools_[d].emplace(rmm::mr::cuda_memory_resource{}, 64 * MiB);
      rmm::mr::set_per_device_resource(rmm::cuda_device_id{d}, *pools_[d]);
    }
  }
  void TearDown() override
  {
    if (!pools_[0]) { return; }  // skipped
    for (int d = 0; d < 2; ++d) {
      rmm::mr::reset_per_device_resource(rmm::cuda_device_id{d});
    }
    RMM_CUDA_TRY(cudaSetDevice(0));
  }
  std::optional<rmm::mr::pool_memory_resource> pools_[2];
};

TEST_F(TwoDevices, TheTableFollowsCudaSetDevice)
{
  for (int round = 0; round < 4; ++round) {
    for (int d = 0; d < 2; ++d) {
      RMM_CUDA_TRY(cudaSetDevice(d));
      EXPECT_TRUE(rmm::mr::get_current_device_resource_ref() == rmm::device_async_resource_ref{*pools_[d]});
      rmm::device_buffer buf(1000, cuda::stream_ref{cudaStream_t{}});
      EXPECT_EQ(device_holding(buf.data()), d);
    }
  }
}

TEST_F(TwoDevices, ContainersMadeOnOneDeviceAreFreedWhileAnotherIsCurrent)
{
  for (int made_on = 0; made_on < 2; ++made_on) {
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    auto ref = rmm::mr::get_current_device_resource_ref();
    rmm::mr::statistics_resource_adaptor stats{ref};
    auto previous = rmm::mr::set_current_device_resource(stats);
    std::optional<rmm::device_buffer> buffer;
    std::optional<rmm::device_uvector<int>> vector;
    {
      rmm::device_buffer a(4096, cuda::stream_ref{cudaStream_t{}});
      buffer.emplace(std::move(a));
      rmm::device_uvector<int> v(1024, cuda::stream_ref{cudaStream_t{}});
      vector.emplace(std::move(v));
    }
    EXPECT_EQ(device_holding(buffer->data()), made_on);
    EXPECT_EQ(stats.get_bytes_counter().value, 4096 + 4096);
    rmm::mr::set_current_device_resource(std::move(previous));
    RMM_CUDA_TRY(cudaSetDevice(1 - made_on));
    buffer.reset();
    vector.reset();
    int current = -1;
    RMM_CUDA_TRY(cudaGetDevice(&current));
    EXPECT_EQ(current, 1 - made_on) << "a destructor left another device current";
    EXPECT_EQ(stats.get_bytes_counter().value, 0);
  }
}

TEST_F(TwoDevices, WrapAndRestoreOnEachDeviceAThousandTimes)
{
  for (int round = 0; round < 1000; ++round) {
    int const d = round % 2;
    RMM_CUDA_TRY(cudaSetDevice(d));
    // The adaptor and its upstream outlive the buffer: a reference to what the per-device table
    // holds lasts only until the table's entry is replaced (RMM's rule too).
    rmm::mr::cuda_memory_resource upstream;
    rmm::mr::statistics_resource_adaptor adaptor{upstream};
    auto previous = rmm::mr::set_current_device_resource_ref(adaptor);
    std::optional<rmm::device_buffer> kept;
    {
      rmm::device_buffer a(1000, cuda::stream_ref{cudaStream_t{}});
      kept.emplace(std::move(a));
    }
    rmm::mr::set_current_device_resource(std::move(previous));
    RMM_CUDA_TRY(cudaSetDevice(1 - d));
    kept.reset();  // freed through the adaptor of device d while the other device is current
    EXPECT_EQ(adaptor.get_allocations_counter().value, 0) << "round " << round;
    ASSERT_FALSE(HasFailure()) << "round " << round;
  }
}

TEST_F(TwoDevices, APoolPerDeviceUnderEightThreads)
{
  std::vector<std::thread> threads;
  std::vector<unsigned> wrong(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &wrong] {
      int const d = t % 2;
      RMM_CUDA_TRY(cudaSetDevice(d));
      rmm::cuda_stream stream;
      rmm::device_uvector<unsigned> counter(1, stream);
      RMM_CUDA_TRY(cudaMemsetAsync(counter.data(), 0, sizeof(unsigned), stream.value()));
      std::vector<rmm::device_uvector<std::uint32_t>> live;
      for (int i = 0; i < 400; ++i) {
        std::size_t const n = 256u << (i % 9);
        live.emplace_back(n, stream);
        auto tag = static_cast<std::uint32_t>(t * 1000003 + i);
        fill<<<32, 256, 0, stream.value()>>>(live.back().data(), n, tag);
        if (live.size() > 16) {
          auto& v    = live.front();
          auto vtag  = static_cast<std::uint32_t>(t * 1000003 + i - 16);
          count_wrong<<<32, 256, 0, stream.value()>>>(v.data(), v.size(), vtag, counter.data());
          live.erase(live.begin());
        }
      }
      live.clear();
      wrong[t] = counter.front_element(stream);
      stream.synchronize();
    });
  }
  for (auto& th : threads) { th.join(); }
  for (int t = 0; t < 8; ++t) { EXPECT_EQ(wrong[t], 0u) << "thread " << t; }
}

TEST_F(TwoDevices, PeerCopiesBetweenTwoPoolsBlocks)
{
  std::size_t const n = 4 * MiB / sizeof(std::uint32_t);
  RMM_CUDA_TRY(cudaSetDevice(0));
  rmm::cuda_stream s0;
  rmm::device_uvector<std::uint32_t> a(n, s0, *pools_[0]);
  fill<<<128, 256, 0, s0.value()>>>(a.data(), n, 0xA5A5A5A5u);
  RMM_CUDA_TRY(cudaSetDevice(1));
  rmm::cuda_stream s1;
  rmm::device_uvector<std::uint32_t> b(n, s1, *pools_[1]);
  rmm::device_uvector<unsigned> wrong(1, s1, *pools_[1]);
  RMM_CUDA_TRY(cudaMemsetAsync(wrong.data(), 0, sizeof(unsigned), s1.value()));
  s0.synchronize();
  RMM_CUDA_TRY(cudaMemcpyPeerAsync(b.data(), 1, a.data(), 0, n * sizeof(std::uint32_t), s1.value()));
  count_wrong<<<128, 256, 0, s1.value()>>>(b.data(), n, 0xA5A5A5A5u, wrong.data());
  EXPECT_EQ(wrong.front_element(s1), 0u);
  EXPECT_EQ(device_holding(a.data()), 0);
  EXPECT_EQ(device_holding(b.data()), 1);
  s1.synchronize();
  RMM_CUDA_TRY(cudaSetDevice(0));
  a.release();  // freed on its own device's stream
  s0.synchronize();
}

}  // namespace
