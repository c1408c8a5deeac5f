// Scenarios of each adaptor's own API: statistics and tracking counters, limiting, callbacks,
// failure callback retries, aligned adaptor, logging CSV, thread_safe, prefetch.
#include "helpers.hpp"

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

void register_pools();

void register_adaptors()
{
  register_pools();
  register_statistics();
  register_tracking();
  register_limiting();
  register_callbacks();
  register_aligned();
  register_logging();
  register_thread_safe_prefetch();
}

}  // namespace oracle
