// The conformance suite (mr_conformance.hpp) for `rmm::mr::arena_memory_resource` over host memory
// and over `cuda_memory_resource`, the arena's constructor and exceptions, and a block freed after
// a defragmentation moved its superblock to another stream's arena.
#include "mr_conformance.hpp"

#include <rmm/error.hpp>
#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <thread>

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

// RMM's own scenario (its arena tests' PerThreadToStreamDealloc), with a second thread's
// per-thread default stream as the other stream, so that it runs without a GPU too.
TEST(ArenaMemoryResource, APerThreadStreamBlockIsFreedAfterItsSuperblockMoved)
{
  constexpr std::size_t small = std::size_t{32} << 10;
  rmm::mr::arena_memory_resource mr{new_delete_resource{}, 2 * MiB};
  cuda::stream_ref const per_thread{cudaStreamPerThread};
  cuda::stream_ref const legacy{cudaStream_t{}};
  // This thread's per-thread default stream takes one superblock and keeps a block in it.
  void* thread_block = mr.allocate(per_thread, 256, 256);
  // Another thread's takes the other superblock and keeps it, empty.
  std::thread{[&] {
    void* p = mr.allocate(per_thread, small, 256);
    mr.deallocate(per_thread, p, small, 256);
  }}.join();
  // No superblock is left: a defragmentation gives both back, and the legacy default stream takes
  // the empty one whole, then the one with the live block for its free part.
  void* whole = mr.allocate(legacy, MiB, 256);
  void* part  = mr.allocate(legacy, small, 256);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(part) / MiB, reinterpret_cast<std::uintptr_t>(thread_block) / MiB);
  mr.deallocate(per_thread, thread_block, 256, 256);
  mr.deallocate(legacy, whole, MiB, 256);
  mr.deallocate(legacy, part, small, 256);
  // Every byte merged again: the whole arena serves one request.
  void* all = mr.allocate_sync(2 * MiB);
  mr.deallocate_sync(all, 2 * MiB);
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
