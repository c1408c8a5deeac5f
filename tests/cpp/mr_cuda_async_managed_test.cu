// The conformance suite (mr_conformance.hpp) for `rmm::mr::cuda_async_managed_memory_resource`
// (skipped with the reason where the driver has no pools of managed memory).
#include "mr_conformance.hpp"

#include <rmm/detail/runtime_capabilities.hpp>
#include <rmm/mr/cuda_async_managed_memory_resource.hpp>

namespace rmm::test {
namespace {
struct cuda_async_managed_factory {
  static constexpr bool needs_gpu = true;
  static char const* unsupported()
  {
    return rmm::detail::runtime_async_managed_alloc::is_supported()
             ? nullptr
             : "no pools of managed memory (needs a CUDA 13.0 driver and concurrent managed access)";
  }
  static auto make() { return rmm::mr::cuda_async_managed_memory_resource{}; }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(CudaAsyncManaged, MrConformance, cuda_async_managed_factory);
}  // namespace rmm::test
