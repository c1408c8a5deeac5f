// The conformance suite (mr_conformance.hpp) for `rmm::mr::cuda_memory_resource`.
#include "mr_conformance.hpp"

#include <rmm/mr/cuda_memory_resource.hpp>

namespace rmm::test {
namespace {
struct cuda_factory {
  static constexpr bool needs_gpu = true;
  static auto make() { return rmm::mr::cuda_memory_resource{}; }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Cuda, MrConformance, cuda_factory);
}  // namespace rmm::test
