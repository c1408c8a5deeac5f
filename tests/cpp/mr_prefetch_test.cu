// The conformance suite (mr_conformance.hpp) for `rmm::mr::prefetch_resource_adaptor` over a pool on host
// memory (nothing to prefetch, no driver call).
#include "mr_conformance.hpp"

#include <rmm/mr/prefetch_resource_adaptor.hpp>

namespace rmm::test {
namespace {
struct prefetch_factory {
  static constexpr bool needs_gpu = false;
  static auto make() { return rmm::mr::prefetch_resource_adaptor{host_pool()}; }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Prefetch, MrConformance, prefetch_factory);
}  // namespace rmm::test
