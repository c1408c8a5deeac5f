// Out of memory from C++: inside Thrust algorithms (scratch memory refused by a limiting adaptor or
// by a pool at its maximum) it surfaces as rmm::out_of_memory with the numbers, and a
// failure_callback_resource_adaptor whose callback frees a cache makes the retry succeed. In every
// case the statistics stay exact and the resource keeps working.

#include "test_utils.hpp"

#include <rmm/cuda_stream.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/error.hpp>
#include <rmm/exec_policy.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/failure_callback_resource_adaptor.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/resource_ref.hpp>

#include <thrust/reduce.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/system/cpp/execution_policy.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace {

using rmm::test::default_stream;
using rmm::test::new_delete_resource;

/// The size in a limiting adaptor's "Requested bytes N" (0 if absent).
std::size_t requested_bytes(std::string const& what)
{
  std::string const key = "Requested bytes ";
  auto const at = what.find(key);
  return at == std::string::npos ? 0 : std::stoull(what.substr(at + key.size()));
}

/// The size in a pool's "failed to allocate X UNIT" (RMM's format_bytes; 0 if absent).
double pool_requested_bytes(std::string const& what)
{
  std::string const key = "failed to allocate ";
  auto const at = what.find(key);
  if (at == std::string::npos) { return 0; }
  std::size_t used = 0;
  double value     = std::stod(what.substr(at + key.size()), &used);
  auto const unit  = what.substr(at + key.size() + used + 1, 3);
  for (char const* u : {"KiB", "MiB", "GiB", "TiB"}) {
    value *= 1024;
    if (unit == u) { return value; }
  }
  return value / (1024.0 * 1024 * 1024 * 1024);
}

// ---------------------------------------------------------------------------------------------
// The failure callback frees a cache
// ---------------------------------------------------------------------------------------------

/// The application's cache: blocks it holds and can give up, oldest first.
struct cache {
  rmm::mr::statistics_resource_adaptor* stats;
  std::deque<void*> blocks;
  int calls{0};
};

/// Frees one cached block per call and asks for a retry; says no once the cache is empty.
bool free_one_cached_block(std::size_t, void* arg)
{
  auto* c = static_cast<cache*>(arg);
  ++c->calls;
  if (c->blocks.empty()) { return false; }
  c->stats->deallocate(default_stream(), c->blocks.front(), 2 * MiB);
  c->blocks.pop_front();
  return true;
}

TEST(OutOfMemory, FailureCallbackFreesACacheAndTheRetrySucceeds)
{
  new_delete_resource up;
  rmm::mr::pool_memory_resource pool{up, 8 * MiB, 8 * MiB};  // cannot grow
  rmm::mr::statistics_resource_adaptor stats{pool};
  cache c{&stats, {}, 0};
  rmm::mr::failure_callback_resource_adaptor<> retrying{stats, free_one_cached_block, &c};

  for (int i = 0; i < 4; ++i) { c.blocks.push_back(retrying.allocate(default_stream(), 2 * MiB)); }
  EXPECT_EQ(stats.get_bytes_counter().value, 8 << 20);

  // 3 MiB: the oldest cached block alone is too small; freeing its neighbour too coalesces 4 MiB.
  void* big = retrying.allocate(default_stream(), 3 * MiB);
  EXPECT_EQ(c.calls, 2);
  EXPECT_EQ(c.blocks.size(), 2u);
  auto bytes = stats.get_bytes_counter();
  auto count = stats.get_allocations_counter();
  EXPECT_EQ((std::vector<long>{bytes.value, bytes.peak, bytes.total}),
            (std::vector<long>{7 << 20, 8 << 20, 11 << 20}));
  EXPECT_EQ((std::vector<long>{count.value, count.peak, count.total}), (std::vector<long>{3, 4, 5}));

  // 8 MiB with 3 MiB still out: the cache empties, the callback says no, the error surfaces.
  try {
    (void)retrying.allocate(default_stream(), 8 * MiB);
    FAIL() << "expected rmm::out_of_memory";
  } catch (rmm::out_of_memory const& e) {
    EXPECT_NE(std::string{e.what()}.find("Maximum pool size exceeded (failed to allocate 8.000000 MiB): Not enough "
                                         "room to grow, current/max/try size = 8.000000 MiB, 8.000000 MiB, "
                                         "8.000000 MiB"),
              std::string::npos)
      << e.what();
  }
  EXPECT_EQ(c.calls, 5);
  EXPECT_TRUE(c.blocks.empty());
  bytes = stats.get_bytes_counter();
  count = stats.get_allocations_counter();
  EXPECT_EQ((std::vector<long>{bytes.value, bytes.peak, bytes.total}),
            (std::vector<long>{3 << 20, 8 << 20, 11 << 20}));
  EXPECT_EQ((std::vector<long>{count.value, count.peak, count.total}), (std::vector<long>{1, 4, 5}));

  // Still working: with everything back, the whole pool is one block again.
  retrying.deallocate(default_stream(), big, 3 * MiB);
  void* all = retrying.allocate(default_stream(), 8 * MiB);
  retrying.deallocate(default_stream(), all, 8 * MiB);
  EXPECT_EQ(c.calls, 5);
  EXPECT_EQ(stats.get_bytes_counter().value, 0);
  EXPECT_EQ(stats.get_allocations_counter().total, 6);
  EXPECT_EQ(pool.pool_size(), 8 * MiB);
}

// ---------------------------------------------------------------------------------------------
// Thrust on the host: the same allocation path (an RMM resource behind Thrust's allocator)
// ---------------------------------------------------------------------------------------------

/// Scratch memory for Thrust's host backend from an RMM resource (host memory here).
struct host_scratch {
  using value_type = char;
  rmm::device_async_resource_ref mr;
  char* allocate(std::size_t n) { return static_cast<char*>(mr.allocate(default_stream(), n, 256)); }
  void deallocate(char* p, std::size_t n) noexcept { mr.deallocate(default_stream(), p, n, 256); }
};

TEST(OutOfMemory, ThrustOnTheHostSurfacesTheLimitWithTheNumbers)
{
  new_delete_resource up;
  rmm::mr::pool_memory_resource pool{up, 0};
  rmm::mr::statistics_resource_adaptor stats{pool};
  rmm::mr::limiting_resource_adaptor limit{stats, 64 * 1024};
  std::vector<int> v(100'000);
  for (std::size_t i = 0; i < v.size(); ++i) { v[i] = static_cast<int>(v.size() - i); }

  host_scratch limited{limit};
  try {
    thrust::sort(thrust::cpp::par(limited), v.begin(), v.end());
    FAIL() << "expected rmm::out_of_memory";
  } catch (rmm::out_of_memory const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("Exceeded memory limit 65536; Allocated bytes 0; Requested bytes "), std::string::npos) << what;
    EXPECT_GE(requested_bytes(what), v.size() * sizeof(int)) << what;
  }
  EXPECT_EQ(limit.get_allocated_bytes(), 0u);
  EXPECT_EQ(stats.get_bytes_counter().value, 0);
  EXPECT_EQ(stats.get_allocations_counter().total, 0) << "the refused request reached nothing below";

  // Still working: the same resources without the limit sort the data.
  host_scratch unlimited{stats};
  thrust::sort(thrust::cpp::par(unlimited), v.begin(), v.end());
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  EXPECT_EQ(v.front(), 1);
  EXPECT_GT(stats.get_allocations_counter().total, 0);
  EXPECT_EQ(stats.get_bytes_counter().value, 0);
  EXPECT_EQ(stats.get_allocations_counter().value, 0);
}

// ---------------------------------------------------------------------------------------------
// Thrust on the device, through rmm::exec_policy
// ---------------------------------------------------------------------------------------------

class ThrustOutOfMemory : public ::testing::Test {
 protected:
  void SetUp() override { RMM_SKIP_WITHOUT_GPU(); }
};

TEST_F(ThrustOutOfMemory, ScratchRefusedByALimitingAdaptor)
{
  rmm::cuda_stream stream;
  rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 64 * MiB};
  rmm::mr::statistics_resource_adaptor stats{pool};
  rmm::mr::limiting_resource_adaptor limit{stats, 1024};
  std::size_t const n = std::size_t{1} << 20;
  rmm::device_uvector<int> v(n, stream, pool);  // the data itself is not limited
  thrust::sequence(rmm::exec_policy(stream, pool), v.begin(), v.end(), static_cast<int>(n), -1);

  try {
    thrust::sort(rmm::exec_policy(stream, limit), v.begin(), v.end());
    FAIL() << "expected rmm::out_of_memory";
  } catch (rmm::out_of_memory const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("Exceeded memory limit 1024; Allocated bytes 0; Requested bytes "), std::string::npos) << what;
    EXPECT_GT(requested_bytes(what), 1024u) << what;
  }
  try {
    (void)thrust::reduce(rmm::exec_policy(stream, rmm::mr::limiting_resource_adaptor{stats, 0}), v.begin(), v.end());
    FAIL() << "expected rmm::out_of_memory";
  } catch (rmm::out_of_memory const& e) {
    EXPECT_NE(std::string{e.what()}.find("Exceeded memory limit 0; "), std::string::npos) << e.what();
  }
  stream.synchronize();
  EXPECT_EQ(limit.get_allocated_bytes(), 0u);
  EXPECT_EQ(stats.get_bytes_counter().value, 0);
  EXPECT_EQ(stats.get_allocations_counter().value, 0);
  EXPECT_EQ(stats.get_allocations_counter().total, 0) << "refused requests reached nothing below";

  // Still working: the scratch now comes through the statistics adaptor, exactly counted.
  thrust::sort(rmm::exec_policy(stream, stats), v.begin(), v.end());
  EXPECT_TRUE(thrust::is_sorted(rmm::exec_policy(stream, stats), v.begin(), v.end()));
  EXPECT_EQ(v.front_element(stream), 1);
  EXPECT_GT(stats.get_allocations_counter().total, 0);
  EXPECT_EQ(stats.get_bytes_counter().value, 0);
  EXPECT_EQ(stats.get_allocations_counter().value, 0);
}

TEST_F(ThrustOutOfMemory, ScratchRefusedByAPoolAtItsMaximum)
{
  rmm::cuda_stream stream;
  rmm::mr::cuda_memory_resource cuda;
  std::size_t const n = std::size_t{1} << 22;  // 16 MiB of keys; sorting them needs as much scratch
  rmm::device_uvector<int> v(n, stream, cuda);
  thrust::sequence(rmm::exec_policy(stream, cuda), v.begin(), v.end(), static_cast<int>(n), -1);
  rmm::mr::pool_memory_resource small{cuda, 0, MiB};
  rmm::mr::statistics_resource_adaptor stats{small};

  try {
    thrust::sort(rmm::exec_policy(stream, stats), v.begin(), v.end());
    FAIL() << "expected rmm::out_of_memory";
  } catch (rmm::out_of_memory const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("Not enough room to grow, current/max/try size = "), std::string::npos) << what;
    EXPECT_NE(what.find(", 1024.000000 KiB, "), std::string::npos) << what;
    EXPECT_GT(pool_requested_bytes(what), static_cast<double>(MiB)) << what;
  }
  stream.synchronize();
  EXPECT_EQ(stats.get_bytes_counter().value, 0);
  EXPECT_EQ(stats.get_allocations_counter().value, 0);
  EXPECT_LE(small.pool_size(), MiB);

  // Still working: a small sort fits in the pool.
  rmm::device_uvector<int> w(1000, stream, cuda);
  thrust::sequence(rmm::exec_policy(stream, stats), w.begin(), w.end(), 1000, -1);
  thrust::sort(rmm::exec_policy(stream, stats), w.begin(), w.end());
  EXPECT_EQ(w.front_element(stream), 1);
  EXPECT_EQ(stats.get_bytes_counter().value, 0);
  EXPECT_EQ(stats.get_allocations_counter().value, 0);
}

}  // namespace
