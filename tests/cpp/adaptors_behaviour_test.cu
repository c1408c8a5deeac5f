// What the aligned, callback and failure-callback classes do beyond the conformance suite, over
// host memory (no GPU).
#include "mr_conformance.hpp"

#include <rmm/error.hpp>
#include <rmm/mr/aligned_resource_adaptor.hpp>
#include <rmm/mr/callback_memory_resource.hpp>
#include <rmm/mr/failure_callback_resource_adaptor.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

namespace rmm::test {
namespace {

TEST(AlignedAdaptor, AlignsAtOrAboveTheThresholdOnly)
{
  rmm::mr::aligned_resource_adaptor mr{host_pool(), std::size_t{1} << 16, 4096};
  for (int i = 0; i < 8; ++i) {
    void* big = mr.allocate(default_stream(), 4096 + i);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big) % (std::size_t{1} << 16), 0U);
    void* small = mr.allocate(default_stream(), 100);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small) % 256, 0U);
    mr.deallocate(default_stream(), small, 100);
    mr.deallocate(default_stream(), big, 4096 + i);
  }
}

TEST(AlignedAdaptor, RefusesAnAlignmentThatIsNoPowerOfTwo)
{
  EXPECT_THROW((rmm::mr::aligned_resource_adaptor{host_pool(), 1000}), rmm::logic_error);
  EXPECT_THROW((rmm::mr::aligned_resource_adaptor{host_pool(), 0}), rmm::logic_error);
  EXPECT_EQ(rmm::mr::aligned_resource_adaptor::default_alignment_threshold, 0U);
}

// Throws a type of its own, derived from rmm::out_of_memory.
struct my_oom : rmm::out_of_memory {
  my_oom() : rmm::out_of_memory{"my_oom"} {}
};

struct throwing_resource {
  int* calls;
  void* allocate(cuda::stream_ref, std::size_t, std::size_t)
  {
    ++*calls;
    throw my_oom{};
  }
  void deallocate(cuda::stream_ref, void*, std::size_t, std::size_t) noexcept {}
  void* allocate_sync(std::size_t b, std::size_t a) { return allocate(default_stream(), b, a); }
  void deallocate_sync(void*, std::size_t, std::size_t) noexcept {}
  bool operator==(throwing_resource const& o) const noexcept { return calls == o.calls; }
  bool operator!=(throwing_resource const& o) const noexcept { return calls != o.calls; }
  friend void get_property(throwing_resource const&, cuda::mr::device_accessible) noexcept {}
};

bool retry_twice(std::size_t, void* arg)
{
  auto* n = static_cast<int*>(arg);
  return ++*n <= 2;
}

TEST(FailureCallbackAdaptor, RetriesThenRethrowsTheUpstreamsOwnException)
{
  int upstream_calls = 0;
  int callbacks      = 0;
  rmm::mr::failure_callback_resource_adaptor<> mr{
    throwing_resource{&upstream_calls}, retry_twice, &callbacks};
  EXPECT_THROW((void)mr.allocate(default_stream(), 1024), my_oom);
  EXPECT_EQ(callbacks, 3);       // two retries, then false
  EXPECT_EQ(upstream_calls, 3);  // the first try and two retries
}

TEST(FailureCallbackAdaptor, OtherExceptionsPassWithoutACallback)
{
  int upstream_calls = 0;
  int callbacks      = 0;
  // Reacts to std::invalid_argument only: my_oom is not one.
  rmm::mr::failure_callback_resource_adaptor<std::invalid_argument> mr{
    throwing_resource{&upstream_calls}, retry_twice, &callbacks};
  EXPECT_THROW((void)mr.allocate(default_stream(), 1024), my_oom);
  EXPECT_EQ(callbacks, 0);
}

TEST(FailureCallbackAdaptor, CatchesALimitOverARustUpstream)
{
  int callbacks = 0;
  auto never    = [](std::size_t, void* arg) { return ++*static_cast<int*>(arg) < 0; };
  rmm::mr::failure_callback_resource_adaptor<> mr{
    rmm::mr::pool_memory_resource{new_delete_resource{}, 0, 4096}, never, &callbacks};
  EXPECT_THROW((void)mr.allocate(default_stream(), 1 << 20), rmm::out_of_memory);
  EXPECT_EQ(callbacks, 1);
  void* p = mr.allocate(default_stream(), 1024);
  mr.deallocate(default_stream(), p, 1024);
}

void* throw_logic(std::size_t, cuda::stream_ref, void*) { throw std::invalid_argument{"no"}; }
void* give_null(std::size_t, cuda::stream_ref, void*) { return nullptr; }
void free_nothing(void*, std::size_t, cuda::stream_ref, void*) {}

TEST(CallbackResource, CallbackExceptionsKeepTheirTypeAndNullIsOutOfMemory)
{
  rmm::mr::callback_memory_resource throws{throw_logic, free_nothing};
  EXPECT_THROW((void)throws.allocate(default_stream(), 64), std::invalid_argument);
  rmm::mr::callback_memory_resource null{give_null, free_nothing};
  EXPECT_THROW((void)null.allocate(default_stream(), 64), rmm::out_of_memory);
  EXPECT_EQ(null.allocate(default_stream(), 0), nullptr);
}

}  // namespace
}  // namespace rmm::test
