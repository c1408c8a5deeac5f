// The conformance suite (mr_conformance.hpp) for `rmm::mr::limiting_resource_adaptor` over a pool
// on host memory.
#include "mr_conformance.hpp"

#include <rmm/mr/limiting_resource_adaptor.hpp>

namespace rmm::test {
namespace {
struct limiting_factory {
  static constexpr bool needs_gpu = false;
  static auto make()
  {
    return rmm::mr::limiting_resource_adaptor{host_pool(), std::size_t{1} << 30};
  }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Limiting, MrConformance, limiting_factory);
}  // namespace rmm::test
