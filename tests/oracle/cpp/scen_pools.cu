// Scenarios of the pools' own API: pool growth and limits (under a limiting upstream, with and
// without a maximum), arena sizes, which bin of a binning resource serves which size, fixed_size.
#include "helpers.hpp"

#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/fixed_size_memory_resource.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/pool_memory_resource.hpp>

#include <optional>

namespace oracle {
namespace {

using namespace rmm::mr;
constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = std::size_t{1} << 20;

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

}  // namespace

void register_pools()
{
  register_pool();
  register_arena();
  register_binning();
  register_fixed_size();
}

}  // namespace oracle
