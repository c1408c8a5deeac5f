// The conformance suite (mr_conformance.hpp) for a pool over pinned host memory, written as RMM
// users write it.
#include "mr_conformance.hpp"

#include <rmm/mr/pinned_host_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>

namespace rmm::test {
namespace {
struct pool_pinned_host_factory {
  static constexpr bool needs_gpu = true;
  static auto make()
  {
    return rmm::mr::pool_memory_resource{rmm::mr::pinned_host_memory_resource{},
                                         std::size_t{1} << 20};
  }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(PoolPinnedHost, MrConformance, pool_pinned_host_factory);
}  // namespace rmm::test
