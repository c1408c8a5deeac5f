// The conformance suite (mr_conformance.hpp) for `rmm::mr::thread_safe_resource_adaptor` over a pool on
// host memory.
#include "mr_conformance.hpp"

#include <rmm/mr/thread_safe_resource_adaptor.hpp>

namespace rmm::test {
namespace {
struct thread_safe_factory {
  static constexpr bool needs_gpu = false;
  static auto make() { return rmm::mr::thread_safe_resource_adaptor{host_pool()}; }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(ThreadSafe, MrConformance, thread_safe_factory);
}  // namespace rmm::test
