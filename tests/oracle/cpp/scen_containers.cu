// Containers: device_buffer (every constructor, size/capacity after resize/reserve/shrink_to_fit,
// copy, move, set_stream, memory_resource), device_uvector (element access, resize, release,
// 0 elements), device_scalar, device_vector / thrust_allocator / exec_policy with thrust::sort.
// Each is made over a recording resource, so the allocations and frees it makes are compared too.
#include "recording.hpp"

#include <rmm/device_buffer.hpp>
#include <rmm/device_scalar.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/device_vector.hpp>
#include <rmm/exec_policy.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/thrust_allocator_adaptor.hpp>

#include <thrust/reduce.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include <numeric>

namespace oracle {
namespace {

using rmm::mr::cuda_memory_resource;
using ref_t = rmm::device_async_resource_ref;

struct rec {
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

void buf_facts(trace& t, std::string const& l, rmm::device_buffer const& b)
{
  t.add(l + ".size", b.size());
  t.add(l + ".capacity", b.capacity());
  t.add(l + ".ssize", b.ssize());
  t.add(l + ".is_empty", b.is_empty());
  t.add(l + ".alignment", b.alignment());
  t.add(l + ".data_nonnull", b.data() != nullptr);
}

/// Sum of the bytes of a device range (checks contents).
long long checksum(void const* d, std::size_t n)
{
  if (n == 0 || d == nullptr) { return 0; }
  std::vector<unsigned char> h(n);
  if (cudaMemcpy(h.data(), d, n, cudaMemcpyDefault) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  long long s = 0;
  for (std::size_t i = 0; i < n; ++i) { s = s * 31 + h[i]; s %= 1000000007LL; }
  return s;
}

long long checksum_host(std::vector<unsigned char> const& h)
{
  long long s = 0;
  for (auto c : h) { s = s * 31 + c; s %= 1000000007LL; }
  return s;
}

std::vector<unsigned char> pattern(std::size_t n)
{
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) { v[i] = static_cast<unsigned char>(i * 7 + 3); }
  return v;
}

/// device_buffer(stream, mr): a constructor a side may lack (recorded as "missing").
template <class B, class MR>
void stream_ctor(trace& t, cuda::stream_ref s, MR& mr)
{
  if constexpr (std::is_constructible_v<B, cuda::stream_ref, any_dev>) {
    B b{s, any_dev{mr}};
    buf_facts(t, "b", b);
    t.add("stream==s", b.stream() == s);
  } else {
    t.add("device_buffer(stream, mr)", "missing");
  }
}

void register_buffer()
{
  auto const A = std::string{"device_buffer"};
  add(A, "default_ctor", [](trace& t) {
    rmm::device_buffer b;
    buf_facts(t, "b", b);
    t.add("mr==current", b.memory_resource() == rmm::mr::get_current_device_resource_ref());
  });
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{1} << 20}) {
    add(A, "size_ctor_" + std::to_string(n), [n](trace& t) {
      rec r;
      {
        rmm::device_buffer b{n, s0(), r.mr};
        buf_facts(t, "b", b);
        t.add("aligned256", reinterpret_cast<std::uintptr_t>(b.data()) % 256 == 0);
        r.dump(t, "ctor");
      }
      r.dump(t, "dtor");
    });
  }
  for (std::size_t al : {std::size_t{1}, std::size_t{8}, std::size_t{256}, std::size_t{4096},
                         std::size_t{3}}) {
    add(A, "align_ctor_" + std::to_string(al), [al](trace& t) {
      rec r;
      t.call("ctor", [&] {
        rmm::device_buffer b{1000, al, s0(), r.mr};
        buf_facts(t, "b", b);
        t.add("aligned", reinterpret_cast<std::uintptr_t>(b.data()) % al == 0);
        return true;
      });
      r.dump(t, "events");
    });
  }
  add(A, "host_data_ctor", [](trace& t) {
    rec r;
    auto h = pattern(5000);
    rmm::device_buffer b{h.data(), h.size(), s0(), r.mr};
    buf_facts(t, "b", b);
    t.add("checksum_ok", checksum(b.data(), b.size()) == checksum_host(h));
    r.dump(t, "events");
  });
  add(A, "host_data_align_ctor", [](trace& t) {
    rec r;
    auto h = pattern(300);
    rmm::device_buffer b{h.data(), h.size(), 4096, s0(), r.mr};
    buf_facts(t, "b", b);
    t.add("checksum_ok", checksum(b.data(), b.size()) == checksum_host(h));
    r.dump(t, "events");
  });
  add(A, "null_source_ctor", [](trace& t) {
    rec r;
    t.call_msg("null_with_size", [&] {
      rmm::device_buffer b{static_cast<void const*>(nullptr), 100, s0(), r.mr};
      return b.size();
    });
    t.call("null_zero", [&] {
      rmm::device_buffer b{static_cast<void const*>(nullptr), 0, s0(), r.mr};
      return b.size();
    });
    r.dump(t, "events");
  });
  add(A, "stream_ctor", [](trace& t) {
    rec r;
    rmm::cuda_stream s;
    stream_ctor<rmm::device_buffer>(t, cuda::stream_ref{s}, r.mr);
    r.dump(t, "events");
  });
  add(A, "copy_ctor", [](trace& t) {
    rec r, r2;
    auto h = pattern(3000);
    rmm::device_buffer a{h.data(), h.size(), s0(), r.mr};
    a.resize(1000, s0());
    rmm::device_buffer b{a, s0(), r2.mr};
    buf_facts(t, "a", a);
    buf_facts(t, "b", b);
    t.add("same", checksum(a.data(), a.size()) == checksum(b.data(), b.size()));
    t.add("mr==r2", b.memory_resource() == ref_t{r2.mr});
    r.dump(t, "events_a");
    r2.dump(t, "events_b");
  });
  add(A, "copy_ctor_empty", [](trace& t) {
    rec r;
    rmm::device_buffer a{0, s0(), r.mr};
    rmm::device_buffer b{a, s0(), r.mr};
    buf_facts(t, "b", b);
    r.dump(t, "events");
  });
  add(A, "move", [](trace& t) {
    rec r;
    rmm::device_buffer a{1000, s0(), r.mr};
    rmm::device_buffer b{std::move(a)};
    buf_facts(t, "moved_from", a);
    buf_facts(t, "moved_to", b);
    t.add("moved_from.mr==", a.memory_resource() == ref_t{r.mr});
    rmm::device_buffer c{10, s0(), r.mr};
    c = std::move(b);
    buf_facts(t, "assigned", c);
    buf_facts(t, "assigned_from", b);
    r.dump(t, "events");
  });
  add(A, "resize_sequence", [](trace& t) {
    rec r;
    auto h = pattern(100);
    rmm::device_buffer b{h.data(), 100, s0(), r.mr};
    for (std::size_t n : {std::size_t{50}, std::size_t{200}, std::size_t{200}, std::size_t{0},
                          std::size_t{300}}) {
      b.resize(n, s0());
      auto l = "resize" + std::to_string(n);
      t.add(l + ".size", b.size());
      t.add(l + ".capacity", b.capacity());
      r.dump(t, l + ".events");
    }
  });
  add(A, "resize_keeps_data", [](trace& t) {
    rec r;
    auto h = pattern(100);
    rmm::device_buffer b{h.data(), 100, s0(), r.mr};
    b.resize(1000, s0());
    t.add("prefix_kept", checksum(b.data(), 100) == checksum_host(h));
    b.resize(60, s0());
    b.shrink_to_fit(s0());
    t.add("prefix60_kept", checksum(b.data(), 60) == checksum_host({h.begin(), h.begin() + 60}));
    buf_facts(t, "b", b);
  });
  add(A, "reserve", [](trace& t) {
    rec r;
    rmm::device_buffer b{100, s0(), r.mr};
    for (std::size_t n : {std::size_t{1000}, std::size_t{10}, std::size_t{1000}, std::size_t{0}}) {
      b.reserve(n, s0());
      auto l = "reserve" + std::to_string(n);
      t.add(l + ".size", b.size());
      t.add(l + ".capacity", b.capacity());
      r.dump(t, l + ".events");
    }
  });
  add(A, "shrink_to_fit", [](trace& t) {
    rec r;
    rmm::device_buffer b{1000, s0(), r.mr};
    b.shrink_to_fit(s0());
    r.dump(t, "noop.events");
    b.resize(10, s0());
    b.shrink_to_fit(s0());
    buf_facts(t, "after", b);
    r.dump(t, "shrink.events");
    b.resize(0, s0());
    b.shrink_to_fit(s0());
    buf_facts(t, "empty", b);
    r.dump(t, "empty.events");
  });
  add(A, "set_stream", [](trace& t) {
    rec r;
    rmm::cuda_stream s;
    rmm::device_buffer b{100, s0(), r.mr};
    t.add("stream==default", b.stream() == s0());
    b.set_stream(cuda::stream_ref{s});
    t.add("stream==s", b.stream() == cuda::stream_ref{s});
    b.resize(500, cuda::stream_ref{s});
    t.add("size", b.size());
    r.dump(t, "events");
  });
  add(A, "memory_resource", [](trace& t) {
    rec r;
    rmm::device_buffer b{100, s0(), r.mr};
    t.add("mr==rec", b.memory_resource() == ref_t{r.mr});
    rec other;
    t.add("mr==other", b.memory_resource() == ref_t{other.mr});
  });
  add(A, "current_resource_used", [](trace& t) {
    rmm::mr::statistics_resource_adaptor st{cuda_memory_resource{}};
    auto old = rmm::mr::set_current_device_resource(st);
    {
      rmm::device_buffer b{4000, s0()};
      t.add("allocs", st.get_allocations_counter().value);
      t.add("bytes", st.get_bytes_counter().value);
    }
    t.add("after", st.get_allocations_counter().value);
    rmm::mr::set_current_device_resource(std::move(old));
  });
  add(A, "huge", [](trace& t) {
    rec r;
    t.call("ctor", [&] {
      rmm::device_buffer b{std::size_t{1} << 50, s0(), r.mr};
      return b.size();
    });
    r.dump(t, "events");
  });
}

template <class T>
void uv_facts(trace& t, std::string const& l, rmm::device_uvector<T> const& v)
{
  t.add(l + ".size", v.size());
  t.add(l + ".capacity", v.capacity());
  t.add(l + ".is_empty", v.is_empty());
  t.add(l + ".data_nonnull", v.data() != nullptr);
}

void register_uvector()
{
  auto const A = std::string{"device_uvector"};
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{100}}) {
    add(A, "ctor_" + std::to_string(n), [n](trace& t) {
      rec r;
      {
        rmm::device_uvector<int> v{n, s0(), r.mr};
        uv_facts(t, "v", v);
        t.add("ssize", v.ssize());
        r.dump(t, "ctor");
      }
      r.dump(t, "dtor");
    });
  }
  add(A, "element_access", [](trace& t) {
    rec r;
    rmm::device_uvector<int> v{10, s0(), r.mr};
    for (int i = 0; i < 10; ++i) { v.set_element(i, i * i, s0()); }
    std::vector<int> got;
    for (int i = 0; i < 10; ++i) { got.push_back(v.element(i, s0())); }
    t.add("elements", got);
    t.add("front", v.front_element(s0()));
    t.add("back", v.back_element(s0()));
    v.set_element_to_zero_async(3, s0());
    int x = 77;
    v.set_element_async(4, x, s0());
    t.add("after_zero", v.element(3, s0()));
    t.add("after_async", v.element(4, s0()));
  });
  add(A, "element_out_of_range", [](trace& t) {
    rec r;
    rmm::device_uvector<int> v{4, s0(), r.mr};
    t.call_msg("element(4)", [&] { return v.element(4, s0()); });
    t.call_msg("set_element(4)", [&] { v.set_element(4, 1, s0()); });
  });
  add(A, "empty_front_back", [](trace& t) {
    rec r;
    rmm::device_uvector<int> v{0, s0(), r.mr};
    t.call_msg("front", [&] { return v.front_element(s0()); });
    t.call_msg("back", [&] { return v.back_element(s0()); });
  });
  add(A, "resize_reserve_shrink", [](trace& t) {
    rec r;
    rmm::device_uvector<int> v{10, s0(), r.mr};
    for (int i = 0; i < 10; ++i) { v.set_element(i, i + 1, s0()); }
    v.resize(20, s0());
    uv_facts(t, "grown", v);
    t.add("kept9", v.element(9, s0()));
    r.dump(t, "grow.events");
    v.resize(5, s0());
    uv_facts(t, "cut", v);
    r.dump(t, "cut.events");
    v.reserve(100, s0());
    uv_facts(t, "reserved", v);
    r.dump(t, "reserve.events");
    v.shrink_to_fit(s0());
    uv_facts(t, "shrunk", v);
    t.add("kept4", v.element(4, s0()));
    r.dump(t, "shrink.events");
  });
  add(A, "release", [](trace& t) {
    rec r;
    rmm::device_uvector<int> v{25, s0(), r.mr};
    rmm::device_buffer b = v.release();
    uv_facts(t, "v", v);
    buf_facts(t, "b", b);
    r.dump(t, "events");
  });
  add(A, "copy_ctor", [](trace& t) {
    rec r;
    rmm::device_uvector<int> v{6, s0(), r.mr};
    for (int i = 0; i < 6; ++i) { v.set_element(i, 10 - i, s0()); }
    rmm::device_uvector<int> w{v, s0(), r.mr};
    std::vector<int> got;
    for (int i = 0; i < 6; ++i) { got.push_back(w.element(i, s0())); }
    t.add("copied", got);
    r.dump(t, "events");
  });
  add(A, "move_and_stream", [](trace& t) {
    rec r;
    rmm::cuda_stream s;
    rmm::device_uvector<double> v{8, s0(), r.mr};
    v.set_stream(cuda::stream_ref{s});
    t.add("stream==s", v.stream() == cuda::stream_ref{s});
    rmm::device_uvector<double> w{std::move(v)};
    uv_facts(t, "moved_from", v);
    uv_facts(t, "moved_to", w);
    t.add("mr==", w.memory_resource() == ref_t{r.mr});
  });
}

void register_scalar()
{
  auto const A = std::string{"device_scalar"};
  add(A, "value_ctor", [](trace& t) {
    rec r;
    int const init = 42;
    rmm::device_scalar<int> s{init, s0(), r.mr};
    t.add("value", s.value(s0()));
    t.add("size", s.size());
    s.set_value_to_zero_async(s0());
    t.add("zero", s.value(s0()));
    int v = -5;
    s.set_value_async(v, s0());
    t.add("set", s.value(s0()));
    r.dump(t, "events");
  });
  add(A, "stream_ctor_and_copy", [](trace& t) {
    rec r;
    rmm::device_scalar<long long> s{s0(), r.mr};
    long long v = 1234567890123LL;
    s.set_value_async(v, s0());
    rmm::device_scalar<long long> c{s, s0(), r.mr};
    t.add("copy", c.value(s0()));
    rmm::device_scalar<long long> m{std::move(c)};
    t.add("moved", m.value(s0()));
    r.dump(t, "events");
  });
}

void register_thrust()
{
  auto const A = std::string{"thrust"};
  for (int n : {0, 1, 1000, 100000}) {
    add(A, "sort_" + std::to_string(n), [n](trace& t) {
      rmm::mr::statistics_resource_adaptor st{cuda_memory_resource{}};
      auto old = rmm::mr::set_current_device_resource(st);
      {
        rmm::cuda_stream s;
        rmm::device_vector<int> v(static_cast<std::size_t>(n));
        thrust::sequence(rmm::exec_policy(cuda::stream_ref{s}), v.begin(), v.end(), n, -1);
        thrust::sort(rmm::exec_policy(cuda::stream_ref{s}), v.begin(), v.end());
        s.synchronize();
        std::vector<int> h(v.size());
        thrust::copy(v.begin(), v.end(), h.begin());
        t.add("sorted", std::is_sorted(h.begin(), h.end()));
        t.add("sum", std::accumulate(h.begin(), h.end(), 0LL));
        t.add("used_current", st.get_allocations_counter().total > 0);
      }
      t.add("live_end", st.get_allocations_counter().value);
      rmm::mr::set_current_device_resource(std::move(old));
    });
  }
  add(A, "exec_policy_mr", [](trace& t) {
    rmm::mr::statistics_resource_adaptor st{cuda_memory_resource{}};
    rmm::device_uvector<int> v{50000, s0()};
    thrust::sequence(rmm::exec_policy(s0(), st), v.begin(), v.end(), 50000, -1);
    thrust::sort(rmm::exec_policy(s0(), st), v.begin(), v.end());
    t.add("first", v.front_element(s0()));
    t.add("temp_used", st.get_allocations_counter().total > 0);
    t.add("live_end", st.get_allocations_counter().value);
    thrust::sort(rmm::exec_policy_nosync(s0(), st), v.begin(), v.end());
    t.add("sum", thrust::reduce(rmm::exec_policy(s0(), st), v.begin(), v.end(), 0LL));
  });
  add(A, "thrust_allocator", [](trace& t) {
    rec r;
    rmm::mr::thrust_allocator<int> a{s0(), r.mr};
    t.add("upstream==", a.get_upstream_resource() == ref_t{r.mr});
    t.add("stream==", a.stream() == s0());
    auto p = a.allocate(100);
    t.add("nonnull", thrust::raw_pointer_cast(p) != nullptr);
    a.deallocate(p, 100);
    rmm::mr::thrust_allocator<int> b{a};
    t.add("copy==", a == b);
    r.dump(t, "events");
  });
  add(A, "device_vector_alloc", [](trace& t) {
    rec r;
    rmm::device_vector<int> v(100, 7, rmm::mr::thrust_allocator<int>{s0(), r.mr});
    v.resize(300);
    t.add("size", v.size());
    t.add("v[299]", static_cast<int>(v[299]));
    r.dump(t, "events");
  });
}

}  // namespace

void register_containers()
{
  register_buffer();
  register_uvector();
  register_scalar();
  register_thrust();
}

}  // namespace oracle
