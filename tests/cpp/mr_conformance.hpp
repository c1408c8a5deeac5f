// The conformance suite of the C++ face: one set of tests every resource class passes, as RMM's
// mr_ref tests are instantiated for each of its resources. Each class instantiates it in a file
// named after it (mr_<name>_test.cu) with a factory:
//
//   struct Factory { static constexpr bool needs_gpu = ...; static auto make(); };
//
// A factory whose resource needs more than a GPU also has `static char const* unsupported();`:
// null where the machine can make the resource, else why not (the tests then skip with it).
//   INSTANTIATE_TYPED_TEST_SUITE_P(Name, MrConformance, Factory);
//
// The tests touch only addresses, never the memory, so a pool or adaptor over a host resource
// (rmm::test::new_delete_resource) runs them without a GPU; resources over the GPU skip there.
#pragma once

#include "test_utils.hpp"

#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace rmm::test {

/// A pool over host memory: the upstream of the adaptors' instantiations, so that they run
/// without a GPU.
inline rmm::mr::pool_memory_resource host_pool()
{
  return rmm::mr::pool_memory_resource{new_delete_resource{}, 0};
}

/// Whether `Factory` says when the machine cannot make its resource.
template <class Factory, class = void>
struct has_unsupported : std::false_type {};
template <class Factory>
struct has_unsupported<Factory, std::void_t<decltype(Factory::unsupported())>> : std::true_type {};

template <class Factory>
class MrConformance : public ::testing::Test {
 protected:
  void SetUp() override
  {
    if (Factory::needs_gpu && rmm::get_num_cuda_devices() == 0) {
      GTEST_SKIP() << "skipped: no CUDA device";
    }
    if constexpr (has_unsupported<Factory>::value) {
      if (char const* why = Factory::unsupported(); why != nullptr) {
        GTEST_SKIP() << "skipped: " << why;
      }
    }
  }
};

TYPED_TEST_SUITE_P(MrConformance);

TYPED_TEST_P(MrConformance, ZeroBytesIsNullAndFreeingNullDoesNothing)
{
  auto mr = TypeParam::make();
  EXPECT_EQ(mr.allocate(default_stream(), 0), nullptr);
  mr.deallocate(default_stream(), nullptr, 0);
}

TYPED_TEST_P(MrConformance, SizesFromOneByteToSixteenMiBRoundTrip)
{
  auto mr = TypeParam::make();
  for (std::size_t bytes : {std::size_t{1}, std::size_t{255}, std::size_t{256}, std::size_t{257},
                            std::size_t{4096}, std::size_t{65537}, std::size_t{1} << 20,
                            (std::size_t{3} << 20) + 5, std::size_t{16} << 20}) {
    void* p = mr.allocate(default_stream(), bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u) << bytes;
    mr.deallocate(default_stream(), p, bytes);
  }
}

TYPED_TEST_P(MrConformance, LiveBlocksNeverOverlap)
{
  auto mr = TypeParam::make();
  std::mt19937_64 rng{7};
  std::vector<std::pair<std::uintptr_t, std::size_t>> live;
  for (int i = 0; i < 300; ++i) {
    if (!live.empty() && rng() % 3 == 0) {
      auto const k = rng() % live.size();
      mr.deallocate(default_stream(), reinterpret_cast<void*>(live[k].first), live[k].second);
      live[k] = live.back();
      live.pop_back();
    } else {
      std::size_t const bytes = std::size_t{1} << (rng() % 20);
      void* const p = mr.allocate(default_stream(), bytes);
      live.emplace_back(reinterpret_cast<std::uintptr_t>(p), bytes);
    }
  }
  auto sorted = live;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    EXPECT_LE(sorted[i - 1].first + sorted[i - 1].second, sorted[i].first) << "blocks overlap";
  }
  for (auto [p, bytes] : live) {
    mr.deallocate(default_stream(), reinterpret_cast<void*>(p), bytes);
  }
}

TYPED_TEST_P(MrConformance, AlignmentsUpTo256AreHonoured)
{
  auto mr = TypeParam::make();
  for (std::size_t align = 1; align <= 256; align *= 2) {
    void* p = mr.allocate(default_stream(), 300, align);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % align, 0u) << align;
    mr.deallocate(default_stream(), p, 300, align);
  }
}

TYPED_TEST_P(MrConformance, AResourceRefAllocatesFromIt)
{
  auto mr = TypeParam::make();
  rmm::device_async_resource_ref ref{mr};
  void* p = ref.allocate(default_stream(), 1000, 256);
  EXPECT_NE(p, nullptr);
  ref.deallocate(default_stream(), p, 1000, 256);
  EXPECT_EQ(ref, rmm::device_async_resource_ref{mr});
}

TYPED_TEST_P(MrConformance, SynchronousCallsRoundTrip)
{
  auto mr = TypeParam::make();
  void* p = mr.allocate_sync(4096);
  EXPECT_NE(p, nullptr);
  mr.deallocate_sync(p, 4096);
}

TYPED_TEST_P(MrConformance, ACopyEqualsItsOriginal)
{
  auto mr   = TypeParam::make();
  auto copy = mr;
  EXPECT_TRUE(copy == mr);
  EXPECT_FALSE(copy != mr);
  void* p = copy.allocate(default_stream(), 512);
  mr.deallocate(default_stream(), p, 512);  // memory of one is freed through the other
}

TYPED_TEST_P(MrConformance, ThreadsAllocateAndFreeAtOnce)
{
  auto mr = TypeParam::make();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&mr, t] {
      std::mt19937_64 rng(11 + t);
      std::vector<std::pair<void*, std::size_t>> live;
      for (int i = 0; i < 300; ++i) {
        if (live.size() < 16 && rng() % 2 == 0) {
          std::size_t const bytes = std::size_t{1} << (rng() % 16);
          live.emplace_back(mr.allocate(default_stream(), bytes), bytes);
        } else if (!live.empty()) {
          mr.deallocate(default_stream(), live.back().first, live.back().second);
          live.pop_back();
        }
      }
      for (auto [p, bytes] : live) {
        mr.deallocate(default_stream(), p, bytes);
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
}

REGISTER_TYPED_TEST_SUITE_P(MrConformance,
                            ZeroBytesIsNullAndFreeingNullDoesNothing,
                            SizesFromOneByteToSixteenMiBRoundTrip,
                            LiveBlocksNeverOverlap,
                            AlignmentsUpTo256AreHonoured,
                            AResourceRefAllocatesFromIt,
                            SynchronousCallsRoundTrip,
                            ACopyEqualsItsOriginal,
                            ThreadsAllocateAndFreeAtOnce);

}  // namespace rmm::test
