// Scenarios of each adaptor's and pool's own API: statistics and tracking counters, limiting,
// pool growth and limits, arena, binning (which bin serves which size), fixed_size, callbacks,
// failure callback retries, aligned adaptor, logging CSV, thread_safe.
#include "common.hpp"

#include <rmm/mr/aligned_resource_adaptor.hpp>
#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/callback_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/failure_callback_resource_adaptor.hpp>
#include <rmm/mr/fixed_size_memory_resource.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/managed_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/prefetch_resource_adaptor.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/thread_safe_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include <unistd.h>

namespace oracle {
namespace {

using namespace rmm::mr;
constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = std::size_t{1} << 20;
using ref_t               = rmm::device_async_resource_ref;

/// Allocates through ref; records success (and pointer facts) or the exception; returns the
/// pointer (nullptr on failure).
void* try_alloc(trace& t, std::string const& label, ref_t ref, std::size_t n, bool api_msg = false)
{
  void* p = nullptr;
  bool ok = t.call(
    label,
    [&] {
      p = ref.allocate(default_stream(), n, 256);
      return true;
    },
    api_msg);
  if (ok) { t.add(label + ".nonnull", p != nullptr); }
  return p;
}

void free_(ref_t ref, void* p, std::size_t n)
{
  if (p != nullptr) { ref.deallocate(default_stream(), p, n, 256); }
}

void counters(trace& t, std::string const& label, statistics_resource_adaptor const& s)
{
  auto b = s.get_bytes_counter();
  auto a = s.get_allocations_counter();
  t.add(label + ".bytes", std::vector<long long>{b.value, b.peak, b.total});
  t.add(label + ".allocs", std::vector<long long>{a.value, a.peak, a.total});
}

template <class P>
void pair_counters(trace& t, std::string const& label, P const& p)
{
  t.add(label + ".bytes", std::vector<long long>{p.first.value, p.first.peak, p.first.total});
  t.add(label + ".allocs", std::vector<long long>{p.second.value, p.second.peak, p.second.total});
}

void tracked(trace& t, std::string const& label, tracking_resource_adaptor const& r)
{
  t.add(label + ".outstanding", r.get_outstanding_allocations().size());
  t.add(label + ".bytes", r.get_allocated_bytes());
  std::size_t sum = 0;
  for (auto const& kv : r.get_outstanding_allocations()) { sum += kv.second.allocation_size; }
  t.add(label + ".sum_sizes", sum);
}

std::vector<std::size_t> const sizes{0, 1, 255, 256, 257, 1000, 4096, 65536, MiB};

void register_statistics()
{
  auto const A = std::string{"statistics"};
  add(A, "counters_basic", [](trace& t) {
    statistics_resource_adaptor s{cuda_memory_resource{}};
    counters(t, "fresh", s);
    void* a = try_alloc(t, "a100", s, 100);
    void* b = try_alloc(t, "a200", s, 200);
    counters(t, "two", s);
    free_(s, a, 100);
    counters(t, "freed_one", s);
    free_(s, b, 200);
    counters(t, "freed_both", s);
  });
  add(A, "zero_bytes", [](trace& t) {
    statistics_resource_adaptor s{cuda_memory_resource{}};
    void* a = try_alloc(t, "z1", s, 0);
    void* b = try_alloc(t, "z2", s, 0);
    counters(t, "after_two", s);
    free_(s, a, 0);
    counters(t, "freed_one", s);
    free_(s, b, 0);
    counters(t, "freed_both", s);
  });
  for (auto n : sizes) {
    add(A, "size_" + std::to_string(n), [n](trace& t) {
      statistics_resource_adaptor s{cuda_memory_resource{}};
      void* p = try_alloc(t, "a", s, n);
      counters(t, "live", s);
      free_(s, p, n);
      counters(t, "freed", s);
    });
  }
  add(A, "push_pop", [](trace& t) {
    statistics_resource_adaptor s{cuda_memory_resource{}};
    void* a = try_alloc(t, "a", s, 100);
    pair_counters(t, "push", s.push_counters());
    counters(t, "after_push", s);
    void* b = try_alloc(t, "b", s, 50);
    counters(t, "inner", s);
    free_(s, a, 100);
    counters(t, "inner_freed_outer", s);
    pair_counters(t, "pop", s.pop_counters());
    counters(t, "after_pop", s);
    free_(s, b, 50);
    counters(t, "end", s);
  });
  add(A, "pop_empty", [](trace& t) {
    statistics_resource_adaptor s{cuda_memory_resource{}};
    t.call_msg("pop", [&] {
      s.pop_counters();
      return true;
    });
    counters(t, "after", s);
  });
  add(A, "push_many", [](trace& t) {
    statistics_resource_adaptor s{cuda_memory_resource{}};
    std::vector<void*> ps;
    for (int i = 0; i < 3; ++i) {
      ps.push_back(try_alloc(t, "a" + std::to_string(i), s, 256 * (i + 1)));
      pair_counters(t, "push" + std::to_string(i), s.push_counters());
    }
    for (int i = 0; i < 3; ++i) {
      pair_counters(t, "pop" + std::to_string(i), s.pop_counters());
      counters(t, "after_pop" + std::to_string(i), s);
    }
    t.call_msg("pop_extra", [&] {
      s.pop_counters();
      return true;
    });
    for (int i = 0; i < 3; ++i) { free_(s, ps[i], 256 * (i + 1)); }
    counters(t, "end", s);
  });
  add(A, "upstream", [](trace& t) {
    cuda_memory_resource c;
    statistics_resource_adaptor s{c};
    t.add("upstream==cuda", s.get_upstream_resource() == ref_t{c});
    statistics_resource_adaptor s2{s};
    t.add("nested upstream==s", s2.get_upstream_resource() == ref_t{s});
  });
  add(A, "copies_share", [](trace& t) {
    statistics_resource_adaptor s{cuda_memory_resource{}};
    auto copy = s;
    void* p   = try_alloc(t, "via_copy", copy, 512);
    counters(t, "orig", s);
    t.add("copy==orig", copy == s);
    free_(s, p, 512);
    counters(t, "copy_after_free", copy);
  });
  add(A, "failed_alloc", [](trace& t) {
    statistics_resource_adaptor s{limiting_resource_adaptor{cuda_memory_resource{}, 4096}};
    void* p = try_alloc(t, "too_big", s, 8192);
    counters(t, "after_fail", s);
    free_(s, p, 8192);
  });
  add(A, "stacked", [](trace& t) {
    statistics_resource_adaptor inner{cuda_memory_resource{}};
    statistics_resource_adaptor outer{inner};
    void* p = try_alloc(t, "a", outer, 3000);
    counters(t, "outer", outer);
    counters(t, "inner", inner);
    free_(outer, p, 3000);
    counters(t, "inner_end", inner);
  });
}

void register_tracking()
{
  auto const A = std::string{"tracking"};
  add(A, "basic", [](trace& t) {
    tracking_resource_adaptor r{cuda_memory_resource{}};
    tracked(t, "fresh", r);
    t.add("fresh.str", r.get_outstanding_allocations_str());
    void* a = try_alloc(t, "a", r, 100);
    void* b = try_alloc(t, "b", r, 3000);
    tracked(t, "two", r);
    t.add("two.str_empty", r.get_outstanding_allocations_str().empty());
    free_(r, a, 100);
    tracked(t, "one", r);
    free_(r, b, 3000);
    tracked(t, "none", r);
    t.add("none.str", r.get_outstanding_allocations_str());
  });
  add(A, "zero_bytes", [](trace& t) {
    tracking_resource_adaptor r{cuda_memory_resource{}};
    void* a = try_alloc(t, "z1", r, 0);
    void* b = try_alloc(t, "z2", r, 0);
    tracked(t, "two", r);
    free_(r, a, 0);
    free_(r, b, 0);
    tracked(t, "none", r);
  });
  for (auto n : sizes) {
    add(A, "size_" + std::to_string(n), [n](trace& t) {
      tracking_resource_adaptor r{cuda_memory_resource{}};
      void* p = try_alloc(t, "a", r, n);
      tracked(t, "live", r);
      free_(r, p, n);
      tracked(t, "freed", r);
    });
  }
  add(A, "free_untracked_through_outer", [](trace& t) {
    tracking_resource_adaptor inner{cuda_memory_resource{}};
    tracking_resource_adaptor outer{inner};
    void* p = try_alloc(t, "inner_alloc", inner, 1000);
    tracked(t, "before.outer", outer);
    tracked(t, "before.inner", inner);
    free_(outer, p, 1000);
    tracked(t, "after.outer", outer);
    tracked(t, "after.inner", inner);
  });
  add(A, "wrong_size_free", [](trace& t) {
    tracking_resource_adaptor r{cuda_memory_resource{}};
    void* p = try_alloc(t, "a", r, 1000);
    free_(r, p, 500);
    tracked(t, "after", r);
  });
  add(A, "capture_stacks", [](trace& t) {
    tracking_resource_adaptor r{cuda_memory_resource{}, true};
    void* p = try_alloc(t, "a", r, 1000);
    tracked(t, "live", r);
    free_(r, p, 1000);
    tracked(t, "none", r);
  });
  add(A, "upstream_and_copy", [](trace& t) {
    cuda_memory_resource c;
    tracking_resource_adaptor r{c};
    t.add("upstream==cuda", r.get_upstream_resource() == ref_t{c});
    auto copy = r;
    void* p   = try_alloc(t, "via_copy", copy, 700);
    tracked(t, "orig", r);
    free_(r, p, 700);
    tracked(t, "copy_end", copy);
  });
}

void register_limiting()
{
  auto const A = std::string{"limiting"};
  add(A, "basic", [](trace& t) {
    limiting_resource_adaptor l{cuda_memory_resource{}, MiB};
    t.add("limit", l.get_allocation_limit());
    t.add("fresh", l.get_allocated_bytes());
    void* a = try_alloc(t, "a1000", l, 1000);
    t.add("after_a", l.get_allocated_bytes());
    void* b = try_alloc(t, "over", l, MiB, true);
    t.add("after_over", l.get_allocated_bytes());
    free_(l, b, MiB);
    free_(l, a, 1000);
    t.add("end", l.get_allocated_bytes());
  });
  add(A, "exact_limit", [](trace& t) {
    limiting_resource_adaptor l{cuda_memory_resource{}, 4096};
    void* a = try_alloc(t, "exact", l, 4096);
    void* b = try_alloc(t, "one_more", l, 1);
    t.add("bytes", l.get_allocated_bytes());
    free_(l, b, 1);
    free_(l, a, 4096);
    t.add("end", l.get_allocated_bytes());
  });
  for (std::size_t align : {std::size_t{1}, std::size_t{256}, std::size_t{4096}}) {
    for (auto n : sizes) {
      add(A, "align" + std::to_string(align) + "_size_" + std::to_string(n), [align, n](trace& t) {
        std::optional<limiting_resource_adaptor> l;
        if (!t.call("construct", [&] {
              l.emplace(cuda_memory_resource{}, 16 * MiB, align);
              return true;
            })) {
          return;
        }
        void* p = try_alloc(t, "a", *l, n);
        t.add("live", l->get_allocated_bytes());
        free_(*l, p, n);
        t.add("freed", l->get_allocated_bytes());
      });
    }
  }
  add(A, "zero_limit", [](trace& t) {
    limiting_resource_adaptor l{cuda_memory_resource{}, 0};
    void* a = try_alloc(t, "zero", l, 0);
    void* b = try_alloc(t, "one", l, 1);
    t.add("bytes", l.get_allocated_bytes());
    free_(l, b, 1);
    free_(l, a, 0);
  });
  add(A, "upstream", [](trace& t) {
    cuda_memory_resource c;
    limiting_resource_adaptor l{c, MiB};
    t.add("upstream==cuda", l.get_upstream_resource() == ref_t{c});
    auto copy = l;
    void* p   = try_alloc(t, "via_copy", copy, 1000);
    t.add("orig_bytes", l.get_allocated_bytes());
    free_(l, p, 1000);
  });
}

void register_pool()
{
  auto const A = std::string{"pool"};
  add(A, "limited_upstream_example", [](trace& t) {
    limiting_resource_adaptor lim{cuda_memory_resource{}, 6000};
    pool_memory_resource pool{lim, 0, 8192};
    t.add("pool_size0", pool.pool_size());
    void* a = try_alloc(t, "a1000", pool, 1000, true);
    t.add("pool_size1", pool.pool_size());
    t.add("upstream1", lim.get_allocated_bytes());
    void* b = try_alloc(t, "b4000", pool, 4000, true);
    t.add("pool_size2", pool.pool_size());
    t.add("upstream2", lim.get_allocated_bytes());
    void* c = try_alloc(t, "c2000", pool, 2000, true);
    t.add("pool_size3", pool.pool_size());
    t.add("upstream3", lim.get_allocated_bytes());
    free_(pool, c, 2000);
    free_(pool, b, 4000);
    free_(pool, a, 1000);
  });
  std::vector<std::size_t> const inits{0, 256, 1000, MiB};
  std::vector<std::optional<std::size_t>> const maxes{std::nullopt, 0, 1000, MiB, 4 * MiB};
  for (auto init : inits) {
    for (std::size_t mi = 0; mi < maxes.size(); ++mi) {
      auto mx   = maxes[mi];
      auto name = "init" + std::to_string(init) + "_max" + (mx ? std::to_string(*mx) : "none");
      add(A, name, [init, mx](trace& t) {
        std::optional<pool_memory_resource> p;
        if (!t.call_msg("construct", [&] {
              p.emplace(cuda_memory_resource{}, init, mx);
              return true;
            })) {
          return;
        }
        t.add("pool_size", p->pool_size());
        void* a = try_alloc(t, "a1000", *p, 1000, true);
        t.add("pool_size_a", p->pool_size());
        void* b = try_alloc(t, "b2MiB", *p, 2 * MiB, true);
        t.add("pool_size_b", p->pool_size());
        free_(*p, b, 2 * MiB);
        free_(*p, a, 1000);
        t.add("pool_size_end", p->pool_size());
      });
    }
  }
  add(A, "max_exceeded_message", [](trace& t) {
    pool_memory_resource p{cuda_memory_resource{}, MiB, 2 * MiB};
    void* a = try_alloc(t, "a3MiB", p, 3 * MiB, true);
    t.add("pool_size", p.pool_size());
    free_(p, a, 3 * MiB);
  });
  // Growth under a limiting upstream, with and without a maximum.
  std::vector<std::size_t> const limits{4096, 6000, 10000, 100000};
  std::vector<std::optional<std::size_t>> const gmax{std::nullopt, 8192, 16384, 65536};
  std::vector<std::size_t> const reqs{1000, 4000, 2000, 3000, 500, 8000};
  for (auto lim_bytes : limits) {
    for (auto mx : gmax) {
      auto name = "growth_lim" + std::to_string(lim_bytes) + "_max" + (mx ? std::to_string(*mx) : "none");
      add(A, name, [lim_bytes, mx, reqs](trace& t) {
        limiting_resource_adaptor lim{cuda_memory_resource{}, lim_bytes};
        std::optional<pool_memory_resource> p;
        if (!t.call_msg("construct", [&] {
              p.emplace(lim, 0, mx);
              return true;
            })) {
          return;
        }
        std::vector<std::pair<void*, std::size_t>> live;
        for (auto n : reqs) {
          auto lbl = "r" + std::to_string(n);
          void* q  = try_alloc(t, lbl, *p, n, true);
          if (q != nullptr) { live.emplace_back(q, n); }
          t.add(lbl + ".pool_size", p->pool_size());
          t.add(lbl + ".upstream", lim.get_allocated_bytes());
        }
        for (auto& [q, n] : live) { free_(*p, q, n); }
        t.add("end.pool_size", p->pool_size());
      });
    }
  }
  add(A, "growth_unlimited", [](trace& t) {
    statistics_resource_adaptor up{cuda_memory_resource{}};
    pool_memory_resource p{up, 0};
    std::vector<std::pair<void*, std::size_t>> live;
    for (std::size_t n : {std::size_t{1000}, MiB, 3 * MiB, std::size_t{256}, 10 * MiB}) {
      void* q = try_alloc(t, "r" + std::to_string(n), p, n);
      if (q) { live.emplace_back(q, n); }
      t.add("pool_size" + std::to_string(n), p.pool_size());
      t.add("upstream_allocs" + std::to_string(n), up.get_allocations_counter().value);
    }
    for (auto& [q, n] : live) { free_(p, q, n); }
  });
  add(A, "upstream_and_copies", [](trace& t) {
    cuda_memory_resource c;
    pool_memory_resource p{c, MiB};
    t.add("upstream==cuda", p.get_upstream_resource() == ref_t{c});
    auto copy = p;
    t.add("copy==", copy == p);
    pool_memory_resource other{c, MiB};
    t.add("other==", other == p);
    void* q = try_alloc(t, "via_copy", copy, 1000);
    free_(p, q, 1000);
    t.add("pool_size", p.pool_size());
  });
  add(A, "pool_of_pool", [](trace& t) {
    pool_memory_resource outer{cuda_memory_resource{}, 4 * MiB};
    pool_memory_resource inner{outer, MiB, 2 * MiB};
    t.add("inner", inner.pool_size());
    void* q = try_alloc(t, "a", inner, 1500 * KiB, true);
    void* r = try_alloc(t, "b", inner, 1500 * KiB, true);
    t.add("inner_after", inner.pool_size());
    free_(inner, r, 1500 * KiB);
    free_(inner, q, 1500 * KiB);
  });
  add(A, "reuse_keeps_size", [](trace& t) {
    pool_memory_resource p{cuda_memory_resource{}, 0};
    for (int i = 0; i < 4; ++i) {
      void* q = try_alloc(t, "a" + std::to_string(i), p, 100000);
      free_(p, q, 100000);
      t.add("pool_size" + std::to_string(i), p.pool_size());
    }
  });
}

void register_arena()
{
  auto const A = std::string{"arena"};
  for (std::optional<std::size_t> sz : {std::optional<std::size_t>{}, std::optional<std::size_t>{0},
                                        std::optional<std::size_t>{MiB},
                                        std::optional<std::size_t>{64 * MiB}}) {
    auto name = "size_" + (sz ? std::to_string(*sz) : std::string{"default"});
    add(A, name, [sz](trace& t) {
      std::optional<arena_memory_resource> a;
      if (!t.call_msg("construct", [&] {
            a.emplace(cuda_memory_resource{}, sz);
            return true;
          })) {
        return;
      }
      std::vector<std::pair<void*, std::size_t>> live;
      for (std::size_t n : {std::size_t{0}, std::size_t{256}, std::size_t{5000}, MiB, 3 * MiB}) {
        void* q = try_alloc(t, "a" + std::to_string(n), *a, n);
        if (q) { live.emplace_back(q, n); }
      }
      for (auto& [q, n] : live) { free_(*a, q, n); }
    });
  }
  add(A, "over_limit", [](trace& t) {
    limiting_resource_adaptor lim{cuda_memory_resource{}, 8 * MiB};
    std::optional<arena_memory_resource> a;
    if (!t.call_msg("construct", [&] {
          a.emplace(lim, 4 * MiB, true);
          return true;
        })) {
      return;
    }
    t.add("upstream", lim.get_allocated_bytes());
    void* q = try_alloc(t, "a3MiB", *a, 3 * MiB);
    void* r = try_alloc(t, "b3MiB", *a, 3 * MiB);
    free_(*a, r, 3 * MiB);
    free_(*a, q, 3 * MiB);
  });
  add(A, "huge", [](trace& t) {
    arena_memory_resource a{cuda_memory_resource{}, 16 * MiB};
    void* q = try_alloc(t, "1PiB", a, std::size_t{1} << 50);
    free_(a, q, std::size_t{1} << 50);
    void* r = try_alloc(t, "after", a, 1000);
    free_(a, r, 1000);
  });
  add(A, "equality", [](trace& t) {
    arena_memory_resource a{cuda_memory_resource{}, 16 * MiB};
    auto b = a;
    arena_memory_resource c{cuda_memory_resource{}, 16 * MiB};
    t.add("copy==", a == b);
    t.add("other==", a == c);
  });
}

void register_binning()
{
  auto const A = std::string{"binning"};
  // Which resource serves each size: the upstream and two bins, each a statistics adaptor.
  std::vector<std::size_t> const probe{0, 1, 255, 256, 257, 1000, 1024, 1025, 5000};
  for (auto n : probe) {
    add(A, "which_bin_" + std::to_string(n), [n](trace& t) {
      statistics_resource_adaptor up{cuda_memory_resource{}};
      statistics_resource_adaptor b256{cuda_memory_resource{}};
      statistics_resource_adaptor b1024{cuda_memory_resource{}};
      binning_memory_resource bin{up};
      bin.add_bin(256, ref_t{b256});
      bin.add_bin(1024, ref_t{b1024});
      void* p = try_alloc(t, "a", bin, n);
      t.add("upstream", up.get_allocations_counter().value);
      t.add("bin256", b256.get_allocations_counter().value);
      t.add("bin1024", b1024.get_allocations_counter().value);
      t.add("bytes", std::vector<long long>{up.get_bytes_counter().value,
                                            b256.get_bytes_counter().value,
                                            b1024.get_bytes_counter().value});
      free_(bin, p, n);
      t.add("after_free", std::vector<long long>{up.get_allocations_counter().value,
                                                 b256.get_allocations_counter().value,
                                                 b1024.get_allocations_counter().value});
    });
  }
  // The constructor's bins (fixed_size over the upstream): upstream traffic per size.
  for (auto n : probe) {
    add(A, "ranged_" + std::to_string(n), [n](trace& t) {
      statistics_resource_adaptor up{cuda_memory_resource{}};
      binning_memory_resource bin{up, 8, 10};
      t.add("upstream_after_construct", up.get_allocations_counter().value);
      void* p = try_alloc(t, "a", bin, n);
      t.add("upstream_allocs", up.get_allocations_counter().value);
      free_(bin, p, n);
      t.add("upstream_after_free", up.get_allocations_counter().value);
    });
  }
  add(A, "no_bins", [](trace& t) {
    statistics_resource_adaptor up{cuda_memory_resource{}};
    binning_memory_resource bin{up};
    for (std::size_t n : {std::size_t{0}, std::size_t{100}, MiB}) {
      void* p = try_alloc(t, "a" + std::to_string(n), bin, n);
      t.add("up" + std::to_string(n), up.get_allocations_counter().total);
      free_(bin, p, n);
    }
  });
  add(A, "add_bin_twice", [](trace& t) {
    statistics_resource_adaptor s1{cuda_memory_resource{}};
    statistics_resource_adaptor s2{cuda_memory_resource{}};
    binning_memory_resource bin{cuda_memory_resource{}};
    t.call("add1", [&] { bin.add_bin(512, ref_t{s1}); });
    t.call("add2", [&] { bin.add_bin(512, ref_t{s2}); });
    void* p = try_alloc(t, "a", bin, 500);
    t.add("s1", s1.get_allocations_counter().value);
    t.add("s2", s2.get_allocations_counter().value);
    free_(bin, p, 500);
  });
  add(A, "add_bin_default_resource", [](trace& t) {
    statistics_resource_adaptor up{cuda_memory_resource{}};
    binning_memory_resource bin{up};
    t.call("add", [&] { bin.add_bin(4096); });
    t.add("up_after_add", up.get_allocations_counter().value);
    void* p = try_alloc(t, "a", bin, 3000);
    t.add("up_after_alloc", up.get_allocations_counter().value);
    free_(bin, p, 3000);
  });
  add(A, "add_bin_zero", [](trace& t) {
    binning_memory_resource bin{cuda_memory_resource{}};
    t.call("add0", [&] { bin.add_bin(0); });
    void* p = try_alloc(t, "a0", bin, 0);
    free_(bin, p, 0);
  });
  add(A, "ctor_exponents", [](trace& t) {
    for (auto [lo, hi] : std::vector<std::pair<int, int>>{{3, 3}, {10, 8}, {0, 4}, {20, 22}}) {
      auto lbl = "e" + std::to_string(lo) + "_" + std::to_string(hi);
      std::optional<binning_memory_resource> bin;
      if (t.call(lbl, [&] {
            bin.emplace(cuda_memory_resource{}, static_cast<std::int8_t>(lo),
                        static_cast<std::int8_t>(hi));
            return true;
          })) {
        void* p = try_alloc(t, lbl + ".a", *bin, 1000);
        free_(*bin, p, 1000);
      }
    }
  });
  add(A, "upstream", [](trace& t) {
    cuda_memory_resource c;
    binning_memory_resource bin{c};
    t.add("upstream==cuda", bin.get_upstream_resource() == ref_t{c});
  });
}

void register_fixed_size()
{
  auto const A = std::string{"fixed_size"};
  for (std::size_t bs : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{4096}, MiB}) {
    add(A, "block_" + std::to_string(bs), [bs](trace& t) {
      statistics_resource_adaptor up{cuda_memory_resource{}};
      std::optional<fixed_size_memory_resource> f;
      if (!t.call_msg("construct", [&] {
            f.emplace(up, bs, 4);
            return true;
          })) {
        return;
      }
      t.add("block_size", f->get_block_size());
      t.add("upstream_allocs", up.get_allocations_counter().value);
      t.add("upstream_bytes", up.get_bytes_counter().value);
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, bs, bs + 1}) {
        void* p = try_alloc(t, "a" + std::to_string(n), *f, n);
        free_(*f, p, n);
      }
      t.add("upstream_allocs_end", up.get_allocations_counter().value);
    });
  }
  add(A, "defaults", [](trace& t) {
    statistics_resource_adaptor up{cuda_memory_resource{}};
    fixed_size_memory_resource f{up};
    t.add("block_size", f.get_block_size());
    t.add("upstream_allocs", up.get_allocations_counter().value);
    t.add("upstream_bytes", up.get_bytes_counter().value);
    t.add("upstream==", f.get_upstream_resource() == ref_t{up});
  });
  add(A, "exhaust_prealloc", [](trace& t) {
    statistics_resource_adaptor up{cuda_memory_resource{}};
    fixed_size_memory_resource f{up, 4096, 2};
    std::vector<void*> ps;
    for (int i = 0; i < 5; ++i) {
      ps.push_back(try_alloc(t, "a" + std::to_string(i), f, 4096));
      t.add("up" + std::to_string(i), up.get_allocations_counter().value);
    }
    for (auto p : ps) { free_(f, p, 4096); }
    t.add("up_end", up.get_allocations_counter().value);
  });
}

void register_callbacks()
{
  auto const A = std::string{"callback"};
  add(A, "returns_null", [](trace& t) {
    callback_memory_resource r{[](std::size_t, cuda::stream_ref, void*) -> void* { return nullptr; },
                               [](void*, std::size_t, cuda::stream_ref, void*) {}};
    void* p = nullptr;
    t.call("allocate", [&] {
      p = r.allocate(default_stream(), 1000, 256);
      return p == nullptr;
    });
  });
  add(A, "throws_runtime_error", [](trace& t) {
    callback_memory_resource r{
      [](std::size_t, cuda::stream_ref, void*) -> void* { throw std::runtime_error{"user"}; },
      [](void*, std::size_t, cuda::stream_ref, void*) {}};
    t.call_msg("allocate", [&] { return r.allocate(default_stream(), 1000, 256) != nullptr; });
  });
  add(A, "throws_out_of_memory", [](trace& t) {
    callback_memory_resource r{
      [](std::size_t, cuda::stream_ref, void*) -> void* { throw rmm::out_of_memory{"user oom"}; },
      [](void*, std::size_t, cuda::stream_ref, void*) {}};
    t.call_msg("allocate", [&] { return r.allocate(default_stream(), 1000, 256) != nullptr; });
  });
  add(A, "args_and_sizes", [](trace& t) {
    struct rec {
      std::vector<std::size_t> alloc_sizes, free_sizes;
      int alloc_arg_ok = 0, free_arg_ok = 0;
    } st;
    static int tag_a = 0, tag_f = 0;
    callback_memory_resource r{
      [&st](std::size_t n, cuda::stream_ref, void* arg) -> void* {
        st.alloc_sizes.push_back(n);
        st.alloc_arg_ok += arg == &tag_a;
        void* p = nullptr;
        return cudaMalloc(&p, n == 0 ? 1 : n) == cudaSuccess ? p : nullptr;
      },
      [&st](void* p, std::size_t n, cuda::stream_ref, void* arg) {
        st.free_sizes.push_back(n);
        st.free_arg_ok += arg == &tag_f;
        cudaFree(p);
      },
      &tag_a, &tag_f};
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}}) {
      void* p = try_alloc(t, "a" + std::to_string(n), r, n);
      free_(r, p, n);
    }
    t.add("alloc_sizes", st.alloc_sizes);
    t.add("free_sizes", st.free_sizes);
    t.add("alloc_arg_ok", st.alloc_arg_ok);
    t.add("free_arg_ok", st.free_arg_ok);
  });
  add(A, "equality", [](trace& t) {
    auto al = [](std::size_t, cuda::stream_ref, void*) -> void* { return nullptr; };
    auto de = [](void*, std::size_t, cuda::stream_ref, void*) {};
    callback_memory_resource a{al, de};
    callback_memory_resource b{al, de};
    auto c = a;
    t.add("copy==", a == c);
    t.add("other==", a == b);
  });

  auto const F = std::string{"failure_callback"};
  for (int retries : {0, 1, 3}) {
    add(F, "retries_" + std::to_string(retries), [retries](trace& t) {
      int calls = 0;
      std::vector<std::size_t> seen;
      failure_callback_resource_adaptor<> r{
        limiting_resource_adaptor{cuda_memory_resource{}, MiB},
        [&](std::size_t n, void*) {
          ++calls;
          seen.push_back(n);
          return calls <= retries;
        },
        nullptr};
      void* p = try_alloc(t, "over", r, 2 * MiB);
      t.add("calls", calls);
      t.add("sizes", seen);
      free_(r, p, 2 * MiB);
    });
  }
  add(F, "callback_frees", [](trace& t) {
    limiting_resource_adaptor lim{cuda_memory_resource{}, MiB};
    void* held = lim.allocate(default_stream(), 768 * KiB, 256);
    int calls  = 0;
    failure_callback_resource_adaptor<> r{lim,
                                          [&](std::size_t, void*) {
                                            ++calls;
                                            if (held) {
                                              lim.deallocate(default_stream(), held, 768 * KiB, 256);
                                              held = nullptr;
                                              return true;
                                            }
                                            return false;
                                          },
                                          nullptr};
    void* p = try_alloc(t, "a", r, 512 * KiB);
    t.add("calls", calls);
    free_(r, p, 512 * KiB);
  });
  add(F, "arg_passed", [](trace& t) {
    static int tag = 0;
    int ok         = 0;
    failure_callback_resource_adaptor<> r{limiting_resource_adaptor{cuda_memory_resource{}, 1024},
                                          [&](std::size_t, void* arg) {
                                            ok += arg == &tag;
                                            return false;
                                          },
                                          &tag};
    void* p = try_alloc(t, "a", r, 4096);
    t.add("arg_ok", ok);
    free_(r, p, 4096);
  });
  add(F, "bad_alloc_type", [](trace& t) {
    int calls = 0;
    failure_callback_resource_adaptor<rmm::bad_alloc> r{
      limiting_resource_adaptor{cuda_memory_resource{}, 1024},
      [&](std::size_t, void*) { return ++calls < 2; },
      nullptr};
    void* p = try_alloc(t, "a", r, 4096);
    t.add("calls", calls);
    free_(r, p, 4096);
  });
  add(F, "upstream", [](trace& t) {
    cuda_memory_resource c;
    failure_callback_resource_adaptor<> r{c, [](std::size_t, void*) { return false; }, nullptr};
    t.add("upstream==cuda", r.get_upstream_resource() == ref_t{c});
  });
}

void register_aligned()
{
  auto const A = std::string{"aligned"};
  for (std::size_t al : {std::size_t{256}, std::size_t{512}, std::size_t{4096}, std::size_t{65536},
                         std::size_t{100}, std::size_t{0}}) {
    for (std::size_t th : {std::size_t{0}, std::size_t{65536}}) {
      add(A, "al" + std::to_string(al) + "_th" + std::to_string(th), [al, th](trace& t) {
        statistics_resource_adaptor up{cuda_memory_resource{}};
        std::optional<aligned_resource_adaptor> a;
        if (!t.call_msg("construct", [&] {
              a.emplace(up, al, th);
              return true;
            })) {
          return;
        }
        for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{100000}}) {
          auto lbl = "a" + std::to_string(n);
          void* p  = try_alloc(t, lbl, *a, n);
          if (p) {
            t.add(lbl + ".aligned", reinterpret_cast<std::uintptr_t>(p) % (al ? al : 1) == 0);
          }
          t.add(lbl + ".up_bytes", up.get_bytes_counter().value);
          free_(*a, p, n);
        }
        t.add("up_end", up.get_bytes_counter().value);
      });
    }
  }
  add(A, "upstream", [](trace& t) {
    cuda_memory_resource c;
    aligned_resource_adaptor a{c, 4096};
    t.add("upstream==cuda", a.get_upstream_resource() == ref_t{c});
  });
}

/// Parses the logging adaptor's CSV: the header, then (action, size) of each row.
void record_log(trace& t, std::string const& text)
{
  std::istringstream in{text};
  std::string line;
  bool first = true;
  std::vector<std::string> rows;
  int n_cols = -1;
  while (std::getline(in, line)) {
    if (first) {
      t.add("header", line);
      first = false;
      continue;
    }
    std::vector<std::string> cols;
    std::stringstream ls{line};
    std::string c;
    while (std::getline(ls, c, ',')) { cols.push_back(c); }
    n_cols = static_cast<int>(cols.size());
    // Thread,Time,Action,Pointer,Size,Stream: keep Action and Size.
    rows.push_back(cols.size() > 4 ? cols[2] + "," + cols[4] : line);
  }
  t.add("columns", n_cols);
  t.add("rows", rows);
}

void register_logging()
{
  auto const A = std::string{"logging"};
  add(A, "ostream_rows", [](trace& t) {
    std::ostringstream out;
    {
      logging_resource_adaptor l{cuda_memory_resource{}, out};
      t.add("header()", l.header());
      void* a = try_alloc(t, "a", l, 100);
      void* b = try_alloc(t, "b", l, 0);
      free_(l, a, 100);
      free_(l, b, 0);
      l.flush();
    }
    record_log(t, out.str());
  });
  add(A, "failure_row", [](trace& t) {
    std::ostringstream out;
    {
      logging_resource_adaptor l{limiting_resource_adaptor{cuda_memory_resource{}, 1024}, out};
      void* a = try_alloc(t, "over", l, 4096);
      free_(l, a, 4096);
      l.flush();
    }
    record_log(t, out.str());
  });
  add(A, "auto_flush", [](trace& t) {
    std::ostringstream out;
    logging_resource_adaptor l{cuda_memory_resource{}, out, true};
    void* a = try_alloc(t, "a", l, 100);
    record_log(t, out.str());
    free_(l, a, 100);
  });
  add(A, "file", [](trace& t) {
    char path[] = "/tmp/oracle_log_XXXXXX";
    int fd      = mkstemp(path);
    if (fd >= 0) { close(fd); }
    {
      logging_resource_adaptor l{cuda_memory_resource{}, std::string{path}};
      void* a = try_alloc(t, "a", l, 256);
      free_(l, a, 256);
      l.flush();
    }
    std::ifstream in{path};
    std::stringstream ss;
    ss << in.rdbuf();
    record_log(t, ss.str());
    std::remove(path);
  });
  add(A, "default_filename_unset", [](trace& t) {
    unsetenv("RMM_LOG_FILE");
    t.call_msg("construct", [&] {
      logging_resource_adaptor l{cuda_memory_resource{}};
      return true;
    });
  });
  add(A, "upstream", [](trace& t) {
    std::ostringstream out;
    cuda_memory_resource c;
    logging_resource_adaptor l{c, out};
    t.add("upstream==cuda", l.get_upstream_resource() == ref_t{c});
  });
}

void register_thread_safe_prefetch()
{
  add("thread_safe", "threads", [](trace& t) {
    statistics_resource_adaptor up{pool_memory_resource{cuda_memory_resource{}, 16 * MiB}};
    thread_safe_resource_adaptor ts{up};
    std::vector<std::thread> th;
    for (int i = 0; i < 8; ++i) {
      th.emplace_back([&ts, i] {
        for (int k = 0; k < 200; ++k) {
          std::size_t n = 256 * (1 + (i + k) % 7);
          void* p       = ts.allocate(default_stream(), n, 256);
          ts.deallocate(default_stream(), p, n, 256);
        }
      });
    }
    for (auto& x : th) { x.join(); }
    // The peaks depend on the interleaving: only value and total are compared.
    t.add("up.bytes", std::vector<long long>{up.get_bytes_counter().value, up.get_bytes_counter().total});
    t.add("up.allocs",
          std::vector<long long>{up.get_allocations_counter().value, up.get_allocations_counter().total});
    t.add("upstream==", ts.get_upstream_resource() == ref_t{up});
  });
  add("prefetch", "managed", [](trace& t) {
    managed_memory_resource m;
    prefetch_resource_adaptor p{m};
    t.add("upstream==", p.get_upstream_resource() == ref_t{m});
    void* q = try_alloc(t, "a", p, MiB);
    t.add("sync", cudaDeviceSynchronize() == cudaSuccess);
    free_(p, q, MiB);
  });
}

}  // namespace

void register_adaptors()
{
  register_statistics();
  register_tracking();
  register_limiting();
  register_pool();
  register_arena();
  register_binning();
  register_fixed_size();
  register_callbacks();
  register_aligned();
  register_logging();
  register_thread_safe_prefetch();
}

}  // namespace oracle
