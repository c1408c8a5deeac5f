// The conformance suite (mr_conformance.hpp) for `rmm::mr::managed_memory_resource`.
#include "mr_conformance.hpp"

#include <rmm/mr/managed_memory_resource.hpp>

namespace rmm::test {
namespace {
struct managed_factory {
  static constexpr bool needs_gpu = true;
  static auto make() { return rmm::mr::managed_memory_resource{}; }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Managed, MrConformance, managed_factory);
}  // namespace rmm::test
