// Streams and stream pools, devices, per-device resources, aligned.hpp, the error macros'
// exception types and messages, randomised allocate/free sequences (the same seed on both sides),
// and the two-GPU scenarios (containers made on device 0 used with device 1 current, per-device
// resources on each device), skipped with a reason on one GPU.
#include "recording.hpp"

#include <rmm/aligned.hpp>
#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/cuda_stream_pool.hpp>
#include <rmm/cuda_stream_view.hpp>
#include <rmm/device_buffer.hpp>
#include <rmm/device_scalar.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/fixed_size_memory_resource.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>

#include <optional>
#include <random>
#include <set>

namespace oracle {
namespace {

using namespace rmm::mr;
using ref_t               = rmm::device_async_resource_ref;
constexpr std::size_t MiB = std::size_t{1} << 20;

void register_streams()
{
  auto const A = std::string{"stream"};
  add(A, "cuda_stream", [](trace& t) {
    rmm::cuda_stream s;
    t.add("is_valid", s.is_valid());
    t.add("value_nonnull", s.value() != nullptr);
    t.call("synchronize", [&] { s.synchronize(); });
    rmm::cuda_stream moved{std::move(s)};
    t.add("moved.is_valid", moved.is_valid());
    t.add("moved_from.is_valid", s.is_valid());
    rmm::cuda_stream nb{rmm::cuda_stream::flags::non_blocking};
    unsigned int fl = 0;
    cudaStreamGetFlags(nb.value(), &fl);
    t.add("non_blocking_flag", fl == cudaStreamNonBlocking);
  });
  add(A, "stream_view", [](trace& t) {
    rmm::cuda_stream_view d{};
    t.add("default.is_default", d.is_default());
    t.add("default.is_per_thread_default", d.is_per_thread_default());
    rmm::cuda_stream_view pt{cudaStreamPerThread};
    t.add("per_thread.is_per_thread_default", pt.is_per_thread_default());
    t.add("per_thread.is_default", pt.is_default());
    rmm::cuda_stream_view lg{cudaStreamLegacy};
    t.add("legacy.is_default", lg.is_default());
    t.add("legacy.is_per_thread_default", lg.is_per_thread_default());
    rmm::cuda_stream s;
    rmm::cuda_stream_view v{s.value()};
    t.add("own.is_default", v.is_default());
    t.add("own==", v == rmm::cuda_stream_view{s.value()});
    t.add("own!=default", v != d);
    t.call("synchronize", [&] { v.synchronize(); });
    t.add("constants.default_is_default",
          rmm::cuda_stream_view{rmm::cuda_stream_default}.is_default());
    t.add("constants.per_thread",
          rmm::cuda_stream_view{rmm::cuda_stream_per_thread}.is_per_thread_default());
  });
  for (std::size_t n : {std::size_t{1}, std::size_t{4}, std::size_t{16}, std::size_t{0}}) {
    add(A, "pool_" + std::to_string(n), [n](trace& t) {
      std::optional<rmm::cuda_stream_pool> p;
      if (!t.call_msg("construct", [&] {
            p.emplace(n);
            return true;
          })) {
        return;
      }
      t.add("size", p->get_pool_size());
      std::set<cudaStream_t> seen;
      for (std::size_t i = 0; i < 2 * n; ++i) { seen.insert(p->get_stream().get()); }
      t.add("distinct_round_robin", seen.size());
      t.add("by_id_wraps", p->get_stream(0) == p->get_stream(n));
      t.add("by_id_nondefault", p->get_stream(0).get() != nullptr);
    });
  }
  add(A, "pool_default_size", [](trace& t) {
    rmm::cuda_stream_pool p;
    t.add("size", p.get_pool_size());
    t.add("default_size", rmm::cuda_stream_pool::default_size);
  });
}

void register_devices()
{
  auto const A = std::string{"device"};
  add(A, "facts", [](trace& t) {
    t.add("current", rmm::get_current_cuda_device().value());
    t.add("num_matches_runtime", rmm::get_num_cuda_devices() == device_count());
    auto [free_b, total_b] = rmm::available_device_memory();
    t.add("free<=total", free_b <= total_b);
    t.add("total>0", total_b > 0);
    auto p = rmm::percent_of_free_device_memory(50);
    t.add("percent50_le_free", p <= free_b);
    t.add("percent50_aligned", p % 256 == 0);
    t.add("percent50>0", p > 0);
    t.add("id==", rmm::cuda_device_id{0} == rmm::cuda_device_id{0});
    t.add("id!=", rmm::cuda_device_id{0} != rmm::cuda_device_id{1});
  });
  add(A, "set_device_raii", [](trace& t) {
    {
      rmm::cuda_set_device_raii raii{rmm::cuda_device_id{0}};
      t.add("inside", current_device());
    }
    t.add("after", current_device());
  });
  add(A, "set_device_raii_invalid", [](trace& t) {
    t.call("raii(99)", [&] {
      rmm::cuda_set_device_raii raii{rmm::cuda_device_id{99}};
      return current_device();
    });
    cudaGetLastError();
    t.add("after", current_device());
  });
}

/// A cuda_memory_resource to compare refs against.
cuda_memory_resource& cm()
{
  static cuda_memory_resource c;
  return c;
}

void register_per_device()
{
  auto const A = std::string{"per_device"};
  add(A, "initial", [](trace& t) {
    auto r = get_current_device_resource_ref();
    t.add("==cuda_memory_resource", r == ref_t{cm()});
    t.add("==per_device(0)", r == get_per_device_resource_ref(rmm::cuda_device_id{0}));
    void* p = r.allocate(default_stream(), 1000, 256);
    t.ptr("p", p);
    r.deallocate(default_stream(), p, 1000, 256);
  });
  add(A, "set_get_reset", [](trace& t) {
    statistics_resource_adaptor st{cuda_memory_resource{}};
    auto old = set_current_device_resource(st);
    t.add("old==cuda", ref_t{old} == ref_t{cm()});
    t.add("current==st", get_current_device_resource_ref() == ref_t{st});
    {
      rmm::device_buffer b{1000, default_stream()};
      t.add("allocs", st.get_allocations_counter().value);
    }
    auto prev = reset_current_device_resource();
    t.add("reset_returned_st", ref_t{prev} == ref_t{st});
    t.add("after_reset==cuda", get_current_device_resource_ref() == ref_t{cm()});
  });
  add(A, "set_per_device", [](trace& t) {
    statistics_resource_adaptor st{cuda_memory_resource{}};
    auto old = set_per_device_resource(rmm::cuda_device_id{0}, st);
    t.add("current==st", get_current_device_resource_ref() == ref_t{st});
    auto back = set_per_device_resource(rmm::cuda_device_id{0}, std::move(old));
    t.add("back==st", ref_t{back} == ref_t{st});
    t.add("restored", get_current_device_resource_ref() == ref_t{cm()});
  });
  add(A, "resource_outlives_setter", [](trace& t) {
    {
      pool_memory_resource p{cuda_memory_resource{}, MiB};
      set_current_device_resource(p);
    }
    // The per-device map owns a copy (any_resource): still usable.
    t.call("allocate", [&] {
      auto r  = get_current_device_resource_ref();
      void* q = r.allocate(default_stream(), 1000, 256);
      r.deallocate(default_stream(), q, 1000, 256);
      return true;
    });
    reset_current_device_resource();
  });
  add(A, "invalid_device", [](trace& t) {
    t.call("get(-1)", [&] {
      return get_per_device_resource_ref(rmm::cuda_device_id{-1}) ==
             ref_t{cm()};
    });
  });
}

void register_aligned_fns()
{
  auto const A = std::string{"aligned_fns"};
  std::vector<std::size_t> const values{0, 1, 7, 8, 255, 256, 257, 4095, 4096, 4097};
  std::vector<std::size_t> const als{1, 2, 8, 256, 4096};
  for (auto al : als) {
    add(A, "al" + std::to_string(al), [al, values](trace& t) {
      t.add("supported", rmm::is_supported_alignment(al));
      std::vector<std::size_t> up, down;
      std::vector<bool> is;
      for (auto v : values) {
        up.push_back(rmm::align_up(v, al));
        down.push_back(rmm::align_down(v, al));
        is.push_back(rmm::is_aligned(v, al));
      }
      t.add("up", up);
      t.add("down", down);
      t.add("is", is);
      t.add("ptr", rmm::is_pointer_aligned(reinterpret_cast<void*>(4096), al));
    });
  }
  add(A, "supported", [](trace& t) {
    std::vector<bool> v;
    for (std::size_t a : {0, 1, 2, 3, 6, 256, 512, 1000, 1 << 20}) {
      v.push_back(rmm::is_supported_alignment(a));
    }
    t.add("supported", v);
    t.add("CUDA_ALLOCATION_ALIGNMENT", rmm::CUDA_ALLOCATION_ALIGNMENT);
    t.add("ptr_default", rmm::is_pointer_aligned(reinterpret_cast<void*>(512)));
    t.add("ptr_default_odd", rmm::is_pointer_aligned(reinterpret_cast<void*>(300)));
  });
}

void register_errors()
{
  auto const A = std::string{"error"};
  add(A, "expects_default", [](trace& t) {
    t.call_msg("RMM_EXPECTS", [] { RMM_EXPECTS(1 == 2, "custom reason"); });
    t.call_msg("RMM_EXPECTS_true", [] { RMM_EXPECTS(1 == 1, "never"); });
  });
  add(A, "expects_typed", [](trace& t) {
    t.call_msg("out_of_memory", [] { RMM_EXPECTS(false, "oom reason", rmm::out_of_memory); });
    t.call_msg("bad_alloc", [] { RMM_EXPECTS(false, "ba reason", rmm::bad_alloc); });
    t.call_msg("invalid_argument", [] { RMM_EXPECTS(false, "ia reason", std::invalid_argument); });
  });
  add(A, "fail", [](trace& t) {
    t.call_msg("RMM_FAIL", [] { RMM_FAIL("failed here"); });
    t.call_msg("RMM_FAIL_typed", [] { RMM_FAIL("typed", rmm::out_of_memory); });
  });
  add(A, "cuda_try", [](trace& t) {
    t.call_msg("success", [] { RMM_CUDA_TRY(cudaSuccess); });
    t.call_msg("invalid_value", [] { RMM_CUDA_TRY(cudaErrorInvalidValue); });
    t.call_msg("memory_allocation", [] { RMM_CUDA_TRY(cudaErrorMemoryAllocation); });
    t.call_msg("typed", [] { RMM_CUDA_TRY(cudaErrorInvalidValue, rmm::bad_alloc); });
  });
  add(A, "cuda_try_alloc", [](trace& t) {
    t.call_msg("oom", [] { RMM_CUDA_TRY_ALLOC(cudaErrorMemoryAllocation, 12345); });
    t.call_msg("other", [] { RMM_CUDA_TRY_ALLOC(cudaErrorInvalidValue, 12345); });
    t.call_msg("ok", [] { RMM_CUDA_TRY_ALLOC(cudaSuccess, 1); });
  });
  add(A, "hierarchy", [](trace& t) {
    t.add("oom_is_bad_alloc", std::is_base_of_v<rmm::bad_alloc, rmm::out_of_memory>);
    t.add("bad_alloc_is_std", std::is_base_of_v<std::bad_alloc, rmm::bad_alloc>);
    t.add("logic_is_std_logic", std::is_base_of_v<std::logic_error, rmm::logic_error>);
    t.add("cuda_error_is_runtime", std::is_base_of_v<std::runtime_error, rmm::cuda_error>);
    t.add("oom_what", std::string{rmm::out_of_memory{"m1"}.what()});
    t.add("bad_alloc_what", std::string{rmm::bad_alloc{"m2"}.what()});
    t.add("logic_what", std::string{rmm::logic_error{"m3"}.what()});
  });
}

}  // namespace

/// A random allocate/free sequence over `ref`; records the outcome of each step compactly.
void random_sequence(trace& t, ref_t ref, std::uint64_t seed, std::size_t max_bytes, int steps)
{
  std::mt19937_64 rng{seed};
  std::vector<std::pair<void*, std::size_t>> live;
  std::string outcomes;
  int fails = 0;
  for (int i = 0; i < steps; ++i) {
    bool do_alloc = live.empty() || (rng() % 100) < 60;
    if (do_alloc) {
      std::size_t n = (rng() % 4 == 0) ? 0 : static_cast<std::size_t>(rng() % max_bytes);
      try {
        void* p = ref.allocate(default_stream(), n, 256);
        live.emplace_back(p, n);
        outcomes += 'a';
      } catch (rmm::out_of_memory const&) {
        outcomes += 'o';
        ++fails;
      } catch (std::exception const&) {
        outcomes += 'x';
        ++fails;
      }
    } else {
      std::size_t k = static_cast<std::size_t>(rng() % live.size());
      ref.deallocate(default_stream(), live[k].first, live[k].second, 256);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      outcomes += 'f';
    }
  }
  t.add("outcomes", outcomes);
  t.add("fails", fails);
  t.add("live", live.size());
  for (auto& [p, n] : live) { ref.deallocate(default_stream(), p, n, 256); }
  t.add("sync", cudaDeviceSynchronize() == cudaSuccess);
}

namespace {

void register_random()
{
  struct cfg {
    std::string name;
    std::function<any_dev(any_dev)> wrap;  // over a 32 MiB limiting upstream
  };
  std::vector<cfg> const cfgs{
    {"limiting", [](any_dev up) { return up; }},
    {"pool", [](any_dev up) { return any_dev{pool_memory_resource{std::move(up), 0}}; }},
    {"pool_max",
     [](any_dev up) { return any_dev{pool_memory_resource{std::move(up), 0, 16 * MiB}}; }},
    {"arena", [](any_dev up) { return any_dev{arena_memory_resource{std::move(up), 16 * MiB}}; }},
    {"binning",
     [](any_dev up) { return any_dev{binning_memory_resource{std::move(up), 8, 16}}; }},
    {"fixed_size",
     [](any_dev up) { return any_dev{fixed_size_memory_resource{std::move(up), MiB, 4}}; }},
    {"tracking", [](any_dev up) { return any_dev{tracking_resource_adaptor{std::move(up)}}; }},
  };
  for (auto const& c : cfgs) {
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      auto wrap = c.wrap;
      add("random/" + c.name, "seed" + std::to_string(seed), [wrap, seed](trace& t) {
        limiting_resource_adaptor lim{cuda_memory_resource{}, 32 * MiB};
        statistics_resource_adaptor top{wrap(any_dev{lim})};
        std::size_t max_bytes = (seed % 2) ? 3 * MiB : 20000;
        random_sequence(t, ref_t{top}, seed, max_bytes, 400);
        auto b = top.get_bytes_counter();
        auto a = top.get_allocations_counter();
        t.add("bytes", std::vector<long long>{b.value, b.peak, b.total});
        t.add("allocs", std::vector<long long>{a.value, a.peak, a.total});
      });
    }
  }
}

// --- Two GPUs -------------------------------------------------------------------------------

struct rec2 {
  std::shared_ptr<event_log> log = std::make_shared<event_log>();
  recording_resource mr{any_dev{cuda_memory_resource{}}, log};
  void dump(trace& t, std::string const& label)
  {
    std::lock_guard<std::mutex> g{log->mu};
    t.add(label, log->events);
    log->events.clear();
  }
};

cuda::stream_ref s0() { return default_stream(); }

void register_two_gpu()
{
  auto const A = std::string{"multi_gpu"};
  add(A, "buffer_resize_shrink_on_other_device", [](trace& t) {
    need_devices(2);
    rec2 r;
    cudaSetDevice(0);
    rmm::device_buffer b{1000, s0(), r.mr};
    r.dump(t, "ctor");
    cudaSetDevice(1);
    t.call_msg("resize", [&] { b.resize(5000, s0()); });
    r.dump(t, "resize");
    t.call_msg("resize_down", [&] { b.resize(100, s0()); });
    t.call_msg("shrink_to_fit", [&] { b.shrink_to_fit(s0()); });
    r.dump(t, "shrink");
    t.call_msg("reserve", [&] { b.reserve(10000, s0()); });
    r.dump(t, "reserve");
    t.add("current_after", current_device());
    t.add("size", b.size());
    t.add("capacity", b.capacity());
    t.add("mem_device", memory_device(b.data()));
  });
  add(A, "buffer_copy_and_destroy_on_other_device", [](trace& t) {
    need_devices(2);
    rec2 r;
    cudaSetDevice(0);
    {
      rmm::device_buffer b{4096, s0(), r.mr};
      cudaMemset(b.data(), 5, 4096);
      cudaSetDevice(1);
      t.call_msg("copy", [&] {
        rmm::device_buffer c{b, s0(), r.mr};
        t.add("copy.mem_device", memory_device(c.data()));
        return c.size();
      });
      r.dump(t, "copy");
    }
    r.dump(t, "destroy");
    t.add("current_after", current_device());
  });
  add(A, "uvector_on_other_device", [](trace& t) {
    need_devices(2);
    rec2 r;
    cudaSetDevice(0);
    {
      rmm::device_uvector<int> v{100, s0(), r.mr};
      v.set_element(5, 55, s0());
      cudaSetDevice(1);
      t.call_msg("resize", [&] { v.resize(1000, s0()); });
      t.call_msg("element", [&] { return v.element(5, s0()); });
      t.call_msg("shrink", [&] {
        v.resize(10, s0());
        v.shrink_to_fit(s0());
      });
      t.call_msg("element_after", [&] { return v.element(5, s0()); });
      r.dump(t, "ops");
      t.add("current_during", current_device());
    }
    r.dump(t, "destroy");
  });
  add(A, "scalar_on_other_device", [](trace& t) {
    need_devices(2);
    rec2 r;
    cudaSetDevice(0);
    {
      int const init = 9;
      rmm::device_scalar<int> s{init, s0(), r.mr};
      cudaSetDevice(1);
      t.call_msg("value", [&] { return s.value(s0()); });
      int v = 11;
      t.call_msg("set", [&] { s.set_value_async(v, s0()); });
      t.call_msg("value2", [&] { return s.value(s0()); });
      r.dump(t, "ops");
    }
    r.dump(t, "destroy");
  });
  add(A, "move_buffer_destroy_on_other_device", [](trace& t) {
    need_devices(2);
    rec2 r;
    cudaSetDevice(0);
    auto b = std::make_unique<rmm::device_buffer>(2048, s0(), r.mr);
    cudaSetDevice(1);
    rmm::device_buffer moved{std::move(*b)};
    b.reset();
    r.dump(t, "after_move");
    t.call_msg("resize_moved", [&] { moved.resize(4096, s0()); });
    r.dump(t, "resize");
  });
  add(A, "per_device_each", [](trace& t) {
    need_devices(2);
    statistics_resource_adaptor st0{cuda_memory_resource{}};
    cudaSetDevice(1);
    statistics_resource_adaptor st1{cuda_memory_resource{}};
    cudaSetDevice(0);
    auto old0 = set_per_device_resource(rmm::cuda_device_id{0}, st0);
    auto old1 = set_per_device_resource(rmm::cuda_device_id{1}, st1);
    t.add("dev0_ref==st0", get_per_device_resource_ref(rmm::cuda_device_id{0}) == ref_t{st0});
    t.add("dev1_ref==st1", get_per_device_resource_ref(rmm::cuda_device_id{1}) == ref_t{st1});
    t.add("current(0)==st0", get_current_device_resource_ref() == ref_t{st0});
    cudaSetDevice(1);
    t.add("current(1)==st1", get_current_device_resource_ref() == ref_t{st1});
    {
      rmm::device_buffer b{1000, s0()};
      t.add("mem_device", memory_device(b.data()));
      t.add("st1_allocs", st1.get_allocations_counter().value);
      t.add("st0_allocs", st0.get_allocations_counter().value);
    }
    cudaSetDevice(0);
    set_per_device_resource(rmm::cuda_device_id{0}, std::move(old0));
    set_per_device_resource(rmm::cuda_device_id{1}, std::move(old1));
  });
  add(A, "initial_per_device", [](trace& t) {
    need_devices(2);
    auto r0 = get_per_device_resource_ref(rmm::cuda_device_id{0});
    auto r1 = get_per_device_resource_ref(rmm::cuda_device_id{1});
    t.add("r0==r1", r0 == r1);
    cudaSetDevice(1);
    void* p = r1.allocate(default_stream(), 1000, 256);
    t.add("mem_device", memory_device(p));
    r1.deallocate(default_stream(), p, 1000, 256);
  });
  add(A, "pool_made_on_0_used_on_1", [](trace& t) {
    need_devices(2);
    cudaSetDevice(0);
    pool_memory_resource p{cuda_memory_resource{}, MiB};
    cudaSetDevice(1);
    void* q = nullptr;
    t.call("allocate", [&] {
      q = p.allocate(default_stream(), 1000, 256);
      return true;
    });
    t.add("mem_device", memory_device(q));
    if (q) { p.deallocate(default_stream(), q, 1000, 256); }
    cudaSetDevice(0);
  });
  add(A, "async_made_on_0_used_on_1", [](trace& t) {
    need_devices(2);
    cudaSetDevice(0);
    cuda_async_memory_resource a;
    cudaSetDevice(1);
    void* q = nullptr;
    t.call("allocate", [&] {
      q = a.allocate(default_stream(), 1000, 256);
      return true;
    });
    t.add("mem_device", memory_device(q));
    if (q) { a.deallocate(default_stream(), q, 1000, 256); }
    cudaDeviceSynchronize();
    cudaSetDevice(0);
  });
  add(A, "uvector_copy_on_other_device", [](trace& t) {
    need_devices(2);
    rec2 r;
    cudaSetDevice(0);
    rmm::device_uvector<int> v{16, s0(), r.mr};
    v.set_element(3, 33, s0());
    cudaSetDevice(1);
    t.call_msg("copy", [&] {
      rmm::device_uvector<int> w{v, s0(), r.mr};
      t.add("copy.mem_device", memory_device(w.data()));
      return w.element(3, s0());
    });
    r.dump(t, "events");
  });
  for (int made_on = 0; made_on < 2; ++made_on) {
    struct kind {
      char const* name;
      std::function<any_dev()> make;
    };
    std::vector<kind> const kinds{
      {"pool", [] { return any_dev{pool_memory_resource{cuda_memory_resource{}, 0}}; }},
      {"arena", [] { return any_dev{arena_memory_resource{cuda_memory_resource{}, 16 * MiB}}; }},
      {"cuda_async", [] { return any_dev{cuda_async_memory_resource{}}; }},
      {"binning", [] { return any_dev{binning_memory_resource{cuda_memory_resource{}, 8, 12}}; }},
      {"statistics", [] { return any_dev{statistics_resource_adaptor{cuda_memory_resource{}}}; }},
    };
    for (auto const& k : kinds) {
      auto make = k.make;
      add(A, std::string{k.name} + "_made_on_" + std::to_string(made_on) + "_used_on_other",
          [make, made_on](trace& t) {
            need_devices(2);
            cudaSetDevice(made_on);
            std::optional<any_dev> r;
            if (!t.call("construct", [&] {
                  r.emplace(make());
                  return true;
                })) {
              return;
            }
            cudaSetDevice(1 - made_on);
            for (std::size_t n : {std::size_t{1000}, 2 * MiB}) {
              void* q = nullptr;
              auto l  = "alloc" + std::to_string(n);
              if (t.call(l, [&] {
                    q = r->allocate(default_stream(), n, 256);
                    return true;
                  })) {
                t.add(l + ".mem_device", memory_device(q));
                r->deallocate(default_stream(), q, n, 256);
              }
            }
            t.add("sync", cudaDeviceSynchronize() == cudaSuccess);
            cudaSetDevice(made_on);
            r.reset();
            t.add("current_after", current_device());
          });
    }
  }
  for (int dev = 0; dev < 2; ++dev) {
    add(A, "recording_on_device" + std::to_string(dev), [dev](trace& t) {
      need_devices(2);
      rec2 r;
      cudaSetDevice(dev);
      {
        rmm::device_uvector<int> v{64, s0(), r.mr};
        v.resize(128, s0());
        v.shrink_to_fit(s0());
      }
      r.dump(t, "events");
    });
  }
}

}  // namespace

void register_misc()
{
  register_streams();
  register_devices();
  register_per_device();
  register_aligned_fns();
  register_errors();
  register_random();
  register_two_gpu();
}

}  // namespace oracle
