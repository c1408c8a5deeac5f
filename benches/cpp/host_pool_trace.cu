// Host-only replay of a trace through rmm::mr::pool_memory_resource, arena_memory_resource,
// fixed_size_memory_resource or binning_memory_resource over a host upstream, on one thread and the
// default stream: the C++ face, the bridge and the Rust resource without a GPU, for instruction
// counts under cachegrind, so two builds, or two resources, can be compared exactly where GPU hosts
// are too noisy to (docs/benchmarks.md).
//
//   nvcc -O2 -std=c++17 -I$CUDA_HOME/include/cccl -Iinclude -Itarget/cxxbridge \
//     benches/cpp/host_pool_trace.cu -o host_pool_trace target/release/librmm_cpp.a -lpthread -ldl -L$CUDA_HOME/lib
//   valgrind --tool=cachegrind --cache-sim=no ./host_pool_trace RESOURCE [long|0] [mixed]
//
// RESOURCE: pool, arena, fixed_size, binning, history, history-on, statistics, tracking, limiting
// or stack.
//
// The traces (SplitMix64, seed 42, 200k operations a replay, allocate or free a random live block
// with even odds):
// - fixed (default): sizes log-uniform in [8 B, 1 MiB], at most 1000 live (alloc_bench's
//   fixed_trace);
// - mixed: sizes log-uniform in [256 B, 256 MiB], at most 200 live: two requests in five are over
//   1 MiB (the arena's global arena, binning's upstream).
//
// pool and arena are 256 MiB on the fixed trace, 8 GiB on the mixed one (host memory, mostly never
// touched); fixed_size has 1 MiB blocks (RMM's default, the fixed trace's largest request; it
// cannot serve the mixed trace); binning is alloc_bench's, bins of 2^18 to 2^22 bytes over a pool.
//
// `history` is the pool under a history_resource_adaptor that does not record (the cost of the
// adaptor while recording is off), `history-on` the same recording every operation (a ring of
// 65536 events, no stacks); `statistics`, `tracking` and `limiting` the pool under that one
// adaptor (tracking without stacks, limiting with no effective limit), the cost of each adaptor
// between the bridge and the pool; `stack` Dask-CUDA's usual statistics over tracking over the
// pool.
//
// 5 replays (10^6 operations); `long`: 20. Instructions per operation: the total of a run less that
// of `./host_pool_trace <resource> 0` (construction and teardown only, no replay), divided by the
// operations printed.
#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/fixed_size_memory_resource.hpp>
#include <rmm/mr/history_resource_adaptor.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>
#include <rmm/resource_ref.hpp>
#include <cuda/memory_resource>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

struct host_up {
  void* allocate(cuda::stream_ref, std::size_t b, std::size_t a) { return ::operator new(b, std::align_val_t{a < 256 ? 256 : a}); }
  void deallocate(cuda::stream_ref, void* p, std::size_t, std::size_t a) noexcept { ::operator delete(p, std::align_val_t{a < 256 ? 256 : a}); }
  void* allocate_sync(std::size_t b, std::size_t a) { return allocate(cuda::stream_ref{cudaStream_t{}}, b, a); }
  void deallocate_sync(void* p, std::size_t b, std::size_t a) noexcept { deallocate(cuda::stream_ref{cudaStream_t{}}, p, b, a); }
  bool operator==(host_up const&) const { return true; }
  bool operator!=(host_up const&) const { return false; }
  friend void get_property(host_up const&, cuda::mr::device_accessible) noexcept {}
};

static std::uint64_t s = 42;
static std::uint64_t next() { s += 0x9e3779b97f4a7c15ULL; auto z = s; z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL; z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL; return z ^ (z >> 31); }

static bool mixed = false;

/// Replays the trace `runs` times through `mr`; returns the operations made.
static long replay(rmm::device_async_resource_ref mr, int runs) {
  std::size_t const max_live = mixed ? 200 : 1000;
  double const lo = mixed ? 8.0 : 3.0, span = mixed ? 20.0 : 17.0;
  cuda::stream_ref st{cudaStream_t{}};
  struct blk { void* p; std::size_t n; };
  std::vector<blk> live;
  long ops = 0;
  for (int run = 0; run < runs; ++run) {
    s = 42;
    for (int i = 0; i < 200000; ++i) {
      bool alloc = live.empty() || (live.size() < max_live && (next() & 1));
      if (alloc) {
        double e = lo + (next() % 1000) / 1000.0 * span;  // 8 B .. 1 MiB or 256 B .. 256 MiB, log-uniform
        std::size_t n = static_cast<std::size_t>(__builtin_exp2(e));
        live.push_back({mr.allocate(st, n, 256), n});
      } else {
        std::size_t j = next() % live.size();
        mr.deallocate(st, live[j].p, live[j].n, 256);
        live[j] = live.back(); live.pop_back();
      }
      ++ops;
    }
  }
  for (auto& b : live) mr.deallocate(st, b.p, b.n, 256);
  return ops;
}

int main(int argc, char** argv) {
  char const* what = argc > 1 ? argv[1] : "pool";
  int runs = 5;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "mixed") == 0) {
      mixed = true;
    } else if (std::strcmp(argv[i], "long") == 0) {
      runs = 20;
    } else if (std::strcmp(argv[i], "0") == 0) {
      runs = 0;
    } else {
      what = "";
    }
  }
  auto const is = [&](char const* name) { return std::strcmp(what, name) == 0; };
  bool const known = is("pool") || is("arena") || is("fixed_size") || is("binning") || is("history") ||
                     is("history-on") || is("statistics") || is("tracking") || is("limiting") || is("stack");
  if (!known || (mixed && is("fixed_size"))) {
    std::fprintf(stderr,
                 "usage: %s [pool|arena|fixed_size|binning|history|history-on|statistics|tracking|limiting|stack]"
                 " [long|0] [mixed]\n"
                 "(fixed_size serves the fixed trace only)\n",
                 argv[0]);
    return 2;
  }
  std::size_t const size = mixed ? std::size_t{8} << 30 : std::size_t{256} << 20;
  long ops;
  if (is("arena")) {
    rmm::mr::arena_memory_resource mr{host_up{}, size};
    ops = replay(mr, runs);
  } else if (is("fixed_size")) {
    rmm::mr::fixed_size_memory_resource mr{host_up{}, std::size_t{1} << 20};
    ops = replay(mr, runs);
  } else if (is("binning")) {
    rmm::mr::pool_memory_resource pool{host_up{}, size};
    rmm::mr::binning_memory_resource mr{pool, 18, 22};
    ops = replay(mr, runs);
  } else if (is("history") || is("history-on")) {
    rmm::mr::history_resource_adaptor mr{rmm::mr::pool_memory_resource{host_up{}, size}};
    if (is("history-on")) { mr.record_history(true, std::size_t{1} << 16); }
    ops = replay(mr, runs);
  } else if (is("statistics")) {
    rmm::mr::statistics_resource_adaptor mr{rmm::mr::pool_memory_resource{host_up{}, size}};
    ops = replay(mr, runs);
  } else if (is("tracking")) {
    rmm::mr::tracking_resource_adaptor mr{rmm::mr::pool_memory_resource{host_up{}, size}};
    ops = replay(mr, runs);
  } else if (is("limiting")) {
    rmm::mr::limiting_resource_adaptor mr{rmm::mr::pool_memory_resource{host_up{}, size}, std::size_t{1} << 40};
    ops = replay(mr, runs);
  } else if (is("stack")) {
    rmm::mr::pool_memory_resource pool{host_up{}, size};
    rmm::mr::statistics_resource_adaptor mr{rmm::mr::tracking_resource_adaptor{pool}};
    ops = replay(mr, runs);
  } else {
    rmm::mr::pool_memory_resource mr{host_up{}, size};
    ops = replay(mr, runs);
  }
  std::printf("%s%s ops %ld\n", what, mixed ? " mixed" : "", ops);
}
