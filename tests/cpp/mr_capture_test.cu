// Allocation during CUDA stream capture through the C++ pools (begin_capture and the members
// after it, an addition of rmm-rs): their errors on any machine; on the GPU, a graph captured
// while allocating, setting and freeing through each pool, replayed with eager allocations on
// other streams in between, then its private memory released.
#include "mr_conformance.hpp"
#include "test_utils.hpp"

#include <rmm/cuda_device.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/virtual_pool_memory_resource.hpp>

#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rmm::test {
namespace {

constexpr int REPLAYS       = 100;
constexpr std::size_t ALIGN = 256;

/// Runs `f` and expects one of the exceptions begin_capture() throws for a stream that is not
/// capturing: rmm::logic_error (or rmm::cuda_error where there is no driver to ask).
template <class F>
void expect_not_capturing_error(F&& f)
{
  try {
    f();
    ADD_FAILURE() << "begin_capture accepted a stream that is not capturing";
  } catch (rmm::logic_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("not being captured"), std::string::npos) << e.what();
  } catch (rmm::cuda_error const& e) {
    EXPECT_EQ(rmm::get_num_cuda_devices(), 0) << "a cuda_error with a device: " << e.what();
  }
}

// --- Any machine ---------------------------------------------------------------------------------

TEST(PoolCapture, APoolWithoutCapturesAnswersAndRefusesMisuse)
{
  auto pool = host_pool();
  EXPECT_TRUE(pool.captures().empty());
  EXPECT_EQ(pool.capture_pool_size(1), 0u);
  EXPECT_NO_THROW(pool.end_capture(cuda::stream_ref{cudaStream_t{}})) << "a stream never marked is left alone";
  EXPECT_THROW(pool.release_capture(42), rmm::logic_error);
  if (rmm::get_num_cuda_devices() > 0) {
    expect_not_capturing_error([&] { (void)pool.begin_capture(cuda::stream_ref{cudaStream_t{}}); });
  }
  EXPECT_TRUE(pool.captures().empty()) << "a refused call changes nothing";
}

TEST(PoolCapture, AMovedFromPoolIsALogicError)
{
  auto pool  = host_pool();
  auto moved = std::move(pool);
  EXPECT_THROW((void)pool.captures(), rmm::logic_error);       // NOLINT(bugprone-use-after-move)
  EXPECT_THROW(pool.release_capture(1), rmm::logic_error);     // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(moved.captures().empty());
}

// --- GPU -----------------------------------------------------------------------------------------

/// A stream of its own for the length of a test.
struct owned_stream {
  cudaStream_t s{};
  owned_stream() { EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess); }
  ~owned_stream() { cudaStreamDestroy(s); }
  owned_stream(owned_stream const&)            = delete;
  owned_stream& operator=(owned_stream const&) = delete;
  [[nodiscard]] cuda::stream_ref ref() const { return cuda::stream_ref{s}; }
};

/// `n` bytes at `p` read back to the host (after the stream's work).
std::vector<unsigned char> read_back(void const* p, std::size_t n, cudaStream_t s)
{
  std::vector<unsigned char> host(n);
  EXPECT_EQ(cudaMemcpyAsync(host.data(), p, n, cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  return host;
}

/// Captures, in `mode`: allocate `a`, set it, allocate `b`, copy `a` into `b` and `b` into `out`,
/// free both, allocate `c` (the capture's memory again), set it, copy it into `out2`, free it.
/// Replays the graph REPLAYS times on another stream with eager allocations on two more streams
/// in between, which must never overlap the capture's blocks, checking both outputs each time;
/// then releases the capture's memory.
template <class Pool>
void capture_and_replay(Pool& pool, cudaStreamCaptureMode mode)
{
  std::size_t const n = 3 * MiB + 4096;
  owned_stream cs, launch, eager0, eager1;
  void* out  = pool.allocate(launch.ref(), n, ALIGN);
  void* out2 = pool.allocate(launch.ref(), 4096, ALIGN);
  ASSERT_EQ(cudaStreamSynchronize(launch.s), cudaSuccess);

  ASSERT_EQ(cudaStreamBeginCapture(cs.s, mode), cudaSuccess);
  auto const id = pool.begin_capture(cuda::stream_ref{cs.s});
  void* a       = pool.allocate(cs.ref(), n, ALIGN);
  ASSERT_EQ(cudaMemsetAsync(a, 0x5a, n, cs.s), cudaSuccess);
  void* b = pool.allocate(cs.ref(), n, ALIGN);
  ASSERT_EQ(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, cs.s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(out, b, n, cudaMemcpyDeviceToDevice, cs.s), cudaSuccess);
  pool.deallocate(cs.ref(), a, n, ALIGN);
  pool.deallocate(cs.ref(), b, n, ALIGN);
  void* c = pool.allocate(cs.ref(), 4096, ALIGN);
  ASSERT_EQ(cudaMemsetAsync(c, 0x33, 4096, cs.s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(out2, c, 4096, cudaMemcpyDeviceToDevice, cs.s), cudaSuccess);
  pool.deallocate(cs.ref(), c, 4096, ALIGN);
  cudaGraph_t graph{};
  ASSERT_EQ(cudaStreamEndCapture(cs.s, &graph), cudaSuccess);
  pool.end_capture(cuda::stream_ref{cs.s});

  auto const ids = pool.captures();
  EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end());
  EXPECT_GE(pool.capture_pool_size(id), 2 * n) << "a and b were live together";

  cudaGraphExec_t exec{};
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  auto const in_capture = [&](void* p, std::size_t bytes) {
    auto const x = reinterpret_cast<std::uintptr_t>(p);
    for (void* q : {a, b, c}) {
      auto const y = reinterpret_cast<std::uintptr_t>(q);
      if (x < y + n && y < x + bytes) { return true; }
    }
    return false;
  };
  for (int i = 0; i < REPLAYS; ++i) {
    ASSERT_EQ(cudaMemsetAsync(out, 0, n, launch.s), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(out2, 0, 4096, launch.s), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, launch.s), cudaSuccess);
    int k = 0;
    for (owned_stream const* s : {&eager0, &eager1}) {
      std::size_t const bytes = (1 + (i * 7 + k++ * 3) % 5) * MiB;
      void* p                 = pool.allocate(s->ref(), bytes, ALIGN);
      ASSERT_FALSE(in_capture(p, bytes)) << "replay " << i << ": an eager block overlaps the capture's";
      ASSERT_EQ(cudaMemsetAsync(p, i % 251, bytes, s->s), cudaSuccess);
      pool.deallocate(s->ref(), p, bytes, ALIGN);
    }
    auto const got  = read_back(out, n, launch.s);
    auto const got2 = read_back(out2, 4096, launch.s);
    ASSERT_TRUE(std::all_of(got.begin(), got.end(), [](unsigned char x) { return x == 0x5a; }))
      << "replay " << i << ": out";
    ASSERT_TRUE(std::all_of(got2.begin(), got2.end(), [](unsigned char x) { return x == 0x33; }))
      << "replay " << i << ": out2";
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);

  pool.release_capture(id);
  auto const left = pool.captures();
  EXPECT_EQ(std::find(left.begin(), left.end(), id), left.end());
  EXPECT_EQ(pool.capture_pool_size(id), 0u);
  EXPECT_THROW(pool.release_capture(id), rmm::logic_error) << "a capture is released once";
  pool.deallocate(launch.ref(), out, n, ALIGN);
  pool.deallocate(launch.ref(), out2, 4096, ALIGN);
  ASSERT_EQ(cudaStreamSynchronize(launch.s), cudaSuccess);
}

constexpr cudaStreamCaptureMode MODES[] = {
  cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed};

TEST(PoolCaptureGpu, APoolGraphReplaysWithEagerWorkBetween)
{
  RMM_SKIP_WITHOUT_GPU();
  for (auto mode : MODES) {
    rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 16 * MiB};
    capture_and_replay(pool, mode);
  }
}

TEST(PoolCaptureGpu, AVirtualPoolGraphReplaysWithEagerWorkBetween)
{
  RMM_SKIP_WITHOUT_GPU();
  for (auto mode : MODES) {
    std::optional<rmm::mr::virtual_pool_memory_resource> pool;
    try {
      pool.emplace(std::size_t{4} << 30);
    } catch (rmm::logic_error const& e) {
      GTEST_SKIP() << "skipped: " << e.what();
    }
    capture_and_replay(*pool, mode);
  }
}

TEST(PoolCaptureGpu, BeginCaptureOnAStreamNotCapturingIsALogicError)
{
  RMM_SKIP_WITHOUT_GPU();
  rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 0};
  owned_stream s;
  expect_not_capturing_error([&] { (void)pool.begin_capture(cuda::stream_ref{s.s}); });
  EXPECT_TRUE(pool.captures().empty());
}

TEST(PoolCaptureGpu, AReleaseWithLiveBlocksOrAMarkedStreamIsRefused)
{
  RMM_SKIP_WITHOUT_GPU();
  rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 0};
  owned_stream cs;
  ASSERT_EQ(cudaStreamBeginCapture(cs.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  auto const id = pool.begin_capture(cuda::stream_ref{cs.s});
  EXPECT_THROW(pool.release_capture(id), rmm::logic_error) << "still marked";
  void* p = pool.allocate(cs.ref(), MiB, ALIGN);
  cudaGraph_t graph{};
  ASSERT_EQ(cudaStreamEndCapture(cs.s, &graph), cudaSuccess);
  pool.end_capture(cuda::stream_ref{cs.s});
  EXPECT_THROW(pool.release_capture(id), rmm::logic_error) << "a live block";
  EXPECT_GE(pool.capture_pool_size(id), MiB) << "a refused release keeps the memory";
  pool.deallocate(cs.ref(), p, MiB, ALIGN);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_NO_THROW(pool.release_capture(id));
}

}  // namespace
}  // namespace rmm::test
