// The API surface a user's code compiles against, checked with requires-expressions so that a
// member one side lacks is recorded (false) instead of breaking the build; and the allocators
// (polymorphic_allocator, stream_allocator_adaptor), cuda_async pools made by the user.
#include "recording.hpp"

#include <rmm/cuda_stream_pool.hpp>
#include <rmm/device_buffer.hpp>
#include <rmm/device_scalar.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/exec_policy.hpp>
#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_async_view_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/fixed_size_memory_resource.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/polymorphic_allocator.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>

#include <utility>

namespace oracle {
namespace {

using namespace rmm::mr;
using ref_t = rmm::device_async_resource_ref;
using std::declval;
using sr = cuda::stream_ref;

#define ORACLE_API(name, ...) \
  add("api", name, [](trace& t) { t.add("present", []() -> bool { return __VA_ARGS__; }()); })
// A requires-expression over `v` (a T&) and `s` (a stream): templated, so a missing member is
// false rather than a compile error.
#define ORACLE_API_REQ(name, Type, ...)                                                     \
  add("api", name, [](trace& t) {                                                    \
    t.add("present", []<class T = Type>() { return requires(T& v, sr s) { __VA_ARGS__; }; }()); \
  })

void register_api_checks()
{
  ORACLE_API("device_buffer(stream,mr)", std::is_constructible_v<rmm::device_buffer, sr, any_dev>);
  ORACLE_API("device_buffer(size,stream)", std::is_constructible_v<rmm::device_buffer, std::size_t, sr>);
  ORACLE_API("device_buffer(size,align,stream,mr)",
      std::is_constructible_v<rmm::device_buffer, std::size_t, std::size_t, sr, any_dev>);
  ORACLE_API("device_buffer(ptr,size,align,stream,mr)",
      std::is_constructible_v<rmm::device_buffer, void const*, std::size_t, std::size_t, sr, any_dev>);
  ORACLE_API("device_buffer(other,stream,mr)",
      std::is_constructible_v<rmm::device_buffer, rmm::device_buffer const&, sr, any_dev>);
  ORACLE_API("!device_buffer(other)", !std::is_copy_constructible_v<rmm::device_buffer>);
  ORACLE_API_REQ("device_buffer.ssize", rmm::device_buffer, v.ssize());
  ORACLE_API_REQ("device_buffer.alignment", rmm::device_buffer, v.alignment());
  ORACLE_API_REQ("device_buffer.set_stream", rmm::device_buffer, v.set_stream(s));
  ORACLE_API_REQ("device_uvector.element_ptr", rmm::device_uvector<int>, v.element_ptr(0));
  ORACLE_API_REQ("device_uvector.set_element_to_zero_async", rmm::device_uvector<int>, v.set_element_to_zero_async(0, s));
  ORACLE_API_REQ("device_uvector.release", rmm::device_uvector<int>, v.release());
  ORACLE_API_REQ("device_uvector.ssize", rmm::device_uvector<int>, v.ssize());
  ORACLE_API("device_uvector.span", std::is_convertible_v<rmm::device_uvector<int>&, cuda::std::span<int>>);
  ORACLE_API_REQ("device_scalar.set_value_to_zero_async", rmm::device_scalar<int>, v.set_value_to_zero_async(s));
  ORACLE_API_REQ("cuda_async_view.allocate(stream,bytes)", cuda_async_view_memory_resource, v.allocate(s, std::size_t{1}));
  ORACLE_API_REQ("cuda_async_view.allocate(stream,bytes,align)", cuda_async_view_memory_resource, v.allocate(s, std::size_t{1}, std::size_t{256}));
  ORACLE_API_REQ("cuda_async_view.allocate_sync(bytes)", cuda_async_view_memory_resource, v.allocate_sync(std::size_t{1}));
  ORACLE_API_REQ("cuda_async_view.pool_handle", cuda_async_view_memory_resource, v.pool_handle());
  ORACLE_API("cuda_async_view()", std::is_default_constructible_v<cuda_async_view_memory_resource>);
  ORACLE_API_REQ("cuda_async.pool_handle", cuda_async_memory_resource, v.pool_handle());
  ORACLE_API_REQ("cuda_memory_resource.allocate(stream,bytes)", cuda_memory_resource, v.allocate(s, std::size_t{1}));
  ORACLE_API_REQ("pool.pool_size", pool_memory_resource, v.pool_size());
  ORACLE_API_REQ("pool.get_upstream_resource", pool_memory_resource, v.get_upstream_resource());
  ORACLE_API_REQ("binning.add_bin(size)", binning_memory_resource, v.add_bin(std::size_t{256}));
  ORACLE_API_REQ("fixed_size.get_block_size", fixed_size_memory_resource, v.get_block_size());
  ORACLE_API_REQ("limiting.get_allocation_limit", limiting_resource_adaptor, v.get_allocation_limit());
  ORACLE_API_REQ("statistics.push_counters", statistics_resource_adaptor, v.push_counters());
  ORACLE_API_REQ("tracking.log_outstanding_allocations", tracking_resource_adaptor, v.log_outstanding_allocations());
  ORACLE_API_REQ("logging.header", logging_resource_adaptor, v.header());
  ORACLE_API_REQ("logging.flush", logging_resource_adaptor, v.flush());
  ORACLE_API_REQ("logging.get_default_filename", logging_resource_adaptor, T::get_default_filename());
  ORACLE_API_REQ("cuda_stream_pool.get_stream(id)", rmm::cuda_stream_pool, v.get_stream(std::size_t{0}));
  ORACLE_API("exec_policy_nosync(stream,mr)",
      std::is_constructible_v<rmm::exec_policy_nosync, sr, any_dev>);
  ORACLE_API("polymorphic_allocator()", std::is_default_constructible_v<polymorphic_allocator<int>>);
  ORACLE_API_REQ("statistics.counter.add_counters_from_tracked_sub_block",
          statistics_resource_adaptor::counter, v.add_counters_from_tracked_sub_block(v));
  ORACLE_API("pool_copyable", std::is_copy_constructible_v<pool_memory_resource>);
  ORACLE_API("cuda_async_copyable", std::is_copy_constructible_v<cuda_async_memory_resource>);
  ORACLE_API("arena_copyable", std::is_copy_constructible_v<arena_memory_resource>);
}

void register_allocators()
{
  add("allocator", "polymorphic_allocator", [](trace& t) {
    auto log = std::make_shared<event_log>();
    recording_resource mr{any_dev{cuda_memory_resource{}}, log};
    polymorphic_allocator<int> a{mr};
    int* p = a.allocate(100, default_stream());
    t.add("nonnull", p != nullptr);
    a.deallocate(p, 100, default_stream());
    polymorphic_allocator<double> b{a};
    t.add("rebind==", a == b);
    polymorphic_allocator<int> d;
    t.add("default==", a == d);
    t.add("upstream==mr", a.get_upstream_resource() == ref_t{mr});
    t.add("events", log->events);
  });
  add("allocator", "stream_allocator_adaptor", [](trace& t) {
    auto log = std::make_shared<event_log>();
    recording_resource mr{any_dev{cuda_memory_resource{}}, log};
    polymorphic_allocator<int> a{mr};
    rmm::cuda_stream s;
    stream_allocator_adaptor<polymorphic_allocator<int>> adapted{a, cuda::stream_ref{s}};
    int* p       = std::allocator_traits<decltype(adapted)>::allocate(adapted, 10);
    std::allocator_traits<decltype(adapted)>::deallocate(adapted, p, 10);
    t.add("stream==s", adapted.stream() == cuda::stream_ref{s});
    t.add("underlying==a", adapted.underlying_allocator() == a);
    t.add("events", log->events);
  });
  add("cuda_async", "user_pool_view", [](trace& t) {
    cudaMemPoolProps props{};
    props.allocType     = cudaMemAllocationTypePinned;
    props.handleTypes   = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id   = 0;
    cudaMemPool_t pool{};
    if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) {
      cudaGetLastError();
      throw skip{"cudaMemPoolCreate failed"};
    }
    {
      cuda_async_view_memory_resource v{pool};
      t.add("pool_handle==", v.pool_handle() == pool);
      void* p = nullptr;
      if (t.call("allocate", [&] {
            p = v.allocate(default_stream(), 4096, 256);
            return true;
          })) {
        t.add("mem_device", memory_device(p));
        v.deallocate(default_stream(), p, 4096, 256);
      }
      cuda_async_view_memory_resource w{pool};
      t.add("same_pool==", v == w);
      cudaStreamSynchronize(nullptr);
    }
    cudaMemPoolDestroy(pool);
  });
  // A view of a pool the user destroyed after making the view: cudaMallocFromPoolAsync fails with
  // a CUDA error other than out-of-memory. Recorded: the exception's type and whether its message
  // names a CUDA error (RMM spells the runtime's name after a source path, rmm-rs the driver's).
  add("cuda_async", "view_of_destroyed_user_pool", [](trace& t) {
    cudaMemPoolProps props{};
    props.allocType     = cudaMemAllocationTypePinned;
    props.handleTypes   = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id   = 0;
    cudaMemPool_t pool{};
    if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) {
      cudaGetLastError();
      throw skip{"cudaMemPoolCreate failed"};
    }
    cuda_async_view_memory_resource v{pool};
    v.deallocate(default_stream(), v.allocate(default_stream(), 4096, 256), 4096, 256);
    cudaStreamSynchronize(nullptr);
    t.add("destroy", static_cast<int>(cudaMemPoolDestroy(pool)));
    auto failure = [&](std::string const& label, auto&& f) {
      try {
        f();
        t.add(label, "no error");
      } catch (std::exception const& e) {
        std::string const what = e.what();
        t.call(label, [&] { throw; });
        t.add(label + ".names_cuda_error",
              what.find("cudaError") != std::string::npos || what.find("CUDA_ERROR_") != std::string::npos);
      }
    };
    failure("allocate", [&] { (void)v.allocate(default_stream(), 4096, 256); });
    statistics_resource_adaptor stats{v};
    failure("statistics", [&] { (void)stats.allocate(default_stream(), 4096, 256); });
    t.add("statistics.count", static_cast<std::size_t>(stats.get_allocations_counter().total));
    pool_memory_resource over{v, 0};
    failure("pool_grows", [&] { (void)over.allocate(default_stream(), 4096, 256); });
    failure("pool_initial", [&] { pool_memory_resource{v, 1 << 20}; });
    cudaGetLastError();
  });
  add("cuda_async", "handles", [](trace& t) {
    cuda_async_memory_resource a;
    auto b = a;
    cuda_async_memory_resource c;
    t.add("copy.pool_handle==", a.pool_handle() == b.pool_handle());
    t.add("other.pool_handle==", a.pool_handle() == c.pool_handle());
    cudaMemPool_t def{};
    cudaDeviceGetDefaultMemPool(&def, 0);
    t.add("not_default_pool", a.pool_handle() != def);
    t.add("copy==", a == b);
    t.add("other==", a == c);
  });
  for (auto [init, rel] : std::vector<std::pair<std::size_t, std::size_t>>{
         {0, 0}, {1 << 20, 0}, {1 << 20, 1 << 22}, {1000, 1000}, {1 << 22, 1 << 20}}) {
    add("cuda_async",
        "sizes_" + std::to_string(init) + "_" + std::to_string(rel), [init, rel](trace& t) {
          std::optional<cuda_async_memory_resource> a;
          if (!t.call_msg("construct", [&] {
                a.emplace(init, rel);
                return true;
              })) {
            return;
          }
          std::uint64_t thr = 0;
          cudaMemPoolGetAttribute(a->pool_handle(), cudaMemPoolAttrReleaseThreshold, &thr);
          t.add("release_threshold", static_cast<std::size_t>(thr));
          void* p = a->allocate(default_stream(), 1000, 256);
          a->deallocate(default_stream(), p, 1000, 256);
          cudaStreamSynchronize(nullptr);
          std::uint64_t reserved = 0;
          cudaMemPoolGetAttribute(a->pool_handle(), cudaMemPoolAttrReservedMemCurrent, &reserved);
          t.add("reserved>0", reserved > 0);
        });
  }
  add("cuda_async", "export_handle_none", [](trace& t) {
    t.call_msg("construct", [&] {
      cuda_async_memory_resource a{std::nullopt, std::nullopt,
                                   cuda_async_memory_resource::allocation_handle_type::none};
      return true;
    });
    t.call_msg("posix_fd", [&] {
      cuda_async_memory_resource a{std::nullopt, std::nullopt,
                                   cuda_async_memory_resource::allocation_handle_type::posix_file_descriptor};
      void* p = a.allocate(default_stream(), 1000, 256);
      a.deallocate(default_stream(), p, 1000, 256);
      return true;
    });
  });
}

}  // namespace

void register_api()
{
  register_api_checks();
  register_allocators();
}

}  // namespace oracle
