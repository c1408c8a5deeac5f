/*
 * alloc_bench: one benchmark, written once against the rmm:: C++ API, built twice -- against the
 * rmm-rs headers + librmm_cpp.a and against RMM 26.10 (librmm.so from its PyPI wheel) -- so that the
 * two implementations run the same code. `benches/run_side_by_side.sh` builds both and puts their
 * results side by side.
 *
 * RMM_BENCH_IMPL (a string literal) names the implementation in the output: "rmm-rs" or
 * "rmm-26.10". Only API that both have is used, and no #ifdef is needed for it.
 *
 * Output: comment lines start with '#'; everything else is CSV with the header
 *   impl,resource,workload,param,value,unit
 * `value` is a number, or one of skipped / timeout / error (then `unit` says why).
 *
 * Resources: pool (pool_memory_resource over cuda_memory_resource, initial size 50% of free
 * memory), arena (arena_memory_resource, 50% of free memory), fixed_size (fixed_size_memory_resource
 * over cuda, 1 MiB blocks), binning (RMM's benchmark configuration, benchmarks/random_allocations'
 * make_binning: binning_memory_resource with bins of 2^18 .. 2^22 bytes over a pool made like
 * `pool`), statistics_pool, tracking_pool and limiting_pool (one adaptor over a pool made like
 * `pool`; the limit is the pool's size), stats_tracking_pool (statistics_resource_adaptor over
 * tracking_resource_adaptor over a pool made like `pool`: Dask-CUDA's usual stack), cuda_async (cuda_async_memory_resource), cuda
 * (cuda_memory_resource). With --baselines also: cudaMallocAsync and cudaMalloc called directly
 * (impl "raw"), Thrust's own temporary allocator (thrust_default) and preallocated buffers for
 * multi_stream.
 *
 * Workloads:
 *   random_allocations  RMM's benchmarks/random_allocations: N in {1000, 10000, 100000} allocations
 *                       of uniform size in [1, max] bytes, max in {1, 4, 64, 256} MiB; allocate with
 *                       probability 0.73 while fewer than N were made and usage stays under 16000
 *                       MiB, else free a random live block (also when an allocation throws
 *                       rmm::bad_alloc); 2N steps, then free the rest. ns per operation (allocate or
 *                       free), host time on the default stream.
 *   fixed_trace         200k operations on one stream, sizes log-uniform in [8 B, 1 MiB], at most
 *                       1000 live blocks, allocate with probability 0.5 below that (SplitMix64,
 *                       seed 42). ns per operation, median of up to 7 runs after a warm-up of at
 *                       least 0.3 s (one run for a resource slower than half the budget). (The
 *                       live count is a random walk: it peaks near 470, so the cap never binds.)
 *   mixed_trace         the same on sizes log-uniform in [256 B, 256 MiB], at most 200 live blocks
 *                       (seed 42): small and very large requests together, as the arena and
 *                       binning resources meet them.
 *   threads             N threads (--threads, default 1, 2, 4, 8, 16), each replaying its own trace
 *                       (seed 1000 + t) against the one resource, in three stream patterns
 *                       (--patterns, default all): own (each thread its own rmm::cuda_stream),
 *                       shared (all N threads on one rmm::cuda_stream, created once per run: a
 *                       thread pool issuing on one application stream), ptds (every thread on
 *                       the per-thread default stream, cudaStreamPerThread). param is
 *                       "threads=N;streams=PATTERN". Wall time / total operations (aggregate).
 *   multi_stream        RMM's multi_stream_allocations: 4 streams, 8 kernels per iteration (kernel k
 *                       on stream k % 4), each preceded by a 1-element device_uvector<int> on its
 *                       stream and busy for 1M clock cycles; 50 iterations, device synchronised
 *                       after each. Total ms.
 *   thrust_sort         thrust::sort(rmm::exec_policy(stream, mr)) of 2^26 random uint32.
 *   thrust_pipeline     sort + reduce + inclusive_scan of the same data. Both ms per call, median of
 *                       10 after 2 warm-ups.
 *
 * Run time (--budget-s S, default 3): a random_allocations run is skipped when the previous,
 * smaller one projects it past S seconds, a threads run (when fixed_trace ran in the same process)
 * when fixed_trace projects it (as if the threads did not overlap) past 4 S; runs are cut off
 * ("timeout") after 3 S (threads: 4 S). A warm-up slower than S/2 is taken as the only
 * measurement. In practice this skips cudaMalloc's largest random_allocations counts and its
 * higher thread counts; rows say so. A cut-off threads run stops every thread (at the next check,
 * every 1024 operations; also when a thread throws) and its row says how far it got: "timeout",
 * unit "cut off after T s at P% of the operations; >=X ns/op", X the aggregate rate over the
 * operations done, read as a lower bound (a prefix of a trace holds fewer live blocks).
 *
 * Options: --baselines  --budget-s S  --only w1,w2  --resources r1,r2  --patterns own,shared,ptds
 * --threads 1,2,4,8,16  --quick (small sizes: a smoke test)  --help
 *
 * Exit status: 0 when nothing threw unexpectedly (also when there is no CUDA device: then it prints
 * "skipped: no CUDA device"), 1 otherwise.
 */

#include <rmm/aligned.hpp>
#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/detail/error.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/error.hpp>
#include <rmm/exec_policy.hpp>
#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/fixed_size_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>
#if __has_include(<rmm/mr/virtual_pool_memory_resource.hpp>)
#include <rmm/mr/virtual_pool_memory_resource.hpp>
#endif
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>
#include <cuda_runtime_api.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/system/cuda/execution_policy.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#ifndef RMM_BENCH_IMPL
#error "define RMM_BENCH_IMPL as a string literal naming the implementation, e.g. \"rmm-rs\""
#endif

// A named namespace, not an anonymous one: nvcc warns (#177) about the raw resources' friend
// functions and operators in an anonymous namespace, which only the CCCL concepts look at.
namespace alloc_bench {

using bench_clock = std::chrono::steady_clock;
constexpr std::size_t alignment = rmm::CUDA_ALLOCATION_ALIGNMENT;
constexpr std::size_t mib       = std::size_t{1} << 20;

double seconds_since(bench_clock::time_point t0)
{
  return std::chrono::duration<double>(bench_clock::now() - t0).count();
}

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  auto const n = v.size();
  return n == 0 ? 0.0 : (n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

// ------------------------------------------------------------------------------------------------
// Options and output
// ------------------------------------------------------------------------------------------------

/// How the threads of the threads workload pick their streams.
enum class stream_pattern { own, shared, ptds };

constexpr char const* pattern_name(stream_pattern p)
{
  return p == stream_pattern::own ? "own" : (p == stream_pattern::shared ? "shared" : "ptds");
}

constexpr int max_threads = 64;

struct options {
  bool baselines{false};
  bool quick{false};
  double budget_s{3.0};
  std::vector<std::string> only;       // workloads; empty: all
  std::vector<std::string> resources;  // empty: all
  std::vector<stream_pattern> patterns{stream_pattern::own, stream_pattern::shared, stream_pattern::ptds};
  std::vector<int> thread_counts{1, 2, 4, 8, 16};
};

options opts;         // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
int failures{0};      // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)

std::vector<std::string> split(std::string const& s)
{
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto const end = s.find(',', start);
    auto const piece = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!piece.empty()) { out.push_back(piece); }
    if (end == std::string::npos) { break; }
    start = end + 1;
  }
  return out;
}

bool wanted(std::vector<std::string> const& list, std::string const& name)
{
  return list.empty() || std::find(list.begin(), list.end(), name) != list.end();
}

/// One result: `impl` is RMM_BENCH_IMPL for the rmm:: resources and "raw" for the baselines.
struct reporter {
  std::string impl;
  std::string resource;

  void value(char const* workload, std::string const& param, double v, char const* unit) const
  {
    std::printf("%s,%s,%s,%s,%.6g,%s\n", impl.c_str(), resource.c_str(), workload, param.c_str(), v, unit);
    std::fflush(stdout);
  }
  /// A row without a number: `what` is skipped, timeout or error; `why` goes in the unit column.
  void text(char const* workload, std::string const& param, char const* what, std::string why) const
  {
    for (auto& c : why) {
      if (c == ',' || c == '\n' || c == '\r') { c = ';'; }
    }
    std::printf("%s,%s,%s,%s,%s,%s\n", impl.c_str(), resource.c_str(), workload, param.c_str(), what, why.c_str());
    std::fflush(stdout);
  }
  void error(char const* workload, std::string const& param, std::string const& why) const
  {
    ++failures;
    std::fprintf(stderr, "ERROR: %s %s %s %s: %s\n", impl.c_str(), resource.c_str(), workload, param.c_str(), why.c_str());
    text(workload, param, "error", why);
  }
};

// ------------------------------------------------------------------------------------------------
// Baseline resources: the CUDA runtime called directly, as cuda::mr resources so that they run
// through exactly the same code as the rmm:: ones.
// ------------------------------------------------------------------------------------------------

[[noreturn]] void throw_alloc_failure(cudaError_t status, char const* what, std::size_t bytes)
{
  (void)cudaGetLastError();  // cudaErrorMemoryAllocation is not sticky; clear it
  std::string msg = std::string{what} + " of " + std::to_string(bytes) + " bytes failed: " + cudaGetErrorString(status);
  if (status == cudaErrorMemoryAllocation) { throw rmm::out_of_memory{msg}; }
  throw rmm::bad_alloc{msg};
}

/// cudaMalloc / cudaFree; the stream is ignored.
struct raw_cuda_malloc {
  void* allocate(cuda::stream_ref, std::size_t bytes, std::size_t = alignment)
  {
    void* p{nullptr};
    auto const status = cudaMalloc(&p, bytes);
    if (status != cudaSuccess) { throw_alloc_failure(status, "cudaMalloc", bytes); }
    return p;
  }
  void deallocate(cuda::stream_ref, void* p, std::size_t, std::size_t = alignment) noexcept { (void)cudaFree(p); }
  void* allocate_sync(std::size_t bytes, std::size_t align = alignment)
  {
    return allocate(cuda::stream_ref{cudaStream_t{nullptr}}, bytes, align);
  }
  void deallocate_sync(void* p, std::size_t bytes, std::size_t align = alignment) noexcept
  {
    deallocate(cuda::stream_ref{cudaStream_t{nullptr}}, p, bytes, align);
  }
  bool operator==(raw_cuda_malloc const&) const noexcept { return true; }
  bool operator!=(raw_cuda_malloc const&) const noexcept { return false; }
  friend void get_property(raw_cuda_malloc const&, cuda::mr::device_accessible) noexcept {}
};

/// cudaMallocAsync / cudaFreeAsync from the device's default memory pool (whose release threshold
/// main() raises to the maximum, as cuda_async_memory_resource does for its own pool).
struct raw_cuda_malloc_async {
  void* allocate(cuda::stream_ref s, std::size_t bytes, std::size_t = alignment)
  {
    void* p{nullptr};
    auto const status = cudaMallocAsync(&p, bytes, s.get());
    if (status != cudaSuccess) { throw_alloc_failure(status, "cudaMallocAsync", bytes); }
    return p;
  }
  void deallocate(cuda::stream_ref s, void* p, std::size_t, std::size_t = alignment) noexcept
  {
    (void)cudaFreeAsync(p, s.get());
  }
  void* allocate_sync(std::size_t bytes, std::size_t align = alignment)
  {
    auto* p = allocate(cuda::stream_ref{cudaStream_t{nullptr}}, bytes, align);
    RMM_CUDA_TRY(cudaStreamSynchronize(nullptr));
    return p;
  }
  void deallocate_sync(void* p, std::size_t bytes, std::size_t align = alignment) noexcept
  {
    deallocate(cuda::stream_ref{cudaStream_t{nullptr}}, p, bytes, align);
    (void)cudaStreamSynchronize(nullptr);
  }
  bool operator==(raw_cuda_malloc_async const&) const noexcept { return true; }
  bool operator!=(raw_cuda_malloc_async const&) const noexcept { return false; }
  friend void get_property(raw_cuda_malloc_async const&, cuda::mr::device_accessible) noexcept {}
};

static_assert(cuda::mr::resource_with<raw_cuda_malloc, cuda::mr::device_accessible>);
static_assert(cuda::mr::resource_with<raw_cuda_malloc_async, cuda::mr::device_accessible>);

// ------------------------------------------------------------------------------------------------
// Traces
// ------------------------------------------------------------------------------------------------

/// SplitMix64 (Steele, Lea, Flood 2014): the generator both builds share, bit for bit.
struct splitmix64 {
  std::uint64_t state;
  std::uint64_t next()
  {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z               = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z               = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

/// One step of a trace: allocate `size` bytes (size > 0), or free the live block at `slot` (the
/// live list is kept by swap-remove, so a slot is an index into it at that moment).
struct trace_op {
  std::uint32_t size;
  std::uint32_t slot;
};

constexpr std::size_t trace_max_live = 1000;

/// The shape of a random trace: request sizes log-uniform in [min_bytes, max_bytes], at most
/// max_live blocks live.
struct trace_shape {
  std::size_t min_bytes;
  std::size_t max_bytes;
  std::size_t max_live;
};

/// fixed_trace's shape, and mixed_trace's (small and very large requests together).
constexpr trace_shape fixed_shape{8, mib, trace_max_live};
constexpr trace_shape mixed_shape{256, 256 * mib, 200};

std::vector<trace_op> make_trace(std::uint64_t seed, std::size_t num_ops, trace_shape shape = fixed_shape)
{
  splitmix64 rng{seed};
  std::vector<trace_op> ops;
  ops.reserve(num_ops);
  std::size_t live = 0;
  double const lo = std::log2(static_cast<double>(shape.min_bytes));
  double const hi = std::log2(static_cast<double>(shape.max_bytes));
  for (std::size_t i = 0; i < num_ops; ++i) {
    bool const alloc = live == 0 || (live < shape.max_live && rng.unit() < 0.5);
    if (alloc) {
      auto size = static_cast<std::uint32_t>(std::exp2(lo + (hi - lo) * rng.unit()));
      size      = std::clamp<std::uint32_t>(size, static_cast<std::uint32_t>(shape.min_bytes),
                                       static_cast<std::uint32_t>(shape.max_bytes));
      ops.push_back({size, 0});
      ++live;
    } else {
      ops.push_back({0, static_cast<std::uint32_t>(rng.next() % live)});
      --live;
    }
  }
  return ops;
}

struct block {
  void* ptr;
  std::size_t size;
};

/// Frees every block in `live` on `stream`.
void free_all(rmm::device_async_resource_ref mr, cuda::stream_ref stream, std::vector<block>& live)
{
  for (auto const& b : live) { mr.deallocate(stream, b.ptr, b.size, alignment); }
  live.clear();
}

/**
 * Replays `ops` on `stream`; returns true when all ran, false when `deadline` passed first or
 * `*stop` (when given) became true; both are checked every 1024 operations. The blocks still live
 * at the end are left in `live` (the caller frees them after timing). `*done` (when given) receives
 * the operations done, also when cut off or throwing.
 */
bool replay(std::vector<trace_op> const& ops,
            rmm::device_async_resource_ref mr,
            cuda::stream_ref stream,
            std::vector<block>& live,
            bench_clock::time_point deadline,
            std::atomic<bool> const* stop = nullptr,
            std::size_t* done = nullptr)
{
  live.clear();
  live.reserve(trace_max_live);
  std::size_t i = 0;
  auto report = [&] {
    if (done != nullptr) { *done = i; }
  };
  try {
    for (auto const& op : ops) {
      if (op.size != 0) {
        live.push_back({mr.allocate(stream, op.size, alignment), op.size});
      } else {
        auto const b   = live[op.slot];
        live[op.slot] = live.back();
        live.pop_back();
        mr.deallocate(stream, b.ptr, b.size, alignment);
      }
      if ((++i & 1023) == 0 &&
          (bench_clock::now() > deadline || (stop != nullptr && stop->load(std::memory_order_relaxed)))) {
        report();
        return false;
      }
    }
  } catch (...) {
    report();
    free_all(mr, stream, live);
    throw;
  }
  report();
  return true;
}

// ------------------------------------------------------------------------------------------------
// Workloads
// ------------------------------------------------------------------------------------------------

/// How many timed runs fit the budget after a warm-up that took `warmup_s`.
int runs_for(double warmup_s, int max_runs)
{
  if (warmup_s <= 0) { return max_runs; }
  return std::clamp(static_cast<int>(opts.budget_s / warmup_s), 1, max_runs);
}

/// A run is cut off after this long.
double hard_limit_s() { return 3 * opts.budget_s; }
/// The threads workload may take longer: its projection assumes no overlap between the threads.
double threads_limit_s() { return 4 * opts.budget_s; }

bench_clock::time_point deadline_after(double s)
{
  return bench_clock::now() + std::chrono::duration_cast<bench_clock::duration>(std::chrono::duration<double>(s));
}

/// RMM's random_allocation_free, operation for operation, on the default stream (not synchronised
/// here). Returns the operations done (allocations plus frees) and sets `completed` false when cut
/// off at the deadline.
std::size_t random_allocation_free(rmm::device_async_resource_ref mr,
                                   std::size_t num_allocations,
                                   std::size_t max_size_mib,
                                   bench_clock::time_point deadline,
                                   bool& completed)
{
  cuda::stream_ref const stream{cudaStream_t{nullptr}};  // RMM's benchmark uses the default stream
  std::default_random_engine generator;
  std::uniform_int_distribution<std::size_t> size_distribution(1, max_size_mib * mib);
  constexpr std::size_t max_usage = std::size_t{16000} * mib;
  constexpr int allocation_probability{73};  // percent
  std::uniform_int_distribution<int> op_distribution(0, 99);
  std::uniform_int_distribution<std::size_t> index_distribution(0, num_allocations - 1);

  std::vector<block> allocations;
  allocations.reserve(num_allocations);
  std::size_t allocation_count{0};
  std::size_t allocation_size{0};
  std::size_t ops{0};
  completed = true;

  try {
    for (std::size_t i = 0; i < num_allocations * 2; ++i) {
      bool do_alloc    = true;
      auto const size  = size_distribution(generator);
      if (!allocations.empty()) {
        int const chance = op_distribution(generator);
        do_alloc = chance < allocation_probability && allocation_count < num_allocations &&
                   allocation_size + size < max_usage;
      }
      void* ptr = nullptr;
      if (do_alloc) {
        try {
          ptr = mr.allocate(stream, size, alignment);
          ++ops;
        } catch (rmm::bad_alloc const&) {
          do_alloc = false;
        }
      }
      if (do_alloc) {
        allocations.push_back({ptr, size});
        ++allocation_count;
        allocation_size += size;
      } else if (!allocations.empty()) {
        std::size_t const index = index_distribution(generator) % allocations.size();
        auto const b            = allocations[index];
        allocations[index]      = allocations.back();
        allocations.pop_back();
        mr.deallocate(stream, b.ptr, b.size, alignment);
        allocation_size -= b.size;
        ++ops;
      }
      if ((i & 255) == 255 && bench_clock::now() > deadline) {
        completed = false;
        break;
      }
    }
  } catch (...) {
    free_all(mr, stream, allocations);
    throw;
  }
  ops += allocations.size();
  free_all(mr, stream, allocations);
  return ops;
}

void bench_random_allocations(reporter const& out, rmm::device_async_resource_ref mr)
{
  char const* const w = "random_allocations";
  std::vector<std::size_t> const counts = opts.quick ? std::vector<std::size_t>{1000}
                                                     : std::vector<std::size_t>{1000, 10000, 100000};
  for (std::size_t const max_mib : {1, 4, 64, 256}) {
    double ns_per_op = -1;  // from the previous (smaller) count
    for (std::size_t const n : counts) {
      std::string const param = "n=" + std::to_string(n) + ";max=" + std::to_string(max_mib) + "MiB";
      double const projected_s = ns_per_op * 1e-9 * static_cast<double>(2 * n);
      if (ns_per_op > 0 && projected_s > opts.budget_s) {
        char why[96];
        std::snprintf(why, sizeof why, "projected %.0f s > budget %.0f s", projected_s, opts.budget_s);
        out.text(w, param, "skipped", why);
        continue;
      }
      try {
        bool completed = true;
        auto const t0  = bench_clock::now();
        auto const ops = random_allocation_free(mr, n, max_mib, deadline_after(hard_limit_s()), completed);
        RMM_CUDA_TRY(cudaStreamSynchronize(nullptr));
        double const s = seconds_since(t0);
        ns_per_op      = s * 1e9 / static_cast<double>(std::max<std::size_t>(ops, 1));
        if (!completed) {
          char why[96];
          std::snprintf(why, sizeof why, "cut off after %.1f s (%.0f ns/op so far)", s, ns_per_op);
          out.text(w, param, "timeout", why);
          ns_per_op = std::numeric_limits<double>::infinity();
        } else {
          out.value(w, param, ns_per_op, "ns/op");
        }
      } catch (std::exception const& e) {
        out.error(w, param, e.what());
        break;
      }
    }
  }
}

/// Replays the fixed trace on one stream: warm-up, then the median of up to 7 runs. Returns ns/op
/// (infinity when cut off or failed) for the threads workload's projection.
double bench_fixed_trace(reporter const& out, rmm::device_async_resource_ref mr, std::vector<trace_op> const& trace,
                         char const* w = "fixed_trace", char const* shape = "live<=1000;8B-1MiB")
{
  std::string const param = "ops=" + std::to_string(trace.size()) + ";" + shape;
  try {
    rmm::cuda_stream stream;
    std::vector<block> live;
    // One replay, freed afterwards; its seconds, or a negative number when it was cut off.
    auto replay_once = [&]() -> double {
      auto const t0  = bench_clock::now();
      bool const all = replay(trace, mr, stream, live, deadline_after(hard_limit_s()));
      stream.synchronize();
      double const s = seconds_since(t0);
      free_all(mr, stream, live);
      stream.synchronize();
      return all ? s : -s;
    };
    auto cut_off = [&](double s) {
      char why[96];
      std::snprintf(why, sizeof why, "cut off after %.1f s", -s);
      out.text(w, param, "timeout", why);
      return std::numeric_limits<double>::infinity();
    };
    double const first = replay_once();
    if (first < 0) { return cut_off(first); }
    std::vector<double> samples;
    if (first > opts.budget_s / 2) {
      // A slow resource (cudaMalloc) is not run again: its warm-up is its measurement.
      samples.push_back(first);
    } else {
      // Warm up for at least 0.3 s, not a fixed count: a pool replays the trace in about 10 ms,
      // too short for the CPU's clock to settle, while RMM's pool takes 100 ms. Both sides get the
      // same rule.
      double warm = first;
      for (int i = 0; i < 100 && warm < 0.3; ++i) {
        double const s = replay_once();
        if (s < 0) { return cut_off(s); }
        warm += s;
      }
      int const runs = runs_for(first, 7);
      for (int r = 0; r < runs; ++r) {
        double const s = replay_once();
        if (s < 0) { return cut_off(s); }
        samples.push_back(s);
      }
    }
    double const ns = median(samples) * 1e9 / static_cast<double>(trace.size());
    out.value(w, param, ns, "ns/op");
    return ns;
  } catch (std::exception const& e) {
    out.error(w, param, e.what());
    return std::numeric_limits<double>::infinity();
  }
}

/// One run of the threads workload.
struct threads_run {
  double seconds{0};        ///< from the start signal to the last thread's end (its stream synchronised)
  bool completed{true};     ///< false: cut off (the deadline passed, or another thread threw)
  std::size_t ops_done{0};  ///< operations done by all threads together
};

/// What run_threads asks of CUDA: the selftest, which has no GPU, replaces it.
struct thread_streams {
  thread_streams()                                 = default;
  thread_streams(thread_streams const&)            = delete;
  thread_streams& operator=(thread_streams const&) = delete;
  thread_streams(thread_streams&&)                 = delete;
  thread_streams& operator=(thread_streams&&)      = delete;
  virtual ~thread_streams()                        = default;
  /// Called first on every worker thread.
  virtual void enter_thread() = 0;
  /// A new stream; it lives as long as the result.
  virtual std::shared_ptr<void> make_stream(cudaStream_t& handle) = 0;
  /// Waits for the work queued on `stream`.
  virtual void synchronize(cuda::stream_ref stream) = 0;
};

/// The real ones: rmm::cuda_stream on the current device.
struct cuda_thread_streams final : thread_streams {
  int device{rmm::get_current_cuda_device().value()};
  void enter_thread() override { RMM_CUDA_TRY(cudaSetDevice(device)); }
  std::shared_ptr<void> make_stream(cudaStream_t& handle) override
  {
    auto stream = std::make_shared<rmm::cuda_stream>();
    handle      = stream->value();
    return stream;
  }
  void synchronize(cuda::stream_ref stream) override { RMM_CUDA_TRY(cudaStreamSynchronize(stream.get())); }
};

/**
 * `num_threads` threads, thread t replaying traces[t] against one resource, on the streams
 * `pattern` names: each its own stream, one stream made here for all of them, or the per-thread
 * default stream. Every thread stops at its next check once the deadline (`limit_s` after the
 * start) has passed or another thread has thrown, so that no thread waits on another's cut-off.
 * Throws when a thread threw (after every thread has given its blocks back).
 */
threads_run run_threads(rmm::device_async_resource_ref mr,
                        std::vector<std::vector<trace_op>> const& traces,
                        int num_threads,
                        stream_pattern pattern,
                        double limit_s,
                        thread_streams& streams)
{
  auto const n = static_cast<std::size_t>(num_threads);
  cudaStream_t shared_handle{};
  std::shared_ptr<void> shared;  // the shared pattern's one stream, made once per run
  if (pattern == stream_pattern::shared) { shared = streams.make_stream(shared_handle); }

  // Start: the threads spin on `go` (before the clock starts, so that they set off together).
  // Finish: they wait on `finished` without spinning, so that a finished thread does not take a
  // CPU from one still running.
  std::mutex lock;
  std::condition_variable changed;
  std::size_t ready    = 0;  // guarded by lock
  std::size_t finished = 0;  // guarded by lock
  std::size_t expected = n;  // guarded by lock: fewer when a thread could not be started
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  bench_clock::time_point deadline{};  // written before go
  std::vector<std::string> errors(n);
  std::vector<bench_clock::time_point> ends(n);
  std::vector<std::size_t> ops_done(n, 0);
  std::vector<char> cut(n, 0);

  auto count = [&](std::size_t& counter) {
    std::lock_guard<std::mutex> guard{lock};
    ++counter;
    changed.notify_all();
  };
  auto wait_for = [&](std::size_t const& counter) {
    std::unique_lock<std::mutex> guard{lock};
    changed.wait(guard, [&] { return counter >= expected; });
  };

  auto worker = [&](std::size_t t) {
    bool counted_ready = false;
    bool counted_done  = false;
    std::vector<block> live;
    try {
      streams.enter_thread();
      std::shared_ptr<void> own;
      // The per-thread default stream (RMM 26.10 deprecates rmm::cuda_stream_per_thread for this).
      cuda::stream_ref stream{cudaStream_t{cudaStreamPerThread}};
      if (pattern == stream_pattern::own) {
        cudaStream_t handle{};
        own    = streams.make_stream(handle);
        stream = cuda::stream_ref{handle};
      } else if (pattern == stream_pattern::shared) {
        stream = cuda::stream_ref{shared_handle};
      }
      count(ready);
      counted_ready = true;
      while (!go.load(std::memory_order_acquire)) { std::this_thread::yield(); }
      bool const all = replay(traces[t], mr, stream, live, deadline, &stop, &ops_done[t]);
      streams.synchronize(stream);
      ends[t] = bench_clock::now();
      if (!all) {
        cut[t] = 1;
        stop.store(true, std::memory_order_relaxed);
      }
      count(finished);
      counted_done = true;
      // Not timed: give the rest back once every thread has finished.
      wait_for(finished);
      free_all(mr, stream, live);
      streams.synchronize(stream);
    } catch (std::exception const& e) {
      errors[t] = e.what();
      stop.store(true, std::memory_order_relaxed);
      if (!counted_ready) { count(ready); }
      if (!counted_done) {
        ends[t] = bench_clock::now();
        count(finished);
      }
    }
  };

  std::vector<std::thread> threads;
  threads.reserve(n);
  try {
    for (std::size_t t = 0; t < n; ++t) { threads.emplace_back(worker, t); }
  } catch (std::exception const& e) {
    // Run with the threads that started, then report the failure.
    std::lock_guard<std::mutex> guard{lock};
    expected = threads.size();
    errors[threads.size() < n ? threads.size() : 0] = std::string{"could not start a thread: "} + e.what();
    stop.store(true);
    changed.notify_all();
  }
  wait_for(ready);
  auto const t0 = bench_clock::now();
  deadline      = t0 + std::chrono::duration_cast<bench_clock::duration>(std::chrono::duration<double>(limit_s));
  go.store(true, std::memory_order_release);
  for (auto& th : threads) { th.join(); }

  for (auto const& e : errors) {
    if (!e.empty()) { throw rmm::logic_error{"a thread threw: " + e}; }
  }
  threads_run run;
  for (std::size_t t = 0; t < threads.size(); ++t) {
    run.seconds = std::max(run.seconds, std::chrono::duration<double>(ends[t] - t0).count());
    run.ops_done += ops_done[t];
    if (cut[t] != 0) { run.completed = false; }
  }
  return run;
}

/// The unit text of a cut-off threads run: how far it got, and the aggregate rate so far as a
/// lower bound (">=X ns/op"; the whole-run bound when nothing was done).
std::string cut_off_note(threads_run const& run, double total_ops)
{
  double const done  = static_cast<double>(run.ops_done);
  double const bound = run.seconds * 1e9 / (done > 0 ? done : total_ops);
  char why[128];
  std::snprintf(why, sizeof why, "cut off after %.2f s at %.0f%% of the operations; >=%.4g ns/op", run.seconds,
                100.0 * done / total_ops, bound);
  return why;
}

/// The threads workload: every pattern and thread count the options select. `single_ns_per_op`,
/// when fixed_trace ran, projects each run (as if the threads did not overlap) to skip hopeless ones.
void bench_threads(reporter const& out,
                   rmm::device_async_resource_ref mr,
                   std::vector<std::vector<trace_op>> const& traces,
                   std::optional<double> single_ns_per_op)
{
  char const* const w = "threads";
  cuda_thread_streams streams;
  for (auto const pattern : opts.patterns) {
    for (int const num_threads : opts.thread_counts) {
      std::string const param = "threads=" + std::to_string(num_threads) + ";streams=" + pattern_name(pattern);
      double total_ops        = 0;
      for (int t = 0; t < num_threads; ++t) { total_ops += static_cast<double>(traces[static_cast<std::size_t>(t)].size()); }
      if (single_ns_per_op.has_value()) {
        double const projected_s = *single_ns_per_op * 1e-9 * total_ops;
        if (!(projected_s <= threads_limit_s())) {
          char why[96];
          std::snprintf(why, sizeof why, "projected %.0f s from fixed_trace > budget", projected_s);
          out.text(w, param, "skipped", why);
          continue;
        }
      }
      try {
        auto const warm = run_threads(mr, traces, num_threads, pattern, threads_limit_s(), streams);
        if (!warm.completed) {
          out.text(w, param, "timeout", cut_off_note(warm, total_ops));
          continue;
        }
        std::vector<double> samples;
        int const runs = warm.seconds > opts.budget_s / 2 ? 0 : runs_for(warm.seconds, 3);
        if (runs == 0) { samples.push_back(warm.seconds); }
        std::optional<threads_run> cut;
        for (int r = 0; r < runs; ++r) {
          auto const run = run_threads(mr, traces, num_threads, pattern, threads_limit_s(), streams);
          if (!run.completed) {
            cut = run;
            break;
          }
          samples.push_back(run.seconds);
        }
        if (cut) {
          out.text(w, param, "timeout", cut_off_note(*cut, total_ops));
          continue;
        }
        out.value(w, param, median(samples) * 1e9 / total_ops, "ns/op");
      } catch (std::exception const& e) {
        out.error(w, param, e.what());
      }
    }
  }
}

// multi_stream ------------------------------------------------------------------------------------

constexpr int multi_streams           = 4;
constexpr int multi_kernels_per_iter  = 8;
constexpr int multi_iterations        = 50;
constexpr long long multi_busy_cycles = 1'000'000;  // about 0.5 ms on an H100

__global__ void compute_bound_kernel(int* out, long long cycles)
{
  long long const begin = clock64();
  long long now         = begin;
  if (threadIdx.x == 0) {
    while (now - begin < cycles) { now = clock64(); }
  }
  *out = static_cast<int>(now);
}

std::string multi_stream_param()
{
  return "streams=" + std::to_string(multi_streams) + ";kernels=" + std::to_string(multi_kernels_per_iter) +
         ";iters=" + std::to_string(multi_iterations);
}

void bench_multi_stream(reporter const& out, rmm::device_async_resource_ref mr)
{
  char const* const w = "multi_stream";
  std::string const param = multi_stream_param();
  try {
    std::vector<rmm::cuda_stream> streams(multi_streams);
    auto iteration = [&] {
      for (int k = 0; k < multi_kernels_per_iter; ++k) {
        auto const& stream = streams[static_cast<std::size_t>(k % multi_streams)];
        rmm::device_uvector<int> buffer(1, stream, mr);
        compute_bound_kernel<<<1, 1, 0, stream.value()>>>(buffer.data(), multi_busy_cycles);
        RMM_CUDA_TRY(cudaGetLastError());
      }
      RMM_CUDA_TRY(cudaDeviceSynchronize());
    };
    iteration();  // warm-up: every stream has had memory once
    auto const t0 = bench_clock::now();
    for (int i = 0; i < multi_iterations; ++i) { iteration(); }
    out.value(w, param, seconds_since(t0) * 1e3, "ms");
  } catch (std::exception const& e) {
    out.error(w, param, e.what());
  }
}

/// The same kernels on preallocated buffers: the time with no allocator in the way.
void bench_multi_stream_preallocated(reporter const& out)
{
  char const* const w = "multi_stream";
  std::string const param = multi_stream_param();
  int* buffers{nullptr};
  try {
    std::vector<rmm::cuda_stream> streams(multi_streams);
    RMM_CUDA_TRY(cudaMalloc(&buffers, sizeof(int) * multi_kernels_per_iter));
    auto iteration = [&] {
      for (int k = 0; k < multi_kernels_per_iter; ++k) {
        auto const& stream = streams[static_cast<std::size_t>(k % multi_streams)];
        compute_bound_kernel<<<1, 1, 0, stream.value()>>>(buffers + k, multi_busy_cycles);
        RMM_CUDA_TRY(cudaGetLastError());
      }
      RMM_CUDA_TRY(cudaDeviceSynchronize());
    };
    iteration();
    auto const t0 = bench_clock::now();
    for (int i = 0; i < multi_iterations; ++i) { iteration(); }
    out.value(w, param, seconds_since(t0) * 1e3, "ms");
  } catch (std::exception const& e) {
    out.error(w, param, e.what());
  }
  if (buffers != nullptr) { (void)cudaFree(buffers); }
}

// thrust ------------------------------------------------------------------------------------------

/// Device data for the Thrust workloads: random keys kept pristine, a working copy and an output.
struct thrust_data {
  std::size_t n{};
  std::uint32_t* pristine{};
  std::uint32_t* keys{};
  std::uint32_t* scanned{};
  std::uint64_t expected_sum{};

  explicit thrust_data(std::size_t count) : n{count}
  {
    std::vector<std::uint32_t> host(n);
    splitmix64 rng{42};
    for (auto& x : host) {
      x = static_cast<std::uint32_t>(rng.next() >> 32);
      expected_sum += x;
    }
    try {
      RMM_CUDA_TRY(cudaMalloc(&pristine, n * sizeof(std::uint32_t)));
      RMM_CUDA_TRY(cudaMalloc(&keys, n * sizeof(std::uint32_t)));
      RMM_CUDA_TRY(cudaMalloc(&scanned, n * sizeof(std::uint32_t)));
      RMM_CUDA_TRY(cudaMemcpy(pristine, host.data(), n * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
    } catch (...) {
      release();
      throw;
    }
  }
  thrust_data(thrust_data const&)            = delete;
  thrust_data& operator=(thrust_data const&) = delete;
  ~thrust_data() { release(); }

  void release() noexcept
  {
    for (auto* p : {pristine, keys, scanned}) {
      if (p != nullptr) { (void)cudaFree(p); }
    }
    pristine = keys = scanned = nullptr;
  }
};

thrust_data* shared_thrust_data{nullptr};  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)

/**
 * Times `call(stream)` (which must run on `stream`) on a fresh copy of the keys: 2 warm-ups, then
 * the median of 10, in ms. The first warm-up's result is checked with `check`.
 */
template <class Call, class Check>
double time_thrust(rmm::cuda_stream const& stream, Call&& call, Check&& check)
{
  auto& d = *shared_thrust_data;
  std::vector<double> samples;
  for (int r = 0; r < 12; ++r) {
    RMM_CUDA_TRY(cudaMemcpyAsync(d.keys, d.pristine, d.n * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice, stream.value()));
    stream.synchronize();
    auto const t0 = bench_clock::now();
    call();
    stream.synchronize();
    double const ms = seconds_since(t0) * 1e3;
    if (r == 0) { check(); }
    if (r >= 2) { samples.push_back(ms); }
  }
  return median(samples);
}

/// The Thrust workloads with execution policies from `make_policy(stream)`.
template <class MakePolicy>
void bench_thrust_with(reporter const& out, MakePolicy&& make_policy)
{
  auto& d = *shared_thrust_data;
  std::string const param = "n=2^" + std::to_string(static_cast<int>(std::log2(static_cast<double>(d.n)))) + ";uint32";
  rmm::cuda_stream stream;

  auto check_sorted = [&] {
    bool const ok = thrust::is_sorted(thrust::cuda::par.on(stream.value()), d.keys, d.keys + d.n);
    if (!ok) { throw rmm::logic_error{"thrust::sort left the keys unsorted"}; }
  };

  try {
    double const ms = time_thrust(
      stream, [&] { thrust::sort(make_policy(stream), d.keys, d.keys + d.n); }, check_sorted);
    out.value("thrust_sort", param, ms, "ms/call");
  } catch (std::exception const& e) {
    out.error("thrust_sort", param, e.what());
  }

  try {
    std::uint64_t sum = 0;
    double const ms   = time_thrust(
      stream,
      [&] {
        thrust::sort(make_policy(stream), d.keys, d.keys + d.n);
        sum = thrust::reduce(make_policy(stream), d.keys, d.keys + d.n, std::uint64_t{0});
        thrust::inclusive_scan(make_policy(stream), d.keys, d.keys + d.n, d.scanned);
      },
      [&] {
        check_sorted();
        if (sum != d.expected_sum) { throw rmm::logic_error{"thrust::reduce returned a wrong sum"}; }
      });
    out.value("thrust_pipeline", param, ms, "ms/call");
  } catch (std::exception const& e) {
    out.error("thrust_pipeline", param, e.what());
  }
}

void bench_thrust(reporter const& out, rmm::device_async_resource_ref mr)
{
  bench_thrust_with(out, [mr](rmm::cuda_stream const& s) { return rmm::exec_policy(s, mr); });
}

// ------------------------------------------------------------------------------------------------
// Driver
// ------------------------------------------------------------------------------------------------

struct workload_inputs {
  std::vector<trace_op> trace;
  std::vector<trace_op> mixed_trace;
  std::vector<std::vector<trace_op>> thread_traces;
};

/// Every workload the options select, on one resource.
void run_all(reporter const& out, rmm::device_async_resource_ref mr, workload_inputs const& in)
{
  std::fprintf(stdout, "# resource %s (%s)\n", out.resource.c_str(), out.impl.c_str());
  if (wanted(opts.only, "random_allocations")) { bench_random_allocations(out, mr); }
  // fixed_trace's ns/op projects the threads runs; without fixed_trace they run to their cut-off.
  std::optional<double> single;
  if (wanted(opts.only, "fixed_trace")) { single = bench_fixed_trace(out, mr, in.trace); }
  if (wanted(opts.only, "mixed_trace")) {
    bench_fixed_trace(out, mr, in.mixed_trace, "mixed_trace", "live<=200;256B-256MiB");
  }
  if (wanted(opts.only, "threads")) { bench_threads(out, mr, in.thread_traces, single); }
  if (wanted(opts.only, "multi_stream")) { bench_multi_stream(out, mr); }
  if (wanted(opts.only, "thrust") && shared_thrust_data != nullptr) { bench_thrust(out, mr); }
}

/// Builds a resource with `make`, runs everything on it, and destroys it before the next one so
/// that each starts with the same free memory.
template <class Make>
void with_resource(std::string const& impl, std::string const& name, workload_inputs const& in, Make&& make)
{
  if (!wanted(opts.resources, name)) { return; }
  reporter const out{impl, name};
  try {
    auto resource = make();
    run_all(out, rmm::device_async_resource_ref{resource}, in);
  } catch (std::exception const& e) {
    out.error("construct", "-", e.what());
  }
}

void print_usage()
{
  std::puts(
    "alloc_bench [--baselines] [--budget-s S] [--only w1,w2] [--resources r1,r2]\n"
    "            [--patterns own,shared,ptds] [--threads 1,2,4,8,16] [--quick]\n"
    "  workloads: random_allocations fixed_trace mixed_trace threads multi_stream thrust\n"
    "  resources: pool arena fixed_size binning stats_tracking_pool virtual_pool (rmm-rs only)\n"
    "             cuda_async cuda; with --baselines also cudaMallocAsync cudaMalloc thrust_default preallocated\n"
    "  patterns (threads): own (a stream per thread), shared (one stream for all threads),\n"
    "             ptds (the per-thread default stream)\n"
    "  threads:   thread counts of the threads workload, 1..64");
}

std::vector<stream_pattern> parse_patterns(std::string const& list)
{
  std::vector<stream_pattern> out;
  for (auto const& name : split(list)) {
    if (name == "own") {
      out.push_back(stream_pattern::own);
    } else if (name == "shared") {
      out.push_back(stream_pattern::shared);
    } else if (name == "ptds") {
      out.push_back(stream_pattern::ptds);
    } else {
      throw std::invalid_argument{"unknown stream pattern " + name + " (own, shared, ptds)"};
    }
  }
  if (out.empty()) { throw std::invalid_argument{"--patterns needs at least one of own, shared, ptds"}; }
  return out;
}

std::vector<int> parse_thread_counts(std::string const& list)
{
  std::vector<int> out;
  for (auto const& piece : split(list)) {
    std::size_t used = 0;
    int n            = 0;
    try {
      n = std::stoi(piece, &used);
    } catch (std::exception const&) {
      used = 0;
    }
    if (used != piece.size() || n < 1 || n > max_threads) {
      throw std::invalid_argument{"--threads: " + piece + " is not a thread count in 1.." + std::to_string(max_threads)};
    }
    out.push_back(n);
  }
  if (out.empty()) { throw std::invalid_argument{"--threads needs at least one thread count"}; }
  return out;
}

bool parse(int argc, char** argv)
{
  for (int i = 1; i < argc; ++i) {
    std::string const a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { throw std::invalid_argument{a + " needs a value"}; }
      return argv[++i];
    };
    if (a == "--baselines") {
      opts.baselines = true;
    } else if (a == "--quick") {
      opts.quick = true;
    } else if (a == "--budget-s") {
      opts.budget_s = std::stod(next());
    } else if (a == "--only") {
      opts.only = split(next());
    } else if (a == "--resources") {
      opts.resources = split(next());
    } else if (a == "--patterns") {
      opts.patterns = parse_patterns(next());
    } else if (a == "--threads") {
      opts.thread_counts = parse_thread_counts(next());
    } else if (a == "--help" || a == "-h") {
      print_usage();
      std::exit(0);
    } else {
      throw std::invalid_argument{"unknown option " + a};
    }
  }
  return true;
}

}  // namespace alloc_bench

#ifndef ALLOC_BENCH_NO_MAIN  // alloc_bench_selftest.cu includes this file for its workload logic
int main(int argc, char** argv)
{
  using namespace alloc_bench;  // NOLINT(google-build-using-namespace)
  try {
    parse(argc, argv);
  } catch (std::exception const& e) {
    std::fprintf(stderr, "%s\n", e.what());
    print_usage();
    return 2;
  }

  // Without a driver RMM 26.10 returns -1 (the failed cudaGetDeviceCount's untouched -1), rmm-rs 0.
  if (rmm::get_num_cuda_devices() <= 0) {
    std::puts("skipped: no CUDA device");
    return 0;
  }

  try {
    int const device = rmm::get_current_cuda_device().value();
    cudaDeviceProp prop{};
    RMM_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
    int driver = 0;
    int runtime = 0;
    RMM_CUDA_TRY(cudaDriverGetVersion(&driver));
    RMM_CUDA_TRY(cudaRuntimeGetVersion(&runtime));
    auto const [free_bytes, total_bytes] = rmm::available_device_memory();
    std::printf("# impl: %s\n", RMM_BENCH_IMPL);
    std::printf("# device: %d %s (sm_%d%d, %.1f GiB, %.1f GiB free)\n", device, prop.name, prop.major, prop.minor,
                static_cast<double>(total_bytes) / (1 << 30), static_cast<double>(free_bytes) / (1 << 30));
    std::printf("# driver %d, runtime %d, CCCL %d, budget %.1f s per run\n", driver, runtime, CCCL_VERSION, opts.budget_s);
    std::puts("impl,resource,workload,param,value,unit");

    workload_inputs in;
    std::size_t const trace_ops = opts.quick ? 20'000 : 200'000;
    in.trace                    = make_trace(42, trace_ops);
    in.mixed_trace              = make_trace(42, trace_ops, mixed_shape);
    int const most_threads      = *std::max_element(opts.thread_counts.begin(), opts.thread_counts.end());
    for (int t = 0; t < std::max(most_threads, 16); ++t) {
      in.thread_traces.push_back(make_trace(1000 + static_cast<std::uint64_t>(t), trace_ops));
    }

    // The Thrust workloads' data (2^26 keys made on the host: a second's work) only when they run.
    std::optional<thrust_data> data;
    if (wanted(opts.only, "thrust")) {
      data.emplace(std::size_t{1} << (opts.quick ? 20 : 26));
      shared_thrust_data = &*data;
    }

    std::string const impl = RMM_BENCH_IMPL;
    with_resource(impl, "pool", in, [] {
      return rmm::mr::pool_memory_resource{rmm::mr::cuda_memory_resource{}, rmm::percent_of_free_device_memory(50)};
    });
    with_resource(impl, "arena", in, [] {
      return rmm::mr::arena_memory_resource{rmm::mr::cuda_memory_resource{}, rmm::percent_of_free_device_memory(50)};
    });
    // Blocks of 1 MiB (RMM's default), the trace's largest request; 128 taken at a time.
    with_resource(impl, "fixed_size", in, [] {
      return rmm::mr::fixed_size_memory_resource{rmm::mr::cuda_memory_resource{}, std::size_t{1} << 20};
    });
    // RMM's benchmark configuration (benchmarks/random_allocations, make_binning): bins of
    // 256 KiB .. 4 MiB over a pool like `pool`; every request of the traces goes to a bin.
    with_resource(impl, "binning", in, [] {
      rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, rmm::percent_of_free_device_memory(50)};
      return rmm::mr::binning_memory_resource{pool, 18, 22};
    });
    // Each adaptor alone over a pool like `pool`: what one layer costs.
    with_resource(impl, "statistics_pool", in, [] {
      rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, rmm::percent_of_free_device_memory(50)};
      return rmm::mr::statistics_resource_adaptor{pool};
    });
    with_resource(impl, "tracking_pool", in, [] {
      rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, rmm::percent_of_free_device_memory(50)};
      return rmm::mr::tracking_resource_adaptor{pool};
    });
    with_resource(impl, "limiting_pool", in, [] {
      auto const size = rmm::percent_of_free_device_memory(50);
      rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, size};
      return rmm::mr::limiting_resource_adaptor{pool, size};
    });
    // Dask-CUDA's usual stack: statistics over tracking over a pool like `pool`.
    with_resource(impl, "stats_tracking_pool", in, [] {
      rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, rmm::percent_of_free_device_memory(50)};
      return rmm::mr::statistics_resource_adaptor{rmm::mr::tracking_resource_adaptor{pool}};
    });
#if __has_include(<rmm/mr/virtual_pool_memory_resource.hpp>)
    // rmm-rs only: the virtual-memory pool made like `pool` (that much mapped at once).
    with_resource(impl, "virtual_pool", in, [] {
      auto const size = rmm::percent_of_free_device_memory(50);
      return rmm::mr::virtual_pool_memory_resource{size, size};
    });
#endif
    with_resource(impl, "cuda_async", in, [] { return rmm::mr::cuda_async_memory_resource{}; });
    with_resource(impl, "cuda", in, [] { return rmm::mr::cuda_memory_resource{}; });

    if (opts.baselines) {
      // The default pool keeps what it has (as cuda_async_memory_resource's own pool does); trimmed
      // back afterwards.
      cudaMemPool_t default_pool{};
      RMM_CUDA_TRY(cudaDeviceGetDefaultMemPool(&default_pool, device));
      std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
      RMM_CUDA_TRY(cudaMemPoolSetAttribute(default_pool, cudaMemPoolAttrReleaseThreshold, &threshold));
      with_resource("raw", "cudaMallocAsync", in, [] { return raw_cuda_malloc_async{}; });
      RMM_CUDA_TRY(cudaDeviceSynchronize());
      RMM_CUDA_TRY(cudaMemPoolTrimTo(default_pool, 0));
      with_resource("raw", "cudaMalloc", in, [] { return raw_cuda_malloc{}; });
      if (wanted(opts.only, "thrust") && wanted(opts.resources, "thrust_default")) {
        bench_thrust_with(reporter{"raw", "thrust_default"},
                          [](rmm::cuda_stream const& s) { return thrust::cuda::par.on(s.value()); });
      }
      if (wanted(opts.only, "multi_stream") && wanted(opts.resources, "preallocated")) {
        bench_multi_stream_preallocated(reporter{"raw", "preallocated"});
      }
    }
    shared_thrust_data = nullptr;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "ERROR: %s\n", e.what());
    ++failures;
  }
  std::printf("# done: %d error(s)\n", failures);
  return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
#endif  // ALLOC_BENCH_NO_MAIN
