// The conformance suite (mr_conformance.hpp) for `rmm::mr::pool_memory_resource` over host memory.
#include "mr_conformance.hpp"

#include <rmm/mr/pool_memory_resource.hpp>

namespace rmm::test {
namespace {
struct pool_host_factory {
  static constexpr bool needs_gpu = false;
  static auto make() { return host_pool(); }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(PoolOverHost, MrConformance, pool_host_factory);
}  // namespace rmm::test
