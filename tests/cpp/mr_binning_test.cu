// The conformance suite (mr_conformance.hpp) for `rmm::mr::binning_memory_resource` over a host
// pool and over a CUDA pool, and what only the binning resource does.
#include "mr_conformance.hpp"

#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/detail/binning_memory_resource_impl.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <optional>

namespace rmm::test {
namespace {
// Fixed-size bins of 256 B to 1 MiB; larger requests go to the pool.
struct binning_host_factory {
  static constexpr bool needs_gpu = false;
  static auto make() { return rmm::mr::binning_memory_resource{host_pool(), 8, 20}; }
};
// RMM's own test bins: 256 KiB to 4 MiB over a pool.
struct binning_cuda_factory {
  static constexpr bool needs_gpu = true;
  static auto make()
  {
    rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 0};
    return rmm::mr::binning_memory_resource{pool, 18, 22};
  }
};

using binning = rmm::mr::binning_memory_resource;

TEST(Binning, WithoutBinsEverythingGoesToTheUpstream)
{
  rmm::mr::statistics_resource_adaptor stats{new_delete_resource{}};
  binning mr{&stats};
  EXPECT_EQ(mr.get_upstream_resource(), rmm::device_async_resource_ref{stats});
  void* p = mr.allocate(default_stream(), 100);
  EXPECT_EQ(stats.get_allocations_counter().value, 1);
  mr.deallocate(default_stream(), p, 100);
  EXPECT_EQ(stats.get_allocations_counter().value, 0);
}

TEST(Binning, ExponentsMakeFixedSizeBinsAndFreesRouteBySize)
{
  rmm::mr::statistics_resource_adaptor stats{new_delete_resource{}};
  {
    binning mr{&stats, 10, 12};  // bins of 1, 2 and 4 KiB, 128 blocks each
    EXPECT_EQ(stats.get_bytes_counter().value, 128 * (1024 + 2048 + 4096));
    void* small = mr.allocate(default_stream(), 1500);
    void* large = mr.allocate(default_stream(), 5000);
    EXPECT_EQ(stats.get_allocations_counter().value, 4) << "1500 from a bin, 5000 from the upstream";
    mr.deallocate(default_stream(), large, 5000);
    mr.deallocate(default_stream(), small, 1500);
    EXPECT_EQ(stats.get_allocations_counter().value, 3);
  }
  EXPECT_EQ(stats.get_bytes_counter().value, 0) << "the bins gave their chunks back";
}

TEST(Binning, AddBinWithAForeignResource)
{
  rmm::mr::statistics_resource_adaptor upstream{new_delete_resource{}};
  new_delete_resource foreign{};  // not an rmm-rs resource: crosses the bridge as a C++ resource
  binning mr{&upstream};
  mr.add_bin(4096, rmm::device_async_resource_ref{foreign});
  mr.add_bin(4096);  // a bin of that size exists: nothing changes
  mr.add_bin(1024);  // a fixed-size bin over the upstream
  EXPECT_EQ(upstream.get_allocations_counter().value, 1);
  void* p = mr.allocate(default_stream(), 3000);
  EXPECT_EQ(foreign.s->outstanding, 1);
  void* q = mr.allocate(default_stream(), 1000);
  EXPECT_EQ(upstream.get_allocations_counter().value, 1) << "1000 bytes from the 1 KiB bin's chunk";
  mr.deallocate(default_stream(), p, 3000);
  mr.deallocate(default_stream(), q, 1000);
  EXPECT_EQ(foreign.s->outstanding, 0);
  mr.add_bin(8192, std::nullopt);
}

TEST(Binning, BadArgumentsThrowLogicError)
{
  EXPECT_THROW((binning{new_delete_resource{}, -1, 4}), rmm::logic_error);
  binning mr{new_delete_resource{}};
  EXPECT_THROW(mr.add_bin(0), rmm::logic_error);
}
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(BinningOverHost, MrConformance, binning_host_factory);
INSTANTIATE_TYPED_TEST_SUITE_P(BinningOverCuda, MrConformance, binning_cuda_factory);
}  // namespace rmm::test
