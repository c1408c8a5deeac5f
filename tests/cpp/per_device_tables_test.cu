// The C++ and Rust per-device tables agree after every setter, whatever it was given: one of our
// resources by type, in an any_resource or by reference, or a user's resource; and C++ takes over
// what Rust code set (the C API's rmmInitialize and rmmFinalize, Python, Rust code). The by-id
// functions need no GPU; the current-device ones and the C API do, and skip without one.

#include "test_utils.hpp"

#include <rmm/cuda_device.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/resource_ref.hpp>
#include <rmm/rmm_api.h>

#include <cuda/memory_resource>

#include <cstddef>

namespace {

using rmm::test::default_stream;
using rmm::test::new_delete_resource;
namespace mr = rmm::mr;
using any_device_resource = cuda::mr::any_resource<cuda::mr::device_accessible>;

// Device ids of their own, far from real devices and from other tests.
constexpr int first_id = 2810;

/// Rust's current resource of `id` is `r` itself.
template <class R>
bool rust_current_is(int id, R const& r)
{
  return rmm_rs::rust_per_device_resource_is(id, r.handle().resource());
}

/// An allocation by Rust code from its current resource of `id` reaches `upstream`.
void rust_allocates_from(int id, new_delete_resource const& upstream)
{
  auto const before = upstream.s->allocations.load();
  mr::detail::rust_table_resource rust{rmm_rs::get_rust_per_device_resource(id)};
  void* p = rust.allocate_sync(1000, 256);
  EXPECT_EQ(upstream.s->allocations.load(), before + 1);
  rust.deallocate_sync(p, 1000, 256);
  EXPECT_EQ(upstream.s->outstanding.load(), 0);
}

/// Rust is back on the initial resource of `id`, which C++ reports too.
void both_on_the_initial_resource(int id)
{
  EXPECT_TRUE(rust_current_is(id, mr::detail::initial_resource()));
  EXPECT_TRUE(mr::get_per_device_resource_ref(rmm::cuda_device_id{id}) ==
              rmm::device_async_resource_ref{mr::detail::initial_resource()});
}

TEST(PerDeviceTables, OurResourceIsCurrentInRustHoweverItIsPassed)
{
  new_delete_resource upstream;
  mr::statistics_resource_adaptor stats{upstream};
  rmm::cuda_device_id const dev{first_id};

  mr::set_per_device_resource(dev, stats);  // by type (mirrored before, too)
  EXPECT_TRUE(rust_current_is(dev.value(), stats));
  mr::reset_per_device_resource(dev);
  both_on_the_initial_resource(dev.value());

  mr::set_per_device_resource(dev, any_device_resource{stats});
  EXPECT_TRUE(rust_current_is(dev.value(), stats)) << "an any_resource";
  mr::reset_per_device_resource(dev);
  both_on_the_initial_resource(dev.value());

  mr::set_per_device_resource_ref(dev, rmm::device_async_resource_ref{stats});
  EXPECT_TRUE(rust_current_is(dev.value(), stats)) << "a resource_ref";
  // Rust allocates from the very adaptor C++ sees.
  mr::detail::rust_table_resource rust{rmm_rs::get_rust_per_device_resource(dev.value())};
  void* p = rust.allocate_sync(1000, 256);
  EXPECT_EQ(stats.get_bytes_counter().value, 1000);
  rust.deallocate_sync(p, 1000, 256);
  mr::reset_per_device_resource_ref(dev);
  both_on_the_initial_resource(dev.value());
}

TEST(PerDeviceTables, AUserResourceIsCalledFromRust)
{
  new_delete_resource upstream;
  rmm::cuda_device_id const dev{first_id + 1};

  auto previous = mr::set_per_device_resource(dev, any_device_resource{upstream});
  EXPECT_TRUE(rmm::device_async_resource_ref{previous} ==
              rmm::device_async_resource_ref{mr::detail::initial_resource()});
  rust_allocates_from(dev.value(), upstream);
  // C++ allocates from it as well, and frees what Rust code allocated (one resource).
  void* p = mr::get_per_device_resource_ref(dev).allocate(default_stream(), 100, 256);
  EXPECT_EQ(upstream.s->outstanding.load(), 1);
  mr::get_per_device_resource_ref(dev).deallocate(default_stream(), p, 100, 256);

  mr::set_per_device_resource_ref(dev, rmm::device_async_resource_ref{upstream});
  rust_allocates_from(dev.value(), upstream);
  auto replaced = mr::reset_per_device_resource(dev);
  EXPECT_TRUE(rmm::device_async_resource_ref{replaced} == rmm::device_async_resource_ref{upstream});
  both_on_the_initial_resource(dev.value());
}

TEST(PerDeviceTables, CppTakesOverWhatRustCodeSet)
{
  new_delete_resource upstream;
  mr::statistics_resource_adaptor stats{upstream};
  rmm::cuda_device_id const dev{first_id + 2};
  both_on_the_initial_resource(dev.value());

  // Rust code sets its table (as the C API and Python do): C++ allocations follow.
  (void)rmm_rs::exchange_rust_per_device_resource(dev.value(), stats.handle().resource());
  auto ref = mr::get_per_device_resource_ref(dev);
  void* p  = ref.allocate(default_stream(), 512, 256);
  EXPECT_EQ(stats.get_bytes_counter().value, 512) << "C++ took over Rust's resource";
  ref.deallocate(default_stream(), p, 512, 256);
  EXPECT_EQ(stats.get_bytes_counter().value, 0);

  // A C++ setter then returns what Rust had set, and Rust agrees with C++ again.
  mr::pool_memory_resource pool{upstream, 0};
  auto previous = mr::set_per_device_resource(dev, pool);
  void* q       = rmm::device_async_resource_ref{previous}.allocate(default_stream(), 256, 256);
  EXPECT_EQ(stats.get_bytes_counter().value, 256) << "the previous resource is Rust's";
  rmm::device_async_resource_ref{previous}.deallocate(default_stream(), q, 256, 256);
  EXPECT_TRUE(rust_current_is(dev.value(), pool));

  // Rust code resets: C++ is back on its initial resource.
  (void)rmm_rs::reset_rust_per_device_resource(dev.value());
  both_on_the_initial_resource(dev.value());
}

TEST(PerDeviceTables, CurrentDeviceSettersAgreeToo)
{
  RMM_SKIP_WITHOUT_GPU();
  int const dev = rmm::get_current_cuda_device().value();
  new_delete_resource upstream;
  mr::statistics_resource_adaptor stats{upstream};

  mr::set_current_device_resource(any_device_resource{stats});
  EXPECT_TRUE(rust_current_is(dev, stats));
  mr::set_current_device_resource_ref(rmm::device_async_resource_ref{upstream});
  rust_allocates_from(dev, upstream);
  mr::set_current_device_resource(stats);
  EXPECT_TRUE(rust_current_is(dev, stats));
  mr::reset_current_device_resource_ref();
  both_on_the_initial_resource(dev);
}

TEST(PerDeviceTables, RmmInitializeAndFinalizeSetTheCppSideToo)
{
  RMM_SKIP_WITHOUT_GPU();
  mr::reset_current_device_resource();
  int const dev        = rmm::get_current_cuda_device().value();
  rmmOptions_t options = {PoolAllocation, std::size_t{1} << 20, false};
  ASSERT_EQ(rmmInitialize(&options), RMM_SUCCESS);

  auto ref            = mr::get_current_device_resource_ref();
  auto const* adopted = cuda::mr::resource_cast<mr::detail::rust_table_resource>(&ref);
  ASSERT_NE(adopted, nullptr) << "C++ serves the C API's pool";
  EXPECT_TRUE(rust_current_is(dev, *adopted));
  // Memory from the C++ reference is the C API pool's: it comes from its 1 MiB chunk.
  void* a = nullptr;
  ASSERT_EQ(rmmAlloc(&a, 256, nullptr, __FILE__, __LINE__), RMM_SUCCESS);
  void* b = ref.allocate(default_stream(), 256, 256);
  auto const distance = static_cast<char*>(b) - static_cast<char*>(a);
  EXPECT_LT(distance < 0 ? -distance : distance, 1 << 20);
  ref.deallocate(default_stream(), b, 256, 256);
  ASSERT_EQ(rmmFree(a, nullptr, __FILE__, __LINE__), RMM_SUCCESS);

  ASSERT_EQ(rmmFinalize(), RMM_SUCCESS);
  both_on_the_initial_resource(dev);
}

}  // namespace
