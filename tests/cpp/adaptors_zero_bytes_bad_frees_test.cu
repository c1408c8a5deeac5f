// RMM 26.10's behaviour of the adaptors, the binning resource and a capped pool, seen from C++:
// what a 0-byte request counts and passes upstream, how the tracking adaptor passes on frees it
// cannot match, and how a pool under a maximum grows. Host memory stands in for device memory
// (nothing touches it): these run without a GPU.

#include "test_utils.hpp"

#include <rmm/cuda_device.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using rmm::test::default_stream;
using rmm::test::expect_throws_exactly;

/// A user's resource that records every call, `(allocate?, bytes)`, and answers a 0-byte request
/// with null as cudaMalloc does. Copies share the record.
struct recording_resource {
  struct state {
    std::mutex m;
    std::vector<std::pair<bool, std::size_t>> calls;
  };
  std::shared_ptr<state> s = std::make_shared<state>();

  void* allocate(cuda::stream_ref, std::size_t bytes, std::size_t)
  {
    {
      std::lock_guard<std::mutex> lock{s->m};
      s->calls.emplace_back(true, bytes);
    }
    return bytes == 0 ? nullptr : ::operator new(bytes, std::align_val_t{256});
  }
  void deallocate(cuda::stream_ref, void* p, std::size_t bytes, std::size_t) noexcept
  {
    {
      std::lock_guard<std::mutex> lock{s->m};
      s->calls.emplace_back(false, bytes);
    }
    if (p != nullptr) { ::operator delete(p, std::align_val_t{256}); }
  }
  void* allocate_sync(std::size_t bytes, std::size_t alignment)
  {
    return allocate(default_stream(), bytes, alignment);
  }
  void deallocate_sync(void* p, std::size_t bytes, std::size_t alignment) noexcept
  {
    deallocate(default_stream(), p, bytes, alignment);
  }
  [[nodiscard]] std::vector<std::pair<bool, std::size_t>> calls() const
  {
    std::lock_guard<std::mutex> lock{s->m};
    return s->calls;
  }
  bool operator==(recording_resource const& o) const noexcept { return s == o.s; }
  bool operator!=(recording_resource const& o) const noexcept { return s != o.s; }
  friend void get_property(recording_resource const&, cuda::mr::device_accessible) noexcept {}
};

using call = std::pair<bool, std::size_t>;
call const alloc0{true, 0};
call const free0{false, 0};

TEST(AdaptorsAsRmm, StatisticsCountsZeroByteAllocations)
{
  recording_resource up;
  rmm::mr::statistics_resource_adaptor stats{up};
  void* a = stats.allocate(default_stream(), 0);
  void* b = stats.allocate_sync(0);
  auto allocations = stats.get_allocations_counter();
  EXPECT_EQ(allocations.value, 2);
  EXPECT_EQ(allocations.peak, 2);
  EXPECT_EQ(allocations.total, 2);
  EXPECT_EQ(stats.get_bytes_counter().total, 0);
  stats.deallocate(default_stream(), a, 0);
  stats.deallocate_sync(b, 0);
  allocations = stats.get_allocations_counter();
  EXPECT_EQ(allocations.value, 0);
  EXPECT_EQ(allocations.total, 2);
  EXPECT_EQ(up.calls(), (std::vector<call>{alloc0, alloc0, free0, free0}));
}

TEST(AdaptorsAsRmm, TrackingLimitingAndLoggingPassZeroBytesUpstream)
{
  recording_resource up_t;
  rmm::mr::tracking_resource_adaptor tracking{up_t};
  void* p = tracking.allocate(default_stream(), 0);
  EXPECT_TRUE(tracking.get_outstanding_allocations().empty());
  EXPECT_EQ(tracking.get_allocated_bytes(), 0u);
  tracking.deallocate(default_stream(), p, 0);
  EXPECT_EQ(up_t.calls(), (std::vector<call>{alloc0, free0}));

  recording_resource up_l;
  rmm::mr::limiting_resource_adaptor limiting{up_l, 1024};
  p = limiting.allocate(default_stream(), 0);
  EXPECT_EQ(limiting.get_allocated_bytes(), 0u);
  limiting.deallocate(default_stream(), p, 0);
  EXPECT_EQ(up_l.calls(), (std::vector<call>{alloc0, free0}));

  recording_resource up_g;
  std::ostringstream log;
  {
    rmm::mr::logging_resource_adaptor logging{up_g, log};
    p = logging.allocate(default_stream(), 0);
    logging.deallocate(default_stream(), p, 0);
    logging.flush();
  }
  EXPECT_EQ(up_g.calls(), (std::vector<call>{alloc0, free0}));
  EXPECT_NE(log.str().find(",allocate,(nil),0,"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find(",free,(nil),0,"), std::string::npos) << log.str();
}

TEST(AdaptorsAsRmm, BinningSendsZeroBytesToTheSmallestBin)
{
  rmm::test::new_delete_resource up;
  recording_resource small;
  rmm::mr::binning_memory_resource binning{up};
  binning.add_bin(1024, rmm::device_async_resource_ref{small});
  binning.add_bin(4096);
  void* p = binning.allocate(default_stream(), 0);
  binning.deallocate(default_stream(), p, 0);
  EXPECT_EQ(small.calls(), (std::vector<call>{alloc0, free0}));
}

TEST(AdaptorsAsRmm, TrackingOverTrackingEndsWithNothingOutstanding)
{
  rmm::test::new_delete_resource up;
  rmm::mr::tracking_resource_adaptor inner{up};
  rmm::mr::tracking_resource_adaptor outer{rmm::device_async_resource_ref{inner}};  // not a copy
  void* mine   = outer.allocate(default_stream(), 300);
  void* direct = inner.allocate(default_stream(), 100);
  testing::internal::CaptureStderr();
  outer.deallocate(default_stream(), direct, 100);  // never tracked by `outer`: forwarded
  std::string const err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("Deallocating a pointer that was not tracked"), std::string::npos) << err;
  EXPECT_EQ(outer.get_outstanding_allocations().size(), 1u);
  EXPECT_EQ(inner.get_outstanding_allocations().size(), 1u);
  outer.deallocate(default_stream(), mine, 300);
  EXPECT_TRUE(outer.get_outstanding_allocations().empty());
  EXPECT_TRUE(inner.get_outstanding_allocations().empty());
  EXPECT_EQ(outer.get_allocated_bytes(), 0u);
  EXPECT_EQ(inner.get_allocated_bytes(), 0u);
  EXPECT_EQ(up.s->outstanding, 0);
}

TEST(AdaptorsAsRmm, TrackingLogsAWrongSizeAndFreesTheAllocatedSize)
{
  recording_resource up;
  rmm::mr::tracking_resource_adaptor tracking{up};
  void* p = tracking.allocate(default_stream(), 1000);
  testing::internal::CaptureStderr();
  tracking.deallocate(default_stream(), p, 600);
  std::string const err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("Alloc bytes (1000) and Dealloc bytes (600) do not match"), std::string::npos) << err;
  EXPECT_TRUE(tracking.get_outstanding_allocations().empty());
  EXPECT_EQ(tracking.get_allocated_bytes(), 0u);
  EXPECT_EQ(up.calls(), (std::vector<call>{{true, 1000}, {false, 1000}}));
}

TEST(AdaptorsAsRmm, CappedPoolGrowsAsRmm)
{
  rmm::test::new_delete_resource up;
  rmm::mr::limiting_resource_adaptor limited{up, 6000};
  rmm::mr::pool_memory_resource pool{limited, 0, 8192};
  void* a = pool.allocate(default_stream(), 1000);
  EXPECT_EQ(pool.pool_size(), 4096u) << "the larger of the request and half the room";
  expect_throws_exactly<rmm::out_of_memory>([&] { (void)pool.allocate(default_stream(), 4000); }, "");
  void* b = pool.allocate(default_stream(), 2000);
  EXPECT_EQ(pool.pool_size(), 4096u);
  pool.deallocate(default_stream(), b, 2000);
  pool.deallocate(default_stream(), a, 1000);
}

TEST(AdaptorsAsRmm, CappedPoolHalvesTheRoomAsRmm)
{
  // RMM's own numbers: the room left rounded up to 256 bytes, its half not rounded again.
  constexpr std::size_t MiB = std::size_t{1} << 20;
  rmm::test::new_delete_resource up;
  {
    rmm::mr::pool_memory_resource pool{up, 256, MiB};
    void* a = pool.allocate(default_stream(), 1000);
    EXPECT_EQ(pool.pool_size(), 524416u);
    expect_throws_exactly<rmm::out_of_memory>([&] { (void)pool.allocate(default_stream(), 2 * MiB); }, "");
    EXPECT_EQ(pool.pool_size(), 524416u);
    pool.deallocate(default_stream(), a, 1000);
  }
  {
    rmm::mr::pool_memory_resource pool{up, 256, 4 * MiB};
    void* a = pool.allocate(default_stream(), 1000);
    EXPECT_EQ(pool.pool_size(), 2097280u);
    void* b = pool.allocate(default_stream(), 2 * MiB);
    EXPECT_EQ(pool.pool_size(), 4194432u);
    pool.deallocate(default_stream(), b, 2 * MiB);
    pool.deallocate(default_stream(), a, 1000);
  }
  EXPECT_EQ(up.s->outstanding, 0);
}

TEST(AdaptorsAsRmm, CappedPoolGivesFreeChunksBackAsRmm)
{
  // Over device-accessible memory the pool gives a chunk back only after synchronising every
  // stream, which needs a CUDA device (without one it keeps the chunk, and the request fails).
  if (rmm::get_num_cuda_devices() == 0) { GTEST_SKIP() << "skipped: no CUDA device to synchronise"; }
  constexpr std::size_t MiB = std::size_t{1} << 20;
  rmm::test::new_delete_resource up;
  rmm::mr::limiting_resource_adaptor limited{up, 8 * MiB};
  rmm::mr::pool_memory_resource pool{limited, MiB, 2 * MiB};
  // 1500 KiB does not fit in the 1 MiB left: the free initial chunk goes back first.
  void* a = pool.allocate(default_stream(), 1500 * 1024);
  EXPECT_EQ(pool.pool_size(), 1536000u);
  EXPECT_EQ(limited.get_allocated_bytes(), 1536000u);
  expect_throws_exactly<rmm::out_of_memory>([&] { (void)pool.allocate(default_stream(), 1500 * 1024); }, "");
  EXPECT_EQ(pool.pool_size(), 1536000u);
  pool.deallocate(default_stream(), a, 1500 * 1024);
}

TEST(AdaptorsAsRmm, PoolSizeArgumentsAsRmm)
{
  rmm::test::new_delete_resource up;
  expect_throws_exactly<rmm::logic_error>([&] { rmm::mr::pool_memory_resource{up, 1000}; },
                                          "Error, Initial pool size required to be a multiple of 256 bytes");
  expect_throws_exactly<rmm::logic_error>([&] { rmm::mr::pool_memory_resource{up, 0, 1000}; },
                                          "Error, Maximum pool size required to be a multiple of 256 bytes");
  expect_throws_exactly<rmm::logic_error>([&] { rmm::mr::pool_memory_resource{up, 4096, 2048}; },
                                          "Initial pool size exceeds the maximum pool size!");
  up.s->fail_next = 1;
  expect_throws_exactly<rmm::out_of_memory>([&] { rmm::mr::pool_memory_resource{up, 4096}; }, "");
  EXPECT_EQ(up.s->outstanding, 0);
}

}  // namespace
