// The conformance suite (mr_conformance.hpp) for `rmm::mr::pinned_host_memory_resource`.
#include "mr_conformance.hpp"

#include <rmm/mr/pinned_host_memory_resource.hpp>

namespace rmm::test {
namespace {
struct pinned_host_factory {
  static constexpr bool needs_gpu = true;
  static auto make() { return rmm::mr::pinned_host_memory_resource{}; }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(PinnedHost, MrConformance, pinned_host_factory);
}  // namespace rmm::test
