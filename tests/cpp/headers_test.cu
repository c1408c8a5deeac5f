// The small RMM 26.10 headers: version macros, process_is_exiting, the aligned host allocation
// helpers, format helpers, default streams, NVTX ranges (a no-op here without NVTX3 headers) and
// RMM_LOGGING_ASSERT.
#include <rmm/detail/aligned.hpp>
#include <rmm/detail/cuda_stream.hpp>
#include <rmm/detail/format.hpp>
#include <rmm/detail/logging_assert.hpp>
#include <rmm/detail/nvtx/ranges.hpp>
#include <rmm/detail/runtime_shutdown.hpp>
#include <rmm/process_is_exiting.hpp>
#include <rmm/version_config.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

static_assert(RMM_VERSION_MAJOR == 26 && RMM_VERSION_MINOR == 10 && RMM_VERSION_PATCH == 0);
#if !RMM_VERSION_EQ(26, 10, 0) || !RMM_VERSION_GT(26, 8, 5) || !RMM_VERSION_LT(26, 10, 1) || \
  RMM_VERSION_GT(26, 10, 0) || RMM_VERSION_LT(26, 10, 0) || !RMM_VERSION_LT(27, 0, 0)
#error "RMM_VERSION_* comparisons are wrong"
#endif

TEST(Headers, VersionString) { EXPECT_STREQ(RMM_VERSION, "26.10.0"); }

TEST(Headers, ProcessIsNotExitingDuringTests)
{
  rmm::detail::register_process_exit_hook();
  rmm::detail::register_process_exit_hook();  // once is enough; a second call is harmless
  EXPECT_FALSE(rmm::process_is_exiting());
}

TEST(Headers, AlignedHostAllocationRoundTrips)
{
  std::vector<std::pair<void*, std::size_t>> raw;
  auto alloc = [&](std::size_t n) {
    void* p = std::malloc(n);
    raw.emplace_back(p, n);
    return p;
  };
  for (std::size_t alignment : {std::size_t{8}, std::size_t{64}, std::size_t{256}, std::size_t{4096}}) {
    for (std::size_t bytes : {std::size_t{1}, std::size_t{100}, std::size_t{5000}}) {
      void* p = rmm::detail::aligned_host_allocate(bytes, alignment, alloc);
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignment, 0u);
      auto const [base, size] = raw.back();
      auto* const first       = static_cast<char*>(base);
      EXPECT_GE(static_cast<char*>(p), first + sizeof(std::ptrdiff_t));
      EXPECT_LE(static_cast<char*>(p) + bytes, first + size);
      void* freed = nullptr;
      rmm::detail::aligned_host_deallocate(p, bytes, alignment, [&](void* q) { freed = q; });
      EXPECT_EQ(freed, base);
      std::free(base);
    }
  }
  bool called = false;
  rmm::detail::aligned_host_deallocate(nullptr, 0, 8, [&](void*) { called = true; });
  EXPECT_FALSE(called);
}

TEST(Headers, FormatBytesAndStreams)
{
  EXPECT_EQ(rmm::detail::format_bytes(0), "0.000000 B");
  EXPECT_EQ(rmm::detail::format_bytes(1024), "1024.000000 B");
  EXPECT_EQ(rmm::detail::format_bytes(1536), "1.500000 KiB");
  EXPECT_EQ(rmm::detail::format_bytes(std::size_t{3} << 30), "3.000000 GiB");
  EXPECT_EQ(rmm::detail::format_stream(cuda::stream_ref{reinterpret_cast<cudaStream_t>(0xabc0)}), "0xabc0");
}

TEST(Headers, DefaultStreams)
{
  EXPECT_TRUE(rmm::detail::is_default_stream(cuda::stream_ref{cudaStream_t{}}));
  EXPECT_TRUE(rmm::detail::is_default_stream(cuda::stream_ref{cudaStreamLegacy}));
  EXPECT_FALSE(rmm::detail::is_default_stream(cuda::stream_ref{reinterpret_cast<cudaStream_t>(0x1000)}));
}

int ranged() noexcept
{
  RMM_FUNC_RANGE();
  return 3;
}

TEST(Headers, NvtxRangeMacroCompiles) { EXPECT_EQ(ranged(), 3); }

TEST(Headers, LoggingAssertPassesTrueExpressions)
{
  int evaluated = 0;
  RMM_LOGGING_ASSERT(++evaluated == 1);
#ifdef NDEBUG
  EXPECT_EQ(evaluated, 0);
#else
  EXPECT_EQ(evaluated, 1);
#endif
}

}  // namespace
