// The conformance suite (mr_conformance.hpp) for `rmm::mr::logging_resource_adaptor` over a pool on
// host memory, logging to /dev/null.
#include "mr_conformance.hpp"

#include <rmm/mr/logging_resource_adaptor.hpp>

namespace rmm::test {
namespace {
struct logging_factory {
  static constexpr bool needs_gpu = false;
  static auto make() { return rmm::mr::logging_resource_adaptor{host_pool(), "/dev/null"}; }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Logging, MrConformance, logging_factory);
}  // namespace rmm::test
