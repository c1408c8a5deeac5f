// More edges: user callbacks that throw (allocate, deallocate, failure callback), device_scalar
// over several types, logging over a pool and two loggers on one stream, per-device resources
// used by containers, prefetch and thread_safe over other resources.
#include "helpers.hpp"
#include "recording.hpp"

#include <rmm/device_scalar.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/mr/callback_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/failure_callback_resource_adaptor.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/managed_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/prefetch_resource_adaptor.hpp>
#include <rmm/mr/thread_safe_resource_adaptor.hpp>

#include <sstream>

namespace oracle {
namespace {

using namespace rmm::mr;
constexpr std::size_t MiB = std::size_t{1} << 20;

void* cuda_alloc(std::size_t n)
{
  void* p = nullptr;
  if (cudaMalloc(&p, n == 0 ? 1 : n) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return p;
}

void register_callback_edges()
{
  auto const A = std::string{"callback"};
  add(A, "deallocate_throws", [](trace& t) {
    callback_memory_resource r{
      [](std::size_t n, cuda::stream_ref, void*) { return cuda_alloc(n); },
      [](void* p, std::size_t, cuda::stream_ref, void*) {
        cudaFree(p);
        throw std::runtime_error{"user deallocate"};
      }};
    void* p = try_alloc(t, "a", r, 1000);
    t.call("deallocate", [&] { r.deallocate(default_stream(), p, 1000, 256); });
    t.add("survived", true);
  });
  add(A, "throws_bad_alloc", [](trace& t) {
    callback_memory_resource r{
      [](std::size_t, cuda::stream_ref, void*) -> void* { throw std::bad_alloc{}; },
      [](void*, std::size_t, cuda::stream_ref, void*) {}};
    t.call("allocate", [&] { return r.allocate(default_stream(), 10, 256) != nullptr; });
  });
  add(A, "throws_int", [](trace& t) {
    callback_memory_resource r{[](std::size_t, cuda::stream_ref, void*) -> void* { throw 7; },
                               [](void*, std::size_t, cuda::stream_ref, void*) {}};
    t.call("allocate", [&] { return r.allocate(default_stream(), 10, 256) != nullptr; });
  });
  add(A, "under_statistics_null", [](trace& t) {
    callback_memory_resource r{[](std::size_t, cuda::stream_ref, void*) -> void* { return nullptr; },
                               [](void*, std::size_t, cuda::stream_ref, void*) {}};
    statistics_resource_adaptor st{r};
    void* p = nullptr;
    t.call("allocate", [&] {
      p = st.allocate(default_stream(), 100, 256);
      return p == nullptr;
    });
    counters(t, "st", st);
  });
  add(A, "alignment_passed", [](trace& t) {
    std::vector<std::size_t> seen;
    callback_memory_resource r{[&seen](std::size_t n, cuda::stream_ref, void*) {
                                 seen.push_back(n);
                                 return cuda_alloc(n);
                               },
                               [](void* p, std::size_t, cuda::stream_ref, void*) { cudaFree(p); }};
    for (std::size_t al : {std::size_t{1}, std::size_t{256}, std::size_t{4096}}) {
      void* p = nullptr;
      if (t.call("a" + std::to_string(al), [&] {
            p = r.allocate(default_stream(), 100, al);
            return true;
          })) {
        r.deallocate(default_stream(), p, 100, al);
      }
    }
    t.add("sizes_seen", seen);
  });

  auto const F = std::string{"failure_callback"};
  add(F, "callback_throws", [](trace& t) {
    failure_callback_resource_adaptor<> r{limiting_resource_adaptor{cuda_memory_resource{}, 1024},
                                          [](std::size_t, void*) -> bool {
                                            throw std::logic_error{"from the callback"};
                                          },
                                          nullptr};
    t.call_msg("allocate", [&] { return r.allocate(default_stream(), 4096, 256) != nullptr; });
  });
  add(F, "not_called_on_success", [](trace& t) {
    int calls = 0;
    failure_callback_resource_adaptor<> r{cuda_memory_resource{},
                                          [&](std::size_t, void*) {
                                            ++calls;
                                            return false;
                                          },
                                          nullptr};
    void* p = try_alloc(t, "a", r, 1000);
    free_(r, p, 1000);
    t.add("calls", calls);
  });
}

template <class T>
void scalar_roundtrip(std::string const& name, T value)
{
  add("device_scalar", "type_" + name, [value](trace& t2) {
    auto log = std::make_shared<event_log>();
    recording_resource mr{any_dev{cuda_memory_resource{}}, log};
    T const v = value;
    rmm::device_scalar<T> s{v, default_stream(), mr};
    t2.add("equal", s.value(default_stream()) == value);
    t2.add("aligned", reinterpret_cast<std::uintptr_t>(s.data()) % alignof(T) == 0);
    s.set_value_to_zero_async(default_stream());
    t2.add("zero", s.value(default_stream()) == T{});
    rmm::device_scalar<T> m{v, default_stream(), mr};
    m = std::move(s);
    t2.add("moved_zero", m.value(default_stream()) == T{});
    t2.add("events", log->events);
  });
}

struct pair_t {
  int a;
  double b;
  bool operator==(pair_t const& o) const { return a == o.a && b == o.b; }
};

void register_scalar_types()
{
  scalar_roundtrip<char>("char", 'x');
  scalar_roundtrip<short>("short", static_cast<short>(-3));
  scalar_roundtrip<float>("float", 1.5F);
  scalar_roundtrip<double>("double", -2.25);
  scalar_roundtrip<unsigned long long>("u64", 0xFFFFFFFFFFFFULL);
  scalar_roundtrip<pair_t>("struct", pair_t{4, 8.5});
}

void register_logging_more()
{
  auto const A = std::string{"logging"};
  add(A, "over_pool_sequence", [](trace& t) {
    std::ostringstream out;
    {
      logging_resource_adaptor l{pool_memory_resource{cuda_memory_resource{}, MiB, 2 * MiB}, out};
      std::vector<std::pair<void*, std::size_t>> live;
      for (std::size_t n : {std::size_t{0}, std::size_t{100}, MiB, 3 * MiB, std::size_t{256}}) {
        void* p = try_alloc(t, "a" + std::to_string(n), l, n);
        if (p) { live.emplace_back(p, n); }
      }
      for (auto& [p, n] : live) { free_(l, p, n); }
      l.flush();
    }
    std::istringstream in{out.str()};
    std::string line;
    std::vector<std::string> rows;
    while (std::getline(in, line)) {
      std::vector<std::string> cols;
      std::stringstream ls{line};
      std::string c;
      while (std::getline(ls, c, ',')) { cols.push_back(c); }
      rows.push_back(cols.size() > 4 ? cols[2] + "," + cols[4] : line);
    }
    t.add("rows", rows);
  });
  add(A, "two_on_one_stream", [](trace& t) {
    std::ostringstream out;
    {
      logging_resource_adaptor a{cuda_memory_resource{}, out, true};
      logging_resource_adaptor b{cuda_memory_resource{}, out, true};
      void* p = try_alloc(t, "a", a, 100);
      void* q = try_alloc(t, "b", b, 200);
      free_(a, p, 100);
      free_(b, q, 200);
    }
    std::istringstream in{out.str()};
    std::string line;
    int headers = 0, lines = 0;
    while (std::getline(in, line)) {
      ++lines;
      headers += line.rfind("Thread", 0) == 0;
    }
    t.add("lines", lines);
    t.add("headers", headers);
  });
  add(A, "copies_share", [](trace& t) {
    std::ostringstream out;
    {
      logging_resource_adaptor a{cuda_memory_resource{}, out, true};
      auto b  = a;
      void* p = try_alloc(t, "via_copy", b, 64);
      free_(a, p, 64);
      t.add("copy==", a == b);
    }
    std::istringstream in{out.str()};
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) { ++lines; }
    t.add("lines", lines);
  });
}

void register_per_device_more()
{
  auto const A = std::string{"per_device"};
  add(A, "containers_use_current", [](trace& t) {
    statistics_resource_adaptor st{pool_memory_resource{cuda_memory_resource{}, MiB}};
    auto old = set_current_device_resource(st);
    {
      rmm::device_uvector<int> v{100, default_stream()};
      rmm::device_scalar<int> s{default_stream()};
      rmm::device_buffer b{10, default_stream()};
      counters(t, "live", st);
      t.add("uvector.mr==st", v.memory_resource() == ref_t{st});
    }
    counters(t, "end", st);
    set_current_device_resource(std::move(old));
  });
  add(A, "get_twice_equal", [](trace& t) {
    t.add("==", get_current_device_resource_ref() == get_current_device_resource_ref());
    t.add("per_device==current",
          get_per_device_resource_ref(rmm::cuda_device_id{0}) == get_current_device_resource_ref());
  });
  add(A, "reset_per_device_returns_current", [](trace& t) {
    statistics_resource_adaptor st{cuda_memory_resource{}};
    set_per_device_resource(rmm::cuda_device_id{0}, st);
    auto prev = reset_per_device_resource(rmm::cuda_device_id{0});
    t.add("prev==st", ref_t{prev} == ref_t{st});
    static cuda_memory_resource cm;
    t.add("now==cuda", get_current_device_resource_ref() == ref_t{cm});
  });
}

void register_prefetch_thread_safe_more()
{
  add("prefetch", "over_pool_managed", [](trace& t) {
    prefetch_resource_adaptor p{pool_memory_resource{managed_memory_resource{}, MiB}};
    void* q = try_alloc(t, "a", p, 4096);
    t.add("sync", cudaDeviceSynchronize() == cudaSuccess);
    free_(p, q, 4096);
  });
  add("prefetch", "over_device_memory", [](trace& t) {
    prefetch_resource_adaptor p{cuda_memory_resource{}};
    void* q = try_alloc(t, "a", p, 4096);
    t.add("sync", cudaDeviceSynchronize() == cudaSuccess);
    t.add("last_error_clear", cudaGetLastError() == cudaSuccess);
    free_(p, q, 4096);
  });
  add("prefetch", "zero_bytes", [](trace& t) {
    prefetch_resource_adaptor p{managed_memory_resource{}};
    void* q = try_alloc(t, "a", p, 0);
    free_(p, q, 0);
    t.add("sync", cudaDeviceSynchronize() == cudaSuccess);
  });
  add("thread_safe", "equality_and_zero", [](trace& t) {
    cuda_memory_resource c;
    thread_safe_resource_adaptor a{c};
    auto b = a;
    thread_safe_resource_adaptor other{c};
    t.add("copy==", a == b);
    t.add("other==", a == other);
    void* q = try_alloc(t, "zero", a, 0);
    free_(a, q, 0);
  });
}

}  // namespace

void register_more()
{
  register_callback_edges();
  register_scalar_types();
  register_logging_more();
  register_per_device_more();
  register_prefetch_thread_safe_more();
}

}  // namespace oracle
