// The conformance suite (mr_conformance.hpp) for `rmm::mr::statistics_resource_adaptor` over a pool
// on host memory.
#include "mr_conformance.hpp"

#include <rmm/mr/statistics_resource_adaptor.hpp>

namespace rmm::test {
namespace {
struct statistics_factory {
  static constexpr bool needs_gpu = false;
  static auto make() { return rmm::mr::statistics_resource_adaptor{host_pool()}; }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Statistics, MrConformance, statistics_factory);
}  // namespace rmm::test
