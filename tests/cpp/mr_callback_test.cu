// The conformance suite (mr_conformance.hpp) for `rmm::mr::callback_memory_resource` whose
// callbacks allocate from a pool on host memory, passed as the callbacks' user arguments.
#include "mr_conformance.hpp"

#include <rmm/mr/callback_memory_resource.hpp>

#include <memory>

namespace rmm::test {
namespace {
void* allocate_from(std::size_t bytes, cuda::stream_ref stream, void* arg)
{
  return static_cast<rmm::mr::pool_memory_resource*>(arg)->allocate(stream, bytes);
}
void deallocate_to(void* ptr, std::size_t bytes, cuda::stream_ref stream, void* arg)
{
  static_cast<rmm::mr::pool_memory_resource*>(arg)->deallocate(stream, ptr, bytes);
}

struct callback_factory {
  static constexpr bool needs_gpu = false;
  static auto make()
  {
    // One pool for the whole program: the callbacks' argument must outlive every resource.
    static auto* const pool = new rmm::mr::pool_memory_resource{host_pool()};  // NOLINT
    return rmm::mr::callback_memory_resource{allocate_from, deallocate_to, pool, pool};
  }
};
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Callback, MrConformance, callback_factory);
}  // namespace rmm::test
