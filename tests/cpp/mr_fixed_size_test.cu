// The conformance suite (mr_conformance.hpp) for `rmm::mr::fixed_size_memory_resource` over host
// memory and over CUDA memory, and what only the fixed-size resource does.
#include "mr_conformance.hpp"

#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/detail/fixed_size_free_list.hpp>
#include <rmm/mr/detail/fixed_size_memory_resource_impl.hpp>
#include <rmm/mr/detail/free_list.hpp>
#include <rmm/mr/fixed_size_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <type_traits>

namespace rmm::test {
namespace {
// 16 MiB blocks hold every size the suite asks for.
struct fixed_size_host_factory {
  static constexpr bool needs_gpu = false;
  static auto make() { return rmm::mr::fixed_size_memory_resource{new_delete_resource{}, 16 << 20, 4}; }
};
struct fixed_size_cuda_factory {
  static constexpr bool needs_gpu = true;
  static auto make()
  {
    return rmm::mr::fixed_size_memory_resource{rmm::mr::cuda_memory_resource{}, 16 << 20, 4};
  }
};

using fixed_size = rmm::mr::fixed_size_memory_resource;
static_assert(fixed_size::default_block_size == std::size_t{1} << 20);
static_assert(fixed_size::default_blocks_to_preallocate == 128);
static_assert(!std::is_default_constructible_v<fixed_size>);

TEST(FixedSize, DefaultsAndBlockSize)
{
  rmm::mr::statistics_resource_adaptor stats{new_delete_resource{}};
  {
    fixed_size mr{&stats};
    EXPECT_EQ(mr.get_block_size(), fixed_size::default_block_size);
    EXPECT_EQ(stats.get_bytes_counter().value, 128 << 20) << "128 blocks of 1 MiB preallocated";
    EXPECT_EQ(mr.get_upstream_resource(), rmm::device_async_resource_ref{stats});
    fixed_size odd{&stats, 1000, 2};
    EXPECT_EQ(odd.get_block_size(), 1024u) << "rounded up to 256";
  }
  EXPECT_EQ(stats.get_bytes_counter().value, 0) << "every chunk went back";
}

TEST(FixedSize, RequestsAboveTheBlockSizeThrowOutOfMemory)
{
  fixed_size mr{new_delete_resource{}, 4096, 2};
  expect_throws_exactly<rmm::out_of_memory>([&] { (void)mr.allocate(default_stream(), 4097); },
                                            "maximum allocation size exceeded");
  expect_throws_exactly<rmm::bad_alloc>([&] { (void)mr.allocate(default_stream(), 64, 512); },
                                        "512");
  void* p = mr.allocate(default_stream(), 4096);
  void* q = mr.allocate(default_stream(), 1);
  void* r = mr.allocate(default_stream(), 1);  // grows by one chunk
  EXPECT_NE(p, q);
  EXPECT_NE(q, r);
  mr.deallocate(default_stream(), p, 4096);
  mr.deallocate(default_stream(), q, 1);
  mr.deallocate(default_stream(), r, 1);
}

TEST(FixedSize, BadArgumentsThrowLogicError)
{
  EXPECT_THROW((fixed_size{new_delete_resource{}, 0}), rmm::logic_error);
  EXPECT_THROW((fixed_size{new_delete_resource{}, 256, 0}), rmm::logic_error);
}
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(FixedSizeOverHost, MrConformance, fixed_size_host_factory);
INSTANTIATE_TYPED_TEST_SUITE_P(FixedSizeOverCuda, MrConformance, fixed_size_cuda_factory);
}  // namespace rmm::test
