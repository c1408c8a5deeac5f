// The C++ surface of a Rust-backed resource may not hand out null or touch a null handle:
// - a non-zero request that "succeeds" with a null pointer throws rmm::bad_alloc;
// - a moved-from resource throws rmm::logic_error from every member that may throw, and its
//   noexcept members (deallocate, the queries) do no harm: a free is refused and reported.
// Needs no GPU: everything sits over host memory.

#include "stateful_resources.hpp"
#include "test_utils.hpp"

#include <rmm/mr/aligned_resource_adaptor.hpp>
#include <rmm/mr/failure_callback_resource_adaptor.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/thread_safe_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>
#include <string>
#include <utility>

namespace {

using rmm::test::default_stream;
using rmm::test::expect_throws_exactly;
using rmm::test::new_delete_resource;
namespace mr = rmm::mr;

/// A C++ resource that "succeeds" with a null pointer for every request.
struct null_resource {
  void* allocate(cuda::stream_ref, std::size_t, std::size_t) { return nullptr; }
  void deallocate(cuda::stream_ref, void*, std::size_t, std::size_t) noexcept {}
  void* allocate_sync(std::size_t, std::size_t) { return nullptr; }
  void deallocate_sync(void*, std::size_t, std::size_t) noexcept {}
  bool operator==(null_resource const&) const noexcept { return true; }
  bool operator!=(null_resource const&) const noexcept { return false; }
  friend void get_property(null_resource const&, cuda::mr::device_accessible) noexcept {}
};

TEST(RustResourceNullPointer, ANonZeroRequestNeverReturnsNull)
{
  mr::statistics_resource_adaptor stats{null_resource{}};
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_THROW(p = stats.allocate(default_stream(), 256), rmm::bad_alloc);
  EXPECT_EQ(p, reinterpret_cast<void*>(0x1));
  EXPECT_THROW(p = stats.allocate_sync(1), rmm::bad_alloc);
  // Through a reference too (what containers hold).
  rmm::device_async_resource_ref ref{stats};
  EXPECT_THROW(p = ref.allocate(default_stream(), 4096, 256), rmm::bad_alloc);
  // A 0-byte request is null without an error, as in RMM.
  EXPECT_EQ(stats.allocate(default_stream(), 0), nullptr);
}

TEST(RustResourceNullPointer, TheFailureCallbackAdaptorDoesNotPassNullOn)
{
  // Its allocations call the C++ upstream from C++, not through Rust.
  mr::failure_callback_resource_adaptor<rmm::bad_alloc> adaptor{null_resource{}, rmm::test::stateful::never_retry, nullptr};
  EXPECT_THROW((void)adaptor.allocate(default_stream(), 256), rmm::bad_alloc);
  EXPECT_EQ(adaptor.allocate(default_stream(), 0), nullptr);
}

constexpr char moved[] = "moved from";

TEST(RustResourceMovedFrom, AllocateThrowsLogicErrorAndDeallocateFreesNothing)
{
  new_delete_resource upstream;
  mr::statistics_resource_adaptor from{upstream};
  mr::statistics_resource_adaptor to{std::move(from)};

  expect_throws_exactly<rmm::logic_error>([&] { (void)from.allocate(default_stream(), 256); }, moved);
  expect_throws_exactly<rmm::logic_error>([&] { (void)from.allocate_sync(256); }, moved);
  expect_throws_exactly<rmm::logic_error>([&] { (void)from.allocate(default_stream(), 0); }, moved);
  rmm::device_async_resource_ref from_ref{from};
  expect_throws_exactly<rmm::logic_error>([&] { (void)from_ref.allocate(default_stream(), 256, 256); },
                                          moved);

  // A free through the moved-from object is refused and reported; the block stays with `to`.
  void* p = to.allocate(default_stream(), 256);
  testing::internal::CaptureStderr();
  from.deallocate(default_stream(), p, 256);
  from.deallocate_sync(p, 256);
  from_ref.deallocate(default_stream(), p, 256, 256);
  auto const err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("moved from"), std::string::npos) << err;
  EXPECT_EQ(to.get_bytes_counter().value, 256);
  EXPECT_EQ(upstream.s->outstanding, 1);
  to.deallocate(default_stream(), p, 256);
  EXPECT_EQ(to.get_bytes_counter().value, 0);
  EXPECT_EQ(upstream.s->outstanding, 0);
}

// Every stateful class that needs no GPU and can be moved from (stateful_resources.hpp).
using namespace rmm::test::stateful;

template <class Factory>
class RustResourceMovedFromEach : public ::testing::Test {};
using Stateful = ::testing::
  Types<pool, statistics, tracking, limiting, logging, aligned, thread_safe, failure_callback>;
TYPED_TEST_SUITE(RustResourceMovedFromEach, Stateful);

TYPED_TEST(RustResourceMovedFromEach, AllocateThrowsDeallocateAndTheUpstreamDoNoHarm)
{
  auto from = TypeParam::make();
  auto to   = std::move(from);
  expect_throws_exactly<rmm::logic_error>([&] { (void)from.allocate(default_stream(), 256); }, moved);
  expect_throws_exactly<rmm::logic_error>([&] { (void)from.allocate_sync(256); }, moved);
  void* p = to.allocate(default_stream(), 256);
  testing::internal::CaptureStderr();
  from.deallocate(default_stream(), p, 256);
  auto up = from.get_upstream_resource();
  up.deallocate(default_stream(), p, 256, 256);
  auto const err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("moved from"), std::string::npos) << err;
  expect_throws_exactly<rmm::logic_error>([&] { (void)up.allocate(default_stream(), 256, 256); }, moved);
  to.deallocate(default_stream(), p, 256);  // still `to`'s: freed once, here
}

TEST(RustResourceMovedFrom, ThrowingMembersThrowAndNoexceptOnesAnswerZero)
{
  new_delete_resource upstream;
  mr::statistics_resource_adaptor stats{upstream};
  auto stats_to = std::move(stats);
  EXPECT_EQ(stats.get_bytes_counter().value, 0);
  EXPECT_EQ(stats.get_allocations_counter().total, 0);
  expect_throws_exactly<rmm::logic_error>([&] { (void)stats.push_counters(); }, moved);
  expect_throws_exactly<rmm::logic_error>([&] { (void)stats.pop_counters(); }, moved);

  mr::pool_memory_resource pool{upstream, 0};
  auto pool_to = std::move(pool);
  EXPECT_EQ(pool.pool_size(), 0u);
  // Its upstream is gone with it: allocating there throws, a free there is refused.
  auto up = pool.get_upstream_resource();
  expect_throws_exactly<rmm::logic_error>([&] { (void)up.allocate(default_stream(), 256, 256); }, moved);
  testing::internal::CaptureStderr();
  up.deallocate(default_stream(), reinterpret_cast<void*>(0x1000), 256, 256);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("moved from"), std::string::npos);

  mr::tracking_resource_adaptor tracking{upstream};
  auto tracking_to = std::move(tracking);
  EXPECT_TRUE(tracking.get_outstanding_allocations().empty());
  EXPECT_EQ(tracking.get_allocated_bytes(), 0u);

  mr::limiting_resource_adaptor limiting{upstream, 1 << 20};
  auto limiting_to = std::move(limiting);
  expect_throws_exactly<rmm::logic_error>([&] { (void)limiting.get_allocated_bytes(); }, moved);
  expect_throws_exactly<rmm::logic_error>([&] { (void)limiting.get_allocation_limit(); }, moved);

  mr::logging_resource_adaptor logging{upstream, "/dev/null"};
  auto logging_to = std::move(logging);
  expect_throws_exactly<rmm::logic_error>([&] { logging.flush(); }, moved);

  // Two moved-from objects are still equal, and equal no live resource.
  auto stats_again = std::move(stats_to);
  EXPECT_TRUE(stats == stats_to);
  EXPECT_FALSE(stats == stats_again);
  EXPECT_FALSE(pool == pool_to);
}

TEST(RustResourceMovedFrom, CannotBeAnUpstreamOrTheCurrentResource)
{
  new_delete_resource upstream;
  mr::pool_memory_resource pool{upstream, 0};
  auto pool_to = std::move(pool);
  expect_throws_exactly<rmm::logic_error>([&] { mr::statistics_resource_adaptor s{pool}; }, moved);
  expect_throws_exactly<rmm::logic_error>([&] { mr::pool_memory_resource p{&pool, 0}; }, moved);

  rmm::cuda_device_id const dev{2801};
  auto const before = rmm::mr::get_per_device_resource_ref(dev);
  expect_throws_exactly<rmm::logic_error>([&] { mr::set_per_device_resource(dev, pool); }, moved);
  expect_throws_exactly<rmm::logic_error>(
    [&] { mr::set_per_device_resource(dev, cuda::mr::any_resource<cuda::mr::device_accessible>{pool}); },
    moved);
  expect_throws_exactly<rmm::logic_error>(
    [&] { mr::set_per_device_resource_ref(dev, rmm::device_async_resource_ref{pool}); }, moved);
  EXPECT_TRUE(rmm::mr::get_per_device_resource_ref(dev) == before) << "nothing changed";
  mr::reset_per_device_resource(dev);
}

}  // namespace
