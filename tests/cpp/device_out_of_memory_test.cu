// The device's own out-of-memory, from C++: more bytes than the device has, SIZE_MAX and 2^50
// bytes reach the driver, which refuses them. These are the C++ tests that make a CUDA call fail
// on purpose (tests/gpu/failing_on_purpose.txt lists the DeviceOutOfMemory suite; sanitizer runs
// take it apart, with API error reporting off). Every resource keeps working afterwards.

#include "test_utils.hpp"

#include <rmm/error.hpp>
#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pinned_host_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <typeinfo>

namespace {

using rmm::test::default_stream;
using rmm::test::device_keeps_working;
using rmm::test::expect_throws_exactly;

/// SIZE_MAX bytes: the driver's out-of-memory naming the call. Not for managed memory: asking for
/// more managed memory than the device has can hang the GPU.
template <class R>
void max_size_is_the_drivers_out_of_memory(R mr, std::string const& call)
{
  expect_throws_exactly<rmm::out_of_memory>(
    [&] { (void)mr.allocate(default_stream(), std::numeric_limits<std::size_t>::max()); },
    "cannot allocate 18446744073709551615 bytes (" + call + " returned CUDA_ERROR_OUT_OF_MEMORY)");
  device_keeps_working(mr);
}

TEST(DeviceOutOfMemory, MaxSizeFromEachCudaResource)
{
  RMM_SKIP_WITHOUT_GPU();
  max_size_is_the_drivers_out_of_memory(rmm::mr::cuda_memory_resource{}, "cuMemAlloc");
  max_size_is_the_drivers_out_of_memory(rmm::mr::pinned_host_memory_resource{}, "cuMemHostAlloc");
  max_size_is_the_drivers_out_of_memory(rmm::mr::cuda_async_memory_resource{}, "cuMemAllocFromPoolAsync");
}

TEST(DeviceOutOfMemory, MoreThanTheDeviceHas)
{
  RMM_SKIP_WITHOUT_GPU();
  std::size_t const bytes = rmm::available_device_memory().second + 256;
  std::string const size  = "cannot allocate " + std::to_string(bytes) + " bytes (";
  rmm::mr::cuda_memory_resource cuda;
  expect_throws_exactly<rmm::out_of_memory>([&] { (void)cuda.allocate(default_stream(), bytes); },
                                            size + "cuMemAlloc returned CUDA_ERROR_OUT_OF_MEMORY)");
  device_keeps_working(cuda);
  rmm::mr::cuda_async_memory_resource async;
  expect_throws_exactly<rmm::out_of_memory>(
    [&] { (void)async.allocate(default_stream(), bytes); },
    size + "cuMemAllocFromPoolAsync returned CUDA_ERROR_OUT_OF_MEMORY)");
  device_keeps_working(async);
  rmm::mr::pool_memory_resource pool{cuda, 16 * MiB};
  rmm::mr::statistics_resource_adaptor stats{pool};
  expect_throws_exactly<rmm::out_of_memory>(
    [&] { (void)stats.allocate(default_stream(), bytes); },
    // RMM's words: the pool quotes the upstream's refusal of the size it tried last.
    "): std::bad_alloc: out_of_memory: out of memory: " + size + "cuMemAlloc returned CUDA_ERROR_OUT_OF_MEMORY)");
  EXPECT_EQ(stats.get_allocations_counter().total, 0);
  EXPECT_EQ(pool.pool_size(), 16 * MiB);
  device_keeps_working(stats);
}

TEST(DeviceOutOfMemory, HugeAllocationFromCudaAndAPoolOverIt)
{
  RMM_SKIP_WITHOUT_GPU();
  rmm::mr::cuda_memory_resource cuda;
  EXPECT_THROW((void)cuda.allocate_sync(std::size_t{1} << 50), rmm::out_of_memory);
  rmm::mr::pool_memory_resource pool{cuda, 0, 64 * MiB};
  try {
    (void)pool.allocate(default_stream(), 128 * MiB);
    FAIL() << "expected rmm::out_of_memory";
  } catch (rmm::out_of_memory const& e) {
    // RMM's text, sizes as its format_bytes writes them.
    EXPECT_NE(std::string{e.what()}.find("Maximum pool size exceeded (failed to allocate 128.000000 MiB)"),
              std::string::npos)
      << e.what();
  }
}

}  // namespace
