// The conformance suite (mr_conformance.hpp) for `rmm::mr::sam_headroom_memory_resource` (skipped
// with the reason where the device cannot access system-allocated memory).
#include "mr_conformance.hpp"

#include <rmm/mr/sam_headroom_memory_resource.hpp>
#include <rmm/mr/system_memory_resource.hpp>

namespace rmm::test {
namespace {
struct sam_headroom_factory {
  static constexpr bool needs_gpu = true;
  static char const* unsupported()
  {
    return rmm::mr::detail::is_system_memory_supported(rmm::get_current_cuda_device())
             ? nullptr
             : "the device cannot access system-allocated memory (no HMM or ATS)";
  }
  static auto make() { return rmm::mr::sam_headroom_memory_resource{std::size_t{1} << 30}; }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(SamHeadroom, MrConformance, sam_headroom_factory);
}  // namespace rmm::test
