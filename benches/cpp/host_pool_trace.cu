// Host-only replay of a fixed trace (200k operations, 8 B to 1 MiB log-uniform, at most 1000 live,
// SplitMix64 seed 42) through rmm::mr::pool_memory_resource or rmm::mr::arena_memory_resource (both
// 256 MiB), over a host upstream, on one thread and the default stream: the C++ face, the bridge
// and the Rust resource without a GPU, for instruction counts under cachegrind, so two builds, or
// the two resources, can be compared exactly where GPU hosts are too noisy to
// (docs/benchmarks.md).
//
//   nvcc -O2 -std=c++17 -I$CUDA_HOME/include/cccl -Iinclude -Itarget/cxxbridge \
//     benches/cpp/host_pool_trace.cu -o host_pool_trace target/release/librmm_cpp.a -lpthread -ldl -L$CUDA_HOME/lib
//   valgrind --tool=cachegrind --cache-sim=no ./host_pool_trace [pool|arena|history|history-on|statistics|tracking|limiting|stack] [long]
//
// `history` is the pool under a history_resource_adaptor that does not record (the cost of the
// adaptor while recording is off), `history-on` the same recording every operation (a ring of
// 65536 events, no stacks); `statistics`, `tracking` and `limiting` the pool under that one
// adaptor (tracking without stacks, limiting with no effective limit), the cost of each adaptor
// between the bridge and the pool; `stack` Dask-CUDA's usual statistics over tracking over the
// pool.
//
// 5 replays (10^6 operations); a second argument: 20. Instructions per operation: the total of a
// run less that of `./host_pool_trace <resource> 0` (construction and teardown only, no replay),
// divided by the operations printed.
#include <rmm/mr/arena_memory_resource.hpp>
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

/// Replays the trace `runs` times through `mr`; returns the operations made.
static long replay(rmm::device_async_resource_ref mr, int runs) {
  cuda::stream_ref st{cudaStream_t{}};
  struct blk { void* p; std::size_t n; };
  std::vector<blk> live;
  long ops = 0;
  for (int run = 0; run < runs; ++run) {
    s = 42;
    for (int i = 0; i < 200000; ++i) {
      bool alloc = live.empty() || (live.size() < 1000 && (next() & 1));
      if (alloc) {
        double e = 3.0 + (next() % 1000) / 1000.0 * 17.0;  // 8 B .. 1 MiB, log-uniform
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
  char const* const what = argc > 1 ? argv[1] : "pool";
  bool const arena      = std::strcmp(what, "arena") == 0;
  bool const history    = std::strcmp(what, "history") == 0;
  bool const history_on = std::strcmp(what, "history-on") == 0;
  bool const stats      = std::strcmp(what, "statistics") == 0;
  bool const tracking   = std::strcmp(what, "tracking") == 0;
  bool const limiting   = std::strcmp(what, "limiting") == 0;
  bool const stack      = std::strcmp(what, "stack") == 0;
  if (!arena && !history && !history_on && !stats && !tracking && !limiting && !stack &&
      std::strcmp(what, "pool") != 0) {
    std::fprintf(stderr, "usage: %s [pool|arena|history|history-on|statistics|tracking|limiting|stack] [long|0]\n",
                 argv[0]);
    return 2;
  }
  int const runs = argc > 2 ? (std::strcmp(argv[2], "0") == 0 ? 0 : 20) : 5;
  long ops;
  if (arena) {
    rmm::mr::arena_memory_resource mr{host_up{}, std::size_t{256} << 20};
    ops = replay(mr, runs);
  } else if (history || history_on) {
    rmm::mr::history_resource_adaptor mr{rmm::mr::pool_memory_resource{host_up{}, std::size_t{256} << 20}};
    if (history_on) { mr.record_history(true, std::size_t{1} << 16); }
    ops = replay(mr, runs);
  } else if (stats) {
    rmm::mr::statistics_resource_adaptor mr{rmm::mr::pool_memory_resource{host_up{}, std::size_t{256} << 20}};
    ops = replay(mr, runs);
  } else if (tracking) {
    rmm::mr::tracking_resource_adaptor mr{rmm::mr::pool_memory_resource{host_up{}, std::size_t{256} << 20}};
    ops = replay(mr, runs);
  } else if (limiting) {
    rmm::mr::limiting_resource_adaptor mr{rmm::mr::pool_memory_resource{host_up{}, std::size_t{256} << 20},
                                          std::size_t{1} << 40};
    ops = replay(mr, runs);
  } else if (stack) {
    rmm::mr::pool_memory_resource pool{host_up{}, std::size_t{256} << 20};
    rmm::mr::statistics_resource_adaptor mr{rmm::mr::tracking_resource_adaptor{pool}};
    ops = replay(mr, runs);
  } else {
    rmm::mr::pool_memory_resource mr{host_up{}, std::size_t{256} << 20};
    ops = replay(mr, runs);
  }
  std::printf("%s ops %ld\n", what, ops);
}
