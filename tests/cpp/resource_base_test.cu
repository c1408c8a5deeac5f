// What every Rust-backed resource class gets from its one base (rmm/mr/detail/rust_resource.hpp):
// equality of copies, inequality of separate resources, the properties each class declares, and
// copy/move semantics. Needs no GPU: the pools and adaptors sit over a host resource, and the
// stateless resources are compared without being called.

#include "stateful_resources.hpp"
#include "test_utils.hpp"

#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/failure_callback_resource_adaptor.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/managed_memory_resource.hpp>
#include <rmm/mr/pinned_host_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace {

using rmm::test::new_delete_resource;
namespace mr = rmm::mr;

template <class A, class B, class = void>
struct comparable : std::false_type {};
template <class A, class B>
struct comparable<A, B, std::void_t<decltype(std::declval<A const&>() == std::declval<B const&>())>>
  : std::true_type {};

/// Device accessible always; host accessible exactly when `host` says so.
template <class R, bool host>
constexpr bool has_exactly_properties =
  cuda::mr::resource_with<R, cuda::mr::device_accessible> &&
  cuda::mr::synchronous_resource_with<R, cuda::mr::device_accessible> &&
  cuda::has_property<R, cuda::mr::host_accessible> == host;

static_assert(has_exactly_properties<mr::cuda_memory_resource, false>);
static_assert(has_exactly_properties<mr::managed_memory_resource, true>);
static_assert(has_exactly_properties<mr::pinned_host_memory_resource, true>);
static_assert(has_exactly_properties<mr::cuda_async_memory_resource, false>);
static_assert(has_exactly_properties<mr::pool_memory_resource, false>);
static_assert(has_exactly_properties<mr::statistics_resource_adaptor, false>);
static_assert(has_exactly_properties<mr::tracking_resource_adaptor, false>);
static_assert(has_exactly_properties<mr::limiting_resource_adaptor, false>);
static_assert(has_exactly_properties<mr::logging_resource_adaptor, false>);
static_assert(has_exactly_properties<mr::failure_callback_resource_adaptor<>, false>);

// Equality is between two objects of one class, never across classes.
static_assert(comparable<mr::pool_memory_resource, mr::pool_memory_resource>::value);
static_assert(!comparable<mr::pool_memory_resource, mr::statistics_resource_adaptor>::value);
static_assert(!comparable<mr::cuda_memory_resource, mr::managed_memory_resource>::value);

// The stateless resources are empty and trivially copied; the others share their state.
static_assert(std::is_empty_v<mr::cuda_memory_resource>);
static_assert(std::is_trivially_copyable_v<mr::managed_memory_resource>);
static_assert(std::is_nothrow_default_constructible_v<mr::pinned_host_memory_resource>);
static_assert(!std::is_default_constructible_v<mr::pool_memory_resource>);
static_assert(std::is_nothrow_copy_constructible_v<mr::pool_memory_resource>);
static_assert(std::is_nothrow_move_constructible_v<mr::limiting_resource_adaptor>);
static_assert(std::is_nothrow_copy_assignable_v<mr::cuda_async_memory_resource>);
static_assert(std::is_nothrow_move_assignable_v<mr::failure_callback_resource_adaptor<>>);

// One factory per stateful class that needs no GPU (stateful_resources.hpp).
using namespace rmm::test::stateful;

template <class Factory>
class SharedResource : public ::testing::Test {};
using StatefulTypes = ::testing::Types<pool, statistics, tracking, limiting, logging, failure_callback>;
TYPED_TEST_SUITE(SharedResource, StatefulTypes);

TYPED_TEST(SharedResource, CopiesAreEqualAndSeparateResourcesAreNot)
{
  auto a           = TypeParam::make();
  auto copy        = a;
  auto assigned    = TypeParam::make();
  auto other       = TypeParam::make();
  EXPECT_FALSE(assigned == a);
  assigned = copy;
  EXPECT_TRUE(a == copy);
  EXPECT_FALSE(a != copy);
  EXPECT_TRUE(assigned == a);
  EXPECT_TRUE(a != other);
  EXPECT_FALSE(a == other);

  // Type-erased copies and references compare as the objects do.
  cuda::mr::any_resource<cuda::mr::device_accessible> any{a};
  EXPECT_TRUE(rmm::device_async_resource_ref{any} == rmm::device_async_resource_ref{copy});
  EXPECT_FALSE(rmm::device_async_resource_ref{any} == rmm::device_async_resource_ref{other});

  // A moved-to object is the resource; a moved-from one equals no live resource.
  auto moved = std::move(copy);
  EXPECT_TRUE(moved == a);
  EXPECT_FALSE(copy == a);  // NOLINT(bugprone-use-after-move)
  EXPECT_FALSE(a == copy);  // NOLINT(bugprone-use-after-move)
}

TEST(StatelessResource, EveryInstanceIsInterchangeable)
{
  mr::cuda_memory_resource cuda_a;
  mr::cuda_memory_resource cuda_b;
  EXPECT_TRUE(cuda_a == cuda_b);
  EXPECT_FALSE(cuda_a != cuda_b);
  mr::managed_memory_resource managed_a;
  mr::managed_memory_resource managed_b;
  EXPECT_TRUE(managed_a == managed_b);
  EXPECT_FALSE(managed_a != managed_b);
  mr::pinned_host_memory_resource pinned_a;
  mr::pinned_host_memory_resource pinned_b;
  EXPECT_TRUE(pinned_a == pinned_b);
  EXPECT_FALSE(pinned_a != pinned_b);
  EXPECT_TRUE(rmm::device_async_resource_ref{cuda_a} == rmm::device_async_resource_ref{cuda_b});
}

}  // namespace
