// device_buffer, device_uvector and device_scalar: sizes, growth, copies across streams, element
// access. Memory from a Rust pool (through a statistics adaptor, to check it is all given back).

#include "test_utils.hpp"

#include <rmm/cuda_stream.hpp>
#include <rmm/device_buffer.hpp>
#include <rmm/device_scalar.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <limits>
#include <numeric>
#include <optional>
#include <vector>

namespace {

class Containers : public ::testing::Test {
 protected:
  void SetUp() override
  {
    RMM_SKIP_WITHOUT_GPU();
    stream_.emplace();
    other_.emplace(rmm::cuda_stream::flags::non_blocking);
    pool_.emplace(rmm::mr::cuda_memory_resource{}, std::size_t{16} << 20);
    stats_.emplace(*pool_);
  }
  void TearDown() override
  {
    if (stats_) {
      EXPECT_EQ(stats_->get_bytes_counter().value, 0) << "a container leaked";
    }
  }
  rmm::mr::statistics_resource_adaptor& mr() { return *stats_; }

  std::optional<rmm::mr::pool_memory_resource> pool_;
  std::optional<rmm::mr::statistics_resource_adaptor> stats_;
  std::optional<rmm::cuda_stream> stream_;  // made in SetUp, after the GPU check
  std::optional<rmm::cuda_stream> other_;
};

std::vector<int> iota(std::size_t n)
{
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST_F(Containers, BufferAllocatesFromTheGivenResource)
{
  rmm::device_buffer buf(1000, *stream_, mr());
  EXPECT_EQ(buf.size(), 1000u);
  EXPECT_EQ(buf.capacity(), 1000u);
  EXPECT_NE(buf.data(), nullptr);
  EXPECT_EQ(buf.stream(), cuda::stream_ref{*stream_});
  EXPECT_EQ(mr().get_bytes_counter().value, 1000);
  EXPECT_TRUE(buf.memory_resource() == rmm::device_async_resource_ref{mr()});
  rmm::device_buffer empty(0, *stream_, mr());
  EXPECT_TRUE(empty.is_empty());
  EXPECT_EQ(empty.data(), nullptr);
}

TEST_F(Containers, BufferResizeReserveShrink)
{
  auto const host = iota(256);
  rmm::device_buffer buf(host.data(), host.size() * sizeof(int), *stream_, mr());
  buf.resize(100 * sizeof(int), *stream_);  // shrinking keeps the memory
  EXPECT_EQ(buf.size(), 100 * sizeof(int));
  EXPECT_EQ(buf.capacity(), 256 * sizeof(int));
  buf.reserve(1024 * sizeof(int), *stream_);  // growing capacity keeps the contents
  EXPECT_EQ(buf.capacity(), 1024 * sizeof(int));
  EXPECT_EQ(buf.size(), 100 * sizeof(int));
  buf.resize(2000 * sizeof(int), *stream_);  // past the capacity: reallocates to exactly that
  EXPECT_EQ(buf.capacity(), 2000 * sizeof(int));
  buf.resize(10 * sizeof(int), *stream_);
  buf.shrink_to_fit(*stream_);
  EXPECT_EQ(buf.capacity(), 10 * sizeof(int));
  std::vector<int> back(10);
  RMM_CUDA_TRY(cudaMemcpyAsync(back.data(), buf.data(), 10 * sizeof(int), cudaMemcpyDefault, stream_->value()));
  stream_->synchronize();
  EXPECT_EQ(back, iota(10));
  EXPECT_EQ(mr().get_bytes_counter().value, static_cast<long>(10 * sizeof(int)));
}

TEST_F(Containers, BufferCopyOnAnotherStreamAndMove)
{
  auto const host = iota(4096);
  rmm::device_buffer a(host.data(), host.size() * sizeof(int), *stream_, mr());
  stream_->synchronize();
  rmm::device_buffer b(a, *other_, mr());  // copy ordered on the other stream
  EXPECT_EQ(b.stream(), cuda::stream_ref{*other_});
  EXPECT_NE(a.data(), b.data());
  rmm::device_buffer c(std::move(b));
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(b.size(), 0u);
  std::vector<int> back(host.size());
  RMM_CUDA_TRY(cudaMemcpyAsync(back.data(), c.data(), c.size(), cudaMemcpyDefault, other_->value()));
  other_->synchronize();
  EXPECT_EQ(back, host);
  a = std::move(c);  // frees a's old memory
  EXPECT_EQ(mr().get_allocations_counter().value, 1);
}

TEST_F(Containers, UvectorElementAccess)
{
  rmm::device_uvector<int> v(100, *stream_, mr());
  EXPECT_EQ(v.size(), 100u);
  for (int i = 0; i < 100; ++i) { v.set_element_async(i, i, *stream_); stream_->synchronize(); }
  EXPECT_EQ(v.element(42, *stream_), 42);
  EXPECT_EQ(v.front_element(*stream_), 0);
  EXPECT_EQ(v.back_element(*stream_), 99);
  v.set_element(7, 700, *stream_);
  EXPECT_EQ(v.element(7, *stream_), 700);
  v.set_element_to_zero_async(7, *stream_);
  EXPECT_EQ(v.element(7, *stream_), 0);
  EXPECT_THROW(v.set_element(100, 1, *stream_), rmm::out_of_range);
  EXPECT_THROW((void)v.element(100, *stream_), rmm::out_of_range);
  EXPECT_EQ(v.end() - v.begin(), 100);
  cuda::std::span<int> s = v;
  EXPECT_EQ(s.size(), 100u);
}

TEST_F(Containers, UvectorResizeReserveShrinkRelease)
{
  auto const host = iota(1000);
  rmm::device_uvector<int> v(1000, *stream_, mr());
  RMM_CUDA_TRY(cudaMemcpyAsync(v.data(), host.data(), 1000 * sizeof(int), cudaMemcpyDefault, stream_->value()));
  v.reserve(5000, *stream_);
  EXPECT_EQ(v.capacity(), 5000u);
  EXPECT_EQ(v.size(), 1000u);
  EXPECT_EQ(v.element(999, *stream_), 999);
  v.resize(10, *stream_);
  EXPECT_EQ(v.capacity(), 5000u);
  v.shrink_to_fit(*stream_);
  EXPECT_EQ(v.capacity(), 10u);
  EXPECT_EQ(v.element(9, *stream_), 9);
  rmm::device_buffer released = v.release();
  EXPECT_EQ(released.size(), 10 * sizeof(int));
  EXPECT_EQ(v.size(), 0u);
  EXPECT_THROW((rmm::device_uvector<int>{std::numeric_limits<std::size_t>::max(), *stream_, mr()}),
               rmm::invalid_argument);
}

TEST_F(Containers, UvectorCopyAcrossStreams)
{
  auto const host = iota(10000);
  rmm::device_uvector<int> v(host.size(), *stream_, mr());
  RMM_CUDA_TRY(cudaMemcpyAsync(v.data(), host.data(), host.size() * sizeof(int), cudaMemcpyDefault, stream_->value()));
  stream_->synchronize();
  rmm::device_uvector<int> w(v, *other_, mr());
  EXPECT_EQ(w.stream(), cuda::stream_ref{*other_});
  std::vector<int> back(host.size());
  RMM_CUDA_TRY(cudaMemcpyAsync(back.data(), w.data(), back.size() * sizeof(int), cudaMemcpyDefault, other_->value()));
  other_->synchronize();
  EXPECT_EQ(back, host);
  // Freed on its own stream; the pool may hand the memory to the first stream afterwards.
  w = rmm::device_uvector<int>(0, *other_, mr());
  rmm::device_uvector<int> x(host.size(), *stream_, mr());
  EXPECT_EQ(x.size(), host.size());
}

TEST_F(Containers, UvectorFromTheCurrentDeviceResourceByDefault)
{
  rmm::device_uvector<double> v(128, *stream_);
  EXPECT_TRUE(v.memory_resource() == rmm::mr::get_current_device_resource_ref());
}

TEST_F(Containers, Scalar)
{
  int const initial = 17;  // an lvalue: a temporary is rejected at compile time (see below)
  rmm::device_scalar<int> s(initial, *stream_, mr());
  EXPECT_EQ(s.value(*stream_), 17);
  int const v = 42;
  s.set_value_async(v, *stream_);
  EXPECT_EQ(s.value(*stream_), 42);
  s.set_value_to_zero_async(*stream_);
  EXPECT_EQ(s.value(*stream_), 0);
  rmm::device_scalar<int> copy(s, *other_, mr());
  EXPECT_EQ(copy.value(*other_), 0);
  EXPECT_EQ(s.size(), 1u);
  static_assert(!std::is_constructible_v<rmm::device_scalar<int>, int, cuda::stream_ref>,
                "a temporary initial value must not compile");
}

}  // namespace
