// rmm::device_buffer refuses a copy source the driver would read as unmapped host memory (and crash
// on) with rmm::logic_error, leaving nothing allocated; device, host and pinned sources still copy.

#include "test_utils.hpp"

#include <rmm/cuda_stream.hpp>
#include <rmm/device_buffer.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

// The check itself needs no GPU: without a driver every address is host memory, read or not.
TEST(DeviceBufferSource, TheCheckRefusesUnmappedMemoryAndAcceptsReadableMemory)
{
  char reason[256];
  auto const bad = rmm_rs_check_copy_source(8, 16, reason, sizeof reason);
  ASSERT_GT(bad, 0u);
  EXPECT_NE(std::string(reason, bad).find("0x8"), std::string::npos) << std::string(reason, bad);
  std::vector<int> host(100, 7);
  EXPECT_EQ(rmm_rs_check_copy_source(reinterpret_cast<std::uintptr_t>(host.data()), 400, reason, sizeof reason), 0u);
  // A page mapped without access, after a readable one: the range's end is refused.
  auto const page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* map = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  ASSERT_EQ(mprotect(static_cast<char*>(map) + page, page, PROT_NONE), 0);
  auto const addr = reinterpret_cast<std::uintptr_t>(map);
  EXPECT_EQ(rmm_rs_check_copy_source(addr, page, reason, sizeof reason), 0u);
  EXPECT_GT(rmm_rs_check_copy_source(addr, 2 * page, reason, sizeof reason), 0u);
  // A message longer than the room is cut, never overrun.
  EXPECT_EQ(rmm_rs_check_copy_source(8, 16, reason, 4), 4u);
  munmap(map, 2 * page);
}

TEST(DeviceBufferSource, ABadSourceIsALogicErrorAndLeavesNothingAllocated)
{
  RMM_SKIP_WITHOUT_GPU();
  rmm::cuda_stream stream;
  rmm::mr::cuda_memory_resource cuda;
  rmm::mr::statistics_resource_adaptor stats{cuda};
  try {
    rmm::device_buffer buf(reinterpret_cast<void const*>(8), 16, stream, stats);
    FAIL() << "a copy from address 0x8 was accepted";
  } catch (rmm::logic_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("device_buffer"), std::string::npos) << e.what();
  }
  EXPECT_EQ(stats.get_bytes_counter().value, 0);
  // Host, pinned and device sources still copy.
  std::vector<int> host(256, 3);
  rmm::device_buffer from_host(host.data(), host.size() * sizeof(int), stream, stats);
  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 1024), cudaSuccess);
  rmm::device_buffer from_pinned(pinned, 1024, stream, stats);
  rmm::device_buffer from_device(from_host.data(), from_host.size(), stream, stats);
  std::vector<int> back(256, 0);
  ASSERT_EQ(cudaMemcpyAsync(back.data(), from_device.data(), from_device.size(), cudaMemcpyDefault, stream.value()),
            cudaSuccess);
  stream.synchronize();
  EXPECT_EQ(back, host);
  cudaFreeHost(pinned);
}

}  // namespace
