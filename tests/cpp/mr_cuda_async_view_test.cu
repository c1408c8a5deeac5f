// The conformance suite (mr_conformance.hpp) for `rmm::mr::cuda_async_view_memory_resource`, over
// the pool of a cuda_async_memory_resource that lives for the whole program.
#include "mr_conformance.hpp"

#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_async_view_memory_resource.hpp>

namespace rmm::test {
namespace {
struct cuda_async_view_factory {
  static constexpr bool needs_gpu = true;
  static auto make()
  {
    static auto* const owner = new rmm::mr::cuda_async_memory_resource{};  // NOLINT: kept to exit
    return rmm::mr::cuda_async_view_memory_resource{owner->pool_handle()};
  }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(CudaAsyncView, MrConformance, cuda_async_view_factory);
}  // namespace rmm::test
