// The conformance suite (mr_conformance.hpp) for `rmm::mr::pool_memory_resource` over
// `cuda_memory_resource`.
#include "mr_conformance.hpp"

#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>

namespace rmm::test {
namespace {
struct pool_cuda_factory {
  static constexpr bool needs_gpu = true;
  static auto make()
  {
    return rmm::mr::pool_memory_resource{rmm::mr::cuda_memory_resource{}, std::size_t{64} << 20};
  }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(PoolOverCuda, MrConformance, pool_cuda_factory);
}  // namespace rmm::test
