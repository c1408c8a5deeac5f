// The conformance suite (mr_conformance.hpp) for `rmm::mr::aligned_resource_adaptor` over a pool on host memory, aligning
// allocations of 1 KiB or more to 64 KiB.
#include "mr_conformance.hpp"

#include <rmm/mr/aligned_resource_adaptor.hpp>

namespace rmm::test {
namespace {
struct aligned_factory {
  static constexpr bool needs_gpu = false;
  static auto make() { return rmm::mr::aligned_resource_adaptor{host_pool(), std::size_t{1} << 16, 1024}; }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Aligned, MrConformance, aligned_factory);
}  // namespace rmm::test
