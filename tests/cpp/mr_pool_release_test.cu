// rmm::mr::pool_memory_resource::release() (an addition of rmm-rs): wholly free chunks go back to
// the upstream once every stream is synchronised, chunks with a live block stay, the pool keeps
// working. The upstream is host memory declared device accessible (new_delete_resource), which
// counts its outstanding allocations; the pool orders it with CUDA events, so the give-back needs
// a GPU (a synchronisation), and without one nothing goes back.
#include "test_utils.hpp"

#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>

#include <cstddef>
#include <utility>

namespace rmm::test {
namespace {

using rmm::mr::pool_memory_resource;

TEST(PoolRelease, WhollyFreeChunksGoBackAndAChunkWithALiveBlockStays)
{
  RMM_SKIP_WITHOUT_GPU();
  new_delete_resource upstream{};
  pool_memory_resource mr{upstream, 0};
  // Three chunks from an empty pool without a maximum: each as large as its request.
  void* a = mr.allocate_sync(MiB);
  void* b = mr.allocate_sync(1000);
  void* c = mr.allocate_sync(3 * MiB);
  ASSERT_EQ(mr.pool_size(), 5 * MiB);
  ASSERT_EQ(upstream.s->outstanding.load(), 3);
  mr.deallocate_sync(a, MiB);
  mr.deallocate_sync(c, 3 * MiB);

  EXPECT_EQ(mr.release(), 4 * MiB);
  EXPECT_EQ(mr.pool_size(), MiB);
  EXPECT_EQ(upstream.s->outstanding.load(), 1) << "the chunk of the live block stays";
  EXPECT_EQ(mr.release(), 0u) << "nothing more is wholly free";

  // The pool keeps working, and gives everything back once all is free.
  void* d = mr.allocate_sync(2 * MiB);
  EXPECT_EQ(upstream.s->outstanding.load(), 2);
  mr.deallocate_sync(d, 2 * MiB);
  mr.deallocate_sync(b, 1000);
  EXPECT_EQ(mr.release(), 3 * MiB);
  EXPECT_EQ(mr.pool_size(), 0u);
  EXPECT_EQ(upstream.s->outstanding.load(), 0);
}

TEST(PoolRelease, ADevicePoolGivesBackAfterTheWorkOnItsBlocks)
{
  RMM_SKIP_WITHOUT_GPU();
  pool_memory_resource mr{rmm::mr::cuda_memory_resource{}, 0};
  cudaStream_t s{};
  RMM_CUDA_TRY(cudaStreamCreate(&s));
  auto const bytes = 64 * MiB;
  void* p          = mr.allocate(cuda::stream_ref{s}, bytes);
  for (int i = 0; i < 100; ++i) {
    RMM_CUDA_TRY(cudaMemsetAsync(p, i, bytes, s));
  }
  mr.deallocate(cuda::stream_ref{s}, p, bytes);
  EXPECT_EQ(mr.release(), bytes);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess) << "the chunk went back before the work on it ended";
  EXPECT_EQ(mr.pool_size(), 0u);
  device_keeps_working(mr);
  RMM_CUDA_TRY(cudaStreamDestroy(s));
}

TEST(PoolRelease, WithoutADriverNothingGoesBack)
{
  if (rmm::get_num_cuda_devices() != 0) { GTEST_SKIP() << "skipped: a CUDA device is present"; }
  new_delete_resource upstream{};
  pool_memory_resource mr{upstream, MiB};
  void* p = mr.allocate_sync(MiB);
  mr.deallocate_sync(p, MiB);
  // No stream can be synchronised: the free block may, for all the pool knows, still be in use.
  EXPECT_EQ(mr.release(), 0u);
  EXPECT_EQ(mr.pool_size(), MiB);
  EXPECT_EQ(upstream.s->outstanding.load(), 1);
  void* q = mr.allocate_sync(MiB);
  EXPECT_EQ(q, p) << "the kept chunk still serves";
  mr.deallocate_sync(q, MiB);
}

TEST(PoolRelease, AMovedFromPoolRefusesToRelease)
{
  pool_memory_resource mr{new_delete_resource{}, 0};
  pool_memory_resource moved{std::move(mr)};
  EXPECT_THROW(mr.release(), rmm::logic_error);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(moved.release(), 0u);
}

}  // namespace
}  // namespace rmm::test
