// The per-device resource table. The by-id functions work without a GPU (the initial resource
// makes no CUDA call until it allocates); the current-device ones need one.

#include "test_utils.hpp"

#include <rmm/cuda_stream.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

namespace {

using rmm::test::default_stream;
using rmm::test::new_delete_resource;

TEST(PerDevice, InitialResourceIsCudaMemoryResource)
{
  rmm::cuda_device_id const dev{0};
  rmm::mr::reset_per_device_resource(dev);
  EXPECT_TRUE(rmm::mr::get_per_device_resource_ref(dev) ==
              rmm::device_async_resource_ref{rmm::mr::detail::initial_resource()});
  rmm::mr::cuda_memory_resource another;
  EXPECT_TRUE(rmm::mr::get_per_device_resource_ref(dev) == rmm::device_async_resource_ref{another})
    << "cuda_memory_resource instances are interchangeable";
}

TEST(PerDevice, SetReturnsThePreviousResourceAndGetSeesTheNewOne)
{
  rmm::cuda_device_id const dev{0};
  new_delete_resource upstream;
  rmm::mr::pool_memory_resource pool{upstream, 0};  // empty: no device sync, runs anywhere
  auto previous = rmm::mr::set_per_device_resource(dev, pool);
  EXPECT_TRUE(rmm::device_async_resource_ref{previous} ==
              rmm::device_async_resource_ref{rmm::mr::detail::initial_resource()});
  EXPECT_TRUE(rmm::mr::get_per_device_resource_ref(dev) == rmm::device_async_resource_ref{pool});

  // The table owns a copy: allocation through it reaches the same pool.
  void* p = rmm::mr::get_per_device_resource_ref(dev).allocate(default_stream(), 1000, 256);
  pool.deallocate(default_stream(), p, 1000);

  // Rust code sees it too.
  auto rust_side = rmm_rs::get_rust_per_device_resource(0);
  EXPECT_TRUE(rust_side->resource().is_equal(pool.handle().resource()));

  auto replaced = rmm::mr::reset_per_device_resource(dev);
  EXPECT_TRUE(rmm::device_async_resource_ref{replaced} == rmm::device_async_resource_ref{pool});
  EXPECT_FALSE(rmm_rs::get_rust_per_device_resource(0)->resource().is_equal(pool.handle().resource()));
}

TEST(PerDevice, DevicesAreIndependent)
{
  new_delete_resource upstream;
  rmm::mr::pool_memory_resource a{upstream, 0};
  rmm::mr::pool_memory_resource b{upstream, 0};
  rmm::mr::set_per_device_resource(rmm::cuda_device_id{0}, a);
  rmm::mr::set_per_device_resource_ref(rmm::cuda_device_id{1}, b);  // the 25.x name, by reference
  EXPECT_TRUE(rmm::mr::get_per_device_resource_ref(rmm::cuda_device_id{0}) == rmm::device_async_resource_ref{a});
  EXPECT_TRUE(rmm::mr::get_per_device_resource_ref(rmm::cuda_device_id{1}) == rmm::device_async_resource_ref{b});
  rmm::mr::reset_per_device_resource(rmm::cuda_device_id{0});
  rmm::mr::reset_per_device_resource_ref(rmm::cuda_device_id{1});
}

TEST(PerDevice, CurrentDeviceResourceFeedsContainers)
{
  RMM_SKIP_WITHOUT_GPU();
  rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 1 << 20};
  rmm::mr::statistics_resource_adaptor stats{pool};
  rmm::mr::set_current_device_resource(stats);
  EXPECT_TRUE(rmm::mr::get_current_device_resource_ref() == rmm::device_async_resource_ref{stats});
  {
    rmm::cuda_stream stream;
    rmm::device_uvector<int> v(1000, stream);
    EXPECT_EQ(stats.get_allocations_counter().value, 1);
  }
  EXPECT_EQ(stats.get_allocations_counter().value, 0);
  rmm::mr::set_current_device_resource_ref(rmm::device_async_resource_ref{pool});
  EXPECT_TRUE(rmm::mr::get_current_device_resource_ref() == rmm::device_async_resource_ref{pool});
  rmm::mr::reset_current_device_resource();
  EXPECT_TRUE(rmm::mr::get_current_device_resource_ref() ==
              rmm::device_async_resource_ref{rmm::mr::detail::initial_resource()});
}

}  // namespace
