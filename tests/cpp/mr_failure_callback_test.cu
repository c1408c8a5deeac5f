// The conformance suite (mr_conformance.hpp) for `rmm::mr::failure_callback_resource_adaptor` over
// a pool on host memory, never retrying.
#include "mr_conformance.hpp"

#include <rmm/mr/failure_callback_resource_adaptor.hpp>

namespace rmm::test {
namespace {
bool never_retry(std::size_t, void*) { return false; }

struct failure_callback_factory {
  static constexpr bool needs_gpu = false;
  static auto make()
  {
    return rmm::mr::failure_callback_resource_adaptor<>{host_pool(), never_retry, nullptr};
  }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(FailureCallback, MrConformance, failure_callback_factory);
}  // namespace rmm::test
