// The deprecated stream names of RMM 26.10 (rmm::cuda_stream_view, the cuda_stream_default/legacy/
// per_thread constants, cuda_stream::view()) still work. They are used here with the deprecation
// warning off, as code that has not moved to cuda::stream_ref yet does. No GPU: no stream is made.
#include <rmm/cuda_stream.hpp>
#include <rmm/cuda_stream_view.hpp>

#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

#include <gtest/gtest.h>

#include <sstream>
#include <type_traits>

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

namespace {

// As in RMM 26.10 the constants are cuda::stream_refs, not cuda_stream_views.
static_assert(std::is_same_v<decltype(rmm::cuda_stream_default), cuda::stream_ref const>);
static_assert(std::is_same_v<decltype(rmm::cuda_stream_legacy), cuda::stream_ref const>);
static_assert(std::is_same_v<decltype(rmm::cuda_stream_per_thread), cuda::stream_ref const>);
static_assert(!std::is_constructible_v<rmm::cuda_stream_view, int>);
static_assert(!std::is_constructible_v<rmm::cuda_stream_view, std::nullptr_t>);
static_assert(std::is_convertible_v<rmm::cuda_stream_view, cuda::stream_ref>);
static_assert(std::is_convertible_v<cuda::stream_ref, rmm::cuda_stream_view>);
static_assert(std::is_convertible_v<rmm::cuda_stream const&, rmm::cuda_stream_view>);

TEST(StreamView, TheConstantsNameTheirStreams)
{
  EXPECT_EQ(rmm::cuda_stream_default.get(), cudaStream_t{nullptr});
  EXPECT_EQ(rmm::cuda_stream_legacy.get(), cudaStreamLegacy);
  EXPECT_EQ(rmm::cuda_stream_per_thread.get(), cudaStreamPerThread);
}

TEST(StreamView, ConvertsAndComparesWithStreamRef)
{
  rmm::cuda_stream_view const legacy{rmm::cuda_stream_legacy};
  EXPECT_EQ(legacy.value(), cudaStreamLegacy);
  EXPECT_TRUE(legacy.is_default());
  EXPECT_FALSE(legacy.is_per_thread_default());
  rmm::cuda_stream_view const per_thread{cudaStreamPerThread};
  EXPECT_TRUE(per_thread.is_per_thread_default());
  EXPECT_TRUE(per_thread == rmm::cuda_stream_per_thread);
  EXPECT_TRUE(rmm::cuda_stream_per_thread == per_thread);
  EXPECT_TRUE(per_thread != rmm::cuda_stream_legacy);
  EXPECT_TRUE(rmm::cuda_stream_view{} == rmm::cuda_stream_default);
  cuda::stream_ref const back = per_thread;
  EXPECT_EQ(back.get(), cudaStreamPerThread);
  std::ostringstream os;
  os << rmm::cuda_stream_view{};
  EXPECT_FALSE(os.str().empty());
}

}  // namespace

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
