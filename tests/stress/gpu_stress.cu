// GPU stress of the rmm:: C++ resources: many threads, each on its own stream, doing a random mix
// of allocations and frees over one shared resource. Every block is filled by a kernel with a
// pattern derived from each word's address and the block's unique tag, and checked by a kernel
// before it is freed; a fraction of the blocks is handed to another thread (allocated and filled on
// stream A, an event recorded, stream B waits, checks and refills it, and later frees it on B).
// Any mismatch (overlapping live blocks, memory reused before the last stream-ordered use of its
// previous owner, a corrupted word) fails the run with the first bad address.
//
//   gpu_stress [--resource pool,cuda_async,...|all] [--threads 16] [--ops N] [--seed S] ...
//   gpu_stress --help
//
// Exits 0 and prints "skipped: no CUDA device" when there is no GPU; 1 on any mismatch or error.

#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/fixed_size_memory_resource.hpp>
#include <rmm/mr/managed_memory_resource.hpp>
#include <rmm/mr/pinned_host_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---------------------------------------------------------------------------------------------
// Device side: one kernel that checks and/or fills a list of blocks.

/// One block for the pattern kernel: check against `check_tag` (0: no check), then fill with
/// `fill_tag` (0: no fill).
struct desc {
  unsigned long long ptr;
  unsigned long long bytes;
  unsigned long long check_tag;
  unsigned long long fill_tag;
};

// Descriptors travel as a kernel argument (copied at launch), so no buffer has to outlive a
// launch; 120 of them keep the argument under the classic 4 KiB limit.
constexpr int max_desc = 120;
struct desc_list {
  desc d[max_desc];
};

/// Where the check kernel reports mismatches (plain cudaMalloc memory, outside the resource under
/// test). `count` counts mismatched words (or tail bytes); the first one claims the details.
struct error_record {
  unsigned long long count;
  unsigned long long addr;
  unsigned long long expected;
  unsigned long long got;
  unsigned long long tag;
  unsigned int claimed;
};

__host__ __device__ inline unsigned long long mix64(unsigned long long x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The value of the 8-byte word at `addr` in a block tagged `tag`. The tag makes two live blocks
/// that overlap disagree about the shared words, which a pattern of the address alone would not.
__host__ __device__ inline unsigned long long pattern(unsigned long long addr, unsigned long long tag)
{
  return mix64(addr ^ mix64(tag));
}

__device__ void report(error_record* err,
                       unsigned long long addr,
                       unsigned long long expected,
                       unsigned long long got,
                       unsigned long long tag)
{
  atomicAdd(&err->count, 1ULL);
  if (atomicCAS(&err->claimed, 0u, 1u) == 0u) {
    err->addr     = addr;
    err->expected = expected;
    err->got      = got;
    err->tag      = tag;
  }
}

// grid.y: one descriptor each; grid.x * blockDim.x threads stride over its words.
__global__ void pattern_kernel(desc_list list, error_record* err)
{
  desc const d                 = list.d[blockIdx.y];
  unsigned long long const nwords = d.bytes / 8;
  auto* const words            = reinterpret_cast<unsigned long long*>(d.ptr);
  for (unsigned long long w = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       w < nwords;
       w += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    unsigned long long const addr = d.ptr + 8 * w;
    if (d.check_tag != 0) {
      unsigned long long const expected = pattern(addr, d.check_tag);
      unsigned long long const got      = words[w];
      if (got != expected) { report(err, addr, expected, got, d.check_tag); }
    }
    if (d.fill_tag != 0) { words[w] = pattern(addr, d.fill_tag); }
  }
  // The last partial word, byte by byte: byte i holds byte i of that word's pattern.
  unsigned int const tail = static_cast<unsigned int>(d.bytes % 8);
  if (blockIdx.x == 0 && threadIdx.x < tail) {
    unsigned long long const word_addr = d.ptr + 8 * nwords;
    auto* const byte = reinterpret_cast<unsigned char*>(word_addr) + threadIdx.x;
    if (d.check_tag != 0) {
      auto const expected = static_cast<unsigned char>(pattern(word_addr, d.check_tag) >> (8 * threadIdx.x));
      if (*byte != expected) { report(err, word_addr + threadIdx.x, expected, *byte, d.check_tag); }
    }
    if (d.fill_tag != 0) {
      *byte = static_cast<unsigned char>(pattern(word_addr, d.fill_tag) >> (8 * threadIdx.x));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Host side.

struct config {
  std::vector<std::string> resources;
  int threads{16};
  long long ops{-1};  ///< per thread; -1: each resource's default (see resource_defaults)
  std::size_t min_size{1};
  std::size_t max_size{0};  ///< 0: each resource's default
  int live{512};            ///< per thread, bound on live blocks
  int batch{64};            ///< operations between kernel launches
  double handoff{0.05};     ///< fraction of new blocks handed to another thread's stream
  std::uint64_t seed{0};
  bool inject{false};
  std::size_t initial_pool{std::size_t{256} << 20};  ///< the pools' initial size
  bool same_stream_reuse{false};  ///< cuda_async: the driver reuses a freed block on its own stream only
};

/// Per-resource defaults: operations per thread and largest block, with the reason when they are
/// scaled down from the pool's 10^6 ops / 1 MiB.
struct resource_defaults {
  char const* name;
  long long ops;
  std::size_t max_size;
  char const* why_scaled;  ///< nullptr: not scaled
};

constexpr resource_defaults defaults_table[] = {
  {"pool", 1000000, 1 << 20, nullptr},
  {"pool_async", 1000000, 1 << 20, nullptr},
  {"stats_pool", 1000000, 1 << 20, nullptr},
  {"fixed_size", 1000000, 1 << 20, nullptr},
  {"binning", 1000000, 1 << 20, nullptr},
  {"cuda_async", 100000, 1 << 20, "cudaMallocAsync/cudaFreeAsync cost about 1 us each and serialize in the driver"},
  {"pool_pinned", 100000, 64 << 10, "every fill and check crosses PCIe (pinned host memory)"},
  {"cuda", 2000, 1 << 20, "cudaFree synchronizes the whole device"},
  {"managed", 2000, 256 << 10, "cudaFree synchronizes the device; first touch migrates pages"},
  {"pinned", 2000, 64 << 10, "cudaHostAlloc/cudaFreeHost are slow and synchronize; kernels cross PCIe"},
};

resource_defaults const* find_defaults(std::string const& name)
{
  for (auto const& d : defaults_table) {
    if (name == d.name) { return &d; }
  }
  return nullptr;
}

/// A block the thread owns: live on its stream, filled with `tag`'s pattern.
struct block {
  void* ptr;
  std::size_t bytes;
  std::size_t align;
  std::uint64_t tag;
};

/// A CUDA event shared by the blocks of one hand-off batch; destroyed with the last of them
/// (cudaEventDestroy of a recorded event defers the release until it completes).
struct shared_event {
  cudaEvent_t ev{};
  shared_event() { RMM_CUDA_TRY(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming)); }
  shared_event(shared_event const&)            = delete;
  shared_event& operator=(shared_event const&) = delete;
  ~shared_event() { cudaEventDestroy(ev); }
};

struct handed_block {
  block b;
  std::shared_ptr<shared_event> ready;  ///< recorded after the fill on the sender's stream
};

struct inbox {
  std::mutex m;
  std::vector<handed_block> q;
};

/// The run's shared state.
struct shared_state {
  explicit shared_state(int n) : inboxes(static_cast<std::size_t>(n)) {}
  std::vector<inbox> inboxes;
  std::atomic<int> done_sending{0};
  std::atomic<long long> ops{0};
  std::atomic<long long> allocations{0};
  std::atomic<long long> handoffs{0};
  std::atomic<unsigned long long> bytes_filled{0};
  std::atomic<unsigned long long> bytes_checked{0};
  std::atomic<int> failures{0};
  std::mutex print_m;
};

/// splitmix64 stream: small, fast, and reproducible from the printed seed.
struct rng {
  std::uint64_t s;
  std::uint64_t next() { return mix64(s++); }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
};

template <class Resource>
class worker {
 public:
  worker(Resource& mr, config const& cfg, std::size_t max_size, bool any_alignment, int id,
         shared_state& st, error_record* err, long long ops, int device)
    : mr_{mr}, cfg_{cfg}, max_size_{max_size}, any_alignment_{any_alignment}, id_{id}, st_{st},
      err_{err}, ops_{ops}, device_{device},
      rng_{mix64(cfg.seed ^ (0x1000193ULL * static_cast<std::uint64_t>(id + 1)))},
      next_tag_{(static_cast<std::uint64_t>(id) + 1) << 40}
  {
  }

  void operator()()
  {
    bool counted = false;  // done_sending is incremented exactly once, whatever happens
    try {
      RMM_CUDA_TRY(cudaSetDevice(device_));
      stream_.emplace(rmm::cuda_stream::flags::non_blocking);
      try {
        main_loop();
      } catch (std::exception const& e) {
        fail(std::string{"threw during the run: "} + e.what());
      }
      // Nothing is sent after this; keep taking hand-offs until every thread has said so.
      st_.done_sending.fetch_add(1);
      counted = true;
      for (;;) {
        bool const all_done = st_.done_sending.load() == cfg_.threads;
        receive();
        if (all_done) { break; }
        std::this_thread::yield();
      }
      while (!live_.empty()) {
        std::vector<block> victims;
        while (!live_.empty() && victims.size() < static_cast<std::size_t>(max_desc)) {
          victims.push_back(live_.back());
          live_.pop_back();
        }
        check_and_free(victims);
      }
      stream_->synchronize();
    } catch (std::exception const& e) {
      fail(std::string{"threw: "} + e.what());
      if (!counted) { st_.done_sending.fetch_add(1); }
    }
  }

 private:
  void fail(std::string const& what)
  {
    std::lock_guard<std::mutex> lock{st_.print_m};
    std::printf("FAIL: thread %d %s\n", id_, what.c_str());
    ++st_.failures;
  }

  cuda::stream_ref stream() const { return cuda::stream_ref{stream_->value()}; }

  std::uint64_t new_tag() { return next_tag_++; }

  /// Launches the pattern kernel over `list` (any length), in chunks of max_desc.
  void launch(std::vector<desc> const& list)
  {
    for (std::size_t first = 0; first < list.size(); first += max_desc) {
      std::size_t const n = std::min<std::size_t>(max_desc, list.size() - first);
      desc_list args{};
      unsigned long long most = 0;
      for (std::size_t i = 0; i < n; ++i) {
        args.d[i] = list[first + i];
        most      = std::max(most, args.d[i].bytes);
        if (args.d[i].check_tag != 0) { st_.bytes_checked += args.d[i].bytes; }
        if (args.d[i].fill_tag != 0) { st_.bytes_filled += args.d[i].bytes; }
      }
      unsigned long long const words = most / 8;
      unsigned int const threads     = 256;
      unsigned int const per_cta     = threads * 16;
      unsigned int const grid_x =
        static_cast<unsigned int>(std::min<unsigned long long>(64, std::max<unsigned long long>(1, (words + per_cta - 1) / per_cta)));
      pattern_kernel<<<dim3{grid_x, static_cast<unsigned int>(n)}, threads, 0, stream_->value()>>>(args, err_);
      RMM_CUDA_TRY(cudaGetLastError());
    }
  }

  /// Checks `victims` on this stream, then frees them on it (stream-ordered after the check).
  void check_and_free(std::vector<block> const& victims)
  {
    std::vector<desc> list;
    list.reserve(victims.size());
    for (auto const& b : victims) {
      list.push_back({reinterpret_cast<std::uintptr_t>(b.ptr), b.bytes, b.tag, 0});
    }
    launch(list);
    for (auto const& b : victims) {
      mr_.deallocate(stream(), b.ptr, b.bytes, b.align);
      ++st_.ops;
    }
  }

  /// Takes the blocks handed to this thread: waits for each sender's event, then checks each
  /// block's pattern and refills it with a new tag on this stream. They join the live set.
  void receive()
  {
    std::vector<handed_block> got;
    {
      auto& box = st_.inboxes[static_cast<std::size_t>(id_)];
      std::lock_guard<std::mutex> lock{box.m};
      got.swap(box.q);
    }
    if (got.empty()) { return; }
    shared_event const* last = nullptr;
    std::vector<desc> list;
    list.reserve(got.size());
    for (auto& h : got) {
      if (h.ready.get() != last) {
        RMM_CUDA_TRY(cudaStreamWaitEvent(stream_->value(), h.ready->ev, 0));
        last = h.ready.get();
      }
      std::uint64_t const tag = new_tag();
      list.push_back({reinterpret_cast<std::uintptr_t>(h.b.ptr), h.b.bytes, h.b.tag, tag});
      h.b.tag = tag;
      live_.push_back(h.b);
    }
    launch(list);
  }

  std::size_t random_size()
  {
    double const lo = std::log(static_cast<double>(cfg_.min_size));
    double const hi = std::log(static_cast<double>(max_size_) + 1.0);
    auto const s    = static_cast<std::size_t>(std::exp(lo + (hi - lo) * rng_.uniform()));
    return std::clamp(s, cfg_.min_size, max_size_);
  }

  std::size_t random_alignment()
  {
    // Mostly the default; now and then any power of two up to 4 KiB (pools only: the plain CUDA
    // resources accept at most 256).
    if (!any_alignment_ || rng_.below(8) != 0) { return rmm::CUDA_ALLOCATION_ALIGNMENT; }
    return std::size_t{1} << rng_.below(13);
  }

  void main_loop()
  {
    long long done = 0;
    bool injected  = false;
    std::vector<block> victims;
    std::vector<block> fresh;
    std::vector<desc> list;
    while (done < ops_) {
      receive();
      long long const k = std::min<long long>(cfg_.batch, ops_ - done);
      // Plan: frees come from the blocks live (filled) before this batch; allocations after them.
      std::size_t eligible = live_.size();
      std::size_t n_alloc  = 0;
      victims.clear();
      for (long long i = 0; i < k; ++i) {
        std::size_t const now = live_.size() - victims.size() + n_alloc;
        bool free_one;
        if (eligible == 0) {
          free_one = false;
        } else if (now >= static_cast<std::size_t>(cfg_.live)) {
          free_one = true;
        } else {
          free_one = rng_.below(2) == 0;
        }
        if (free_one) {
          // Swap a random eligible block to the end of the eligible range and take it.
          std::size_t const j = rng_.below(eligible);
          std::swap(live_[j], live_[eligible - 1]);
          victims.push_back(live_[eligible - 1]);
          --eligible;
        } else {
          ++n_alloc;
        }
      }
      // The victims now sit at the end of live_, from index `eligible` on. Blocks received this
      // batch may be among them: their check-and-refill kernel is already queued on this stream.
      live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(eligible),
                  live_.begin() + static_cast<std::ptrdiff_t>(eligible + victims.size()));
      if (!victims.empty()) { check_and_free(victims); }

      fresh.clear();
      list.clear();
      for (std::size_t i = 0; i < n_alloc; ++i) {
        std::size_t const bytes = random_size();
        std::size_t const align = random_alignment();
        void* const p           = mr_.allocate(stream(), bytes, align);
        ++st_.ops;
        ++st_.allocations;
        auto const addr = reinterpret_cast<std::uintptr_t>(p);
        if (p == nullptr || addr % std::max(align, rmm::CUDA_ALLOCATION_ALIGNMENT) != 0) {
          char msg[160];
          std::snprintf(msg, sizeof msg, "allocate(%zu, align %zu) returned %p: misaligned", bytes, align, p);
          fail(msg);
          if (p != nullptr) { mr_.deallocate(stream(), p, bytes, align); }
          continue;
        }
        block const b{p, bytes, align, new_tag()};
        fresh.push_back(b);
        list.push_back({addr, bytes, 0, b.tag});
      }
      launch(list);
      if (cfg_.inject && !injected && id_ == 0 && !fresh.empty()) {
        // Self-test of the checker: corrupt one byte of a fresh block after its fill.
        RMM_CUDA_TRY(cudaMemsetAsync(fresh.front().ptr, 0xA5, 1, stream_->value()));
        injected = true;
      }

      // Hand some of the fresh blocks to other threads, behind one event for this batch.
      std::shared_ptr<shared_event> ready;
      for (auto const& b : fresh) {
        if (cfg_.threads > 1 && rng_.uniform() < cfg_.handoff) {
          if (!ready) {
            ready = std::make_shared<shared_event>();
            RMM_CUDA_TRY(cudaEventRecord(ready->ev, stream_->value()));
          }
          auto to = static_cast<int>(rng_.below(static_cast<std::uint64_t>(cfg_.threads - 1)));
          if (to >= id_) { ++to; }
          auto& box = st_.inboxes[static_cast<std::size_t>(to)];
          std::lock_guard<std::mutex> lock{box.m};
          box.q.push_back({b, ready});
          ++st_.handoffs;
        } else {
          live_.push_back(b);
        }
      }
      done += k;
    }
  }

  Resource& mr_;
  config const& cfg_;
  std::size_t max_size_;
  bool any_alignment_;
  int id_;
  shared_state& st_;
  error_record* err_;
  long long ops_;
  int device_;
  rng rng_;
  std::uint64_t next_tag_;
  std::optional<rmm::cuda_stream> stream_;
  std::vector<block> live_;
};

struct run_result {
  bool ok;
  long long allocations;
};

/// Runs the stress over `mr` and prints the summary line. `any_alignment`: the resource takes any
/// power-of-two alignment (the pools).
template <class Resource>
run_result stress(std::string const& name, Resource& mr, config const& cfg, bool any_alignment)
{
  auto const* def            = find_defaults(name);
  long long const ops        = cfg.ops > 0 ? cfg.ops : def->ops;
  std::size_t const max_size = cfg.max_size > 0 ? cfg.max_size : def->max_size;
  if (cfg.ops <= 0 && def->why_scaled != nullptr) {
    std::printf("note: %s: scaled down to %lld ops/thread, blocks up to %zu bytes (%s); --ops/--max-size override\n",
                name.c_str(), ops, max_size, def->why_scaled);
  }
  std::fflush(stdout);

  error_record* err = nullptr;
  RMM_CUDA_TRY(cudaMalloc(&err, sizeof(error_record)));
  RMM_CUDA_TRY(cudaMemset(err, 0, sizeof(error_record)));
  RMM_CUDA_TRY(cudaDeviceSynchronize());

  shared_state st{cfg.threads};
  int const device = rmm::get_current_cuda_device().value();
  std::vector<std::unique_ptr<worker<Resource>>> workers;
  for (int t = 0; t < cfg.threads; ++t) {
    workers.push_back(std::make_unique<worker<Resource>>(mr, cfg, max_size, any_alignment, t, st, err, ops, device));
  }
  auto const start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (auto& w : workers) {
    threads.emplace_back([&w]() { (*w)(); });
  }
  for (auto& th : threads) { th.join(); }
  RMM_CUDA_TRY(cudaDeviceSynchronize());
  double const secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  error_record rec{};
  RMM_CUDA_TRY(cudaMemcpy(&rec, err, sizeof rec, cudaMemcpyDeviceToHost));
  RMM_CUDA_TRY(cudaFree(err));

  bool ok = st.failures == 0 && rec.count == 0;
  if (rec.count != 0) {
    std::printf("FAIL: %s: %llu mismatched words; first bad address 0x%llx (block tag 0x%llx): expected 0x%016llx, got 0x%016llx\n",
                name.c_str(), rec.count, rec.addr, rec.tag, rec.expected, rec.got);
  }
  long long const total = st.ops.load();
  std::printf("gpu_stress: resource=%s threads=%d ops=%lld (%lld/thread + drain) allocations=%lld handoffs=%lld "
              "filled=%.2f GiB checked=%.2f GiB time=%.2f s ops/s=%.3g mismatches=%llu %s\n",
              name.c_str(), cfg.threads, total, ops, st.allocations.load(), st.handoffs.load(),
              static_cast<double>(st.bytes_filled.load()) / (1 << 30),
              static_cast<double>(st.bytes_checked.load()) / (1 << 30), secs,
              static_cast<double>(total) / secs, rec.count, ok ? "OK" : "FAILED");
  std::fflush(stdout);
  return {ok, st.allocations.load()};
}

bool run_resource(std::string const& name, config const& cfg)
{
  using namespace rmm::mr;
  std::size_t const initial = cfg.initial_pool;
  if (name == "pool") {
    pool_memory_resource pool{cuda_memory_resource{}, initial};
    bool const ok = stress(name, pool, cfg, true).ok;
    std::printf("  pool size at the end: %zu bytes\n", pool.pool_size());
    return ok;
  }
  if (name == "pool_async") {
    pool_memory_resource pool{cuda_async_memory_resource{}, initial};
    return stress(name, pool, cfg, true).ok;
  }
  if (name == "pool_pinned") {
    pool_memory_resource pool{pinned_host_memory_resource{}, std::min(initial, std::size_t{64} << 20)};
    return stress(name, pool, cfg, true).ok;
  }
  if (name == "stats_pool") {
    pool_memory_resource pool{cuda_memory_resource{}, initial};
    statistics_resource_adaptor stats{pool};
    auto const r      = stress(name, stats, cfg, true);
    auto const bytes  = stats.get_bytes_counter();
    auto const allocs = stats.get_allocations_counter();
    std::printf("  statistics: allocations total %lld (made %lld), outstanding %lld blocks / %lld bytes, peak %lld bytes\n",
                static_cast<long long>(allocs.total), r.allocations, static_cast<long long>(allocs.value),
                static_cast<long long>(bytes.value), static_cast<long long>(bytes.peak));
    bool const counters_ok = allocs.total == r.allocations && allocs.value == 0 && bytes.value == 0;
    if (!counters_ok) { std::puts("FAIL: stats_pool: the statistics do not match what was done"); }
    return r.ok && counters_ok;
  }
  if (name == "fixed_size") {
    // 1 MiB blocks (RMM's default), the largest request here: every thread's magazines are in use.
    fixed_size_memory_resource mr{cuda_memory_resource{}};
    return stress(name, mr, cfg, false).ok;
  }
  if (name == "binning") {
    // RMM's benchmark configuration: bins of 256 KiB to 4 MiB over a pool.
    pool_memory_resource pool{cuda_memory_resource{}, initial};
    binning_memory_resource mr{pool, 18, 22};
    return stress(name, mr, cfg, false).ok;
  }
  if (name == "cuda_async") {
    cuda_async_memory_resource mr{};
    if (cfg.same_stream_reuse) {
      // Without these the driver may hand a block freed on one stream to another, ordered by a
      // dependency it inserts itself or by the free having completed (cudaMemPoolAttr docs).
      int off = 0;
      RMM_CUDA_TRY(cudaMemPoolSetAttribute(mr.pool_handle(), cudaMemPoolReuseAllowInternalDependencies, &off));
      RMM_CUDA_TRY(cudaMemPoolSetAttribute(mr.pool_handle(), cudaMemPoolReuseAllowOpportunistic, &off));
    }
    return stress(name, mr, cfg, false).ok;
  }
  if (name == "cuda") {
    cuda_memory_resource mr{};
    return stress(name, mr, cfg, false).ok;
  }
  if (name == "managed") {
    managed_memory_resource mr{};
    return stress(name, mr, cfg, false).ok;
  }
  if (name == "pinned") {
    pinned_host_memory_resource mr{};
    return stress(name, mr, cfg, false).ok;
  }
  std::printf("FAIL: unknown resource '%s'\n", name.c_str());
  return false;
}

void usage()
{
  std::puts(
    "usage: gpu_stress [options]\n"
    "  --resource LIST   comma-separated, or 'all' (default: all):\n"
    "                    pool, pool_async, stats_pool, fixed_size, binning, cuda_async, pool_pinned, cuda, managed, pinned\n"
    "  --threads N       threads, each with its own stream (default 16)\n"
    "  --ops N           allocate/free operations per thread (default: per resource, 10^6 for the\n"
    "                    pools over device memory; the slow resources are scaled down and say so)\n"
    "  --min-size B      smallest block (default 1)\n"
    "  --max-size B      largest block; sizes are log-uniform (default: per resource, 1 MiB)\n"
    "  --live N          most live blocks per thread (default 512)\n"
    "  --batch N         operations between kernel launches (default 64)\n"
    "  --handoff F       fraction of new blocks handed to another thread's stream (default 0.05)\n"
    "  --seed S          random seed (default: from the clock; always printed)\n"
    "  --initial-pool B  the pools' initial size, a multiple of 256 (default 256 MiB; 64 MiB at\n"
    "                    most for pool_pinned); 0: every chunk comes from growth on a stream\n"
    "  --same-stream-reuse  cuda_async: the driver may reuse a freed block on its own stream only\n"
    "  --small           sanitizer-sized run: 4 threads, 300 ops/thread, blocks up to 64 KiB\n"
    "  --inject-corruption  corrupt one byte after a fill: the run must then fail (checker self-test)");
}

bool parse(int argc, char** argv, config& cfg)
{
  std::string list = "all";
  cfg.seed         = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int i = 1; i < argc; ++i) {
    std::string const a = argv[i];
    auto value          = [&]() -> std::string {
      if (i + 1 >= argc) { throw std::invalid_argument{a + " needs a value"}; }
      return argv[++i];
    };
    if (a == "--resource") {
      list = value();
    } else if (a == "--threads") {
      cfg.threads = std::stoi(value());
    } else if (a == "--ops") {
      cfg.ops = std::stoll(value());
    } else if (a == "--min-size") {
      cfg.min_size = std::stoull(value());
    } else if (a == "--max-size") {
      cfg.max_size = std::stoull(value());
    } else if (a == "--live") {
      cfg.live = std::stoi(value());
    } else if (a == "--batch") {
      cfg.batch = std::stoi(value());
    } else if (a == "--handoff") {
      cfg.handoff = std::stod(value());
    } else if (a == "--seed") {
      cfg.seed = std::stoull(value());
    } else if (a == "--same-stream-reuse") {
      cfg.same_stream_reuse = true;
    } else if (a == "--initial-pool") {
      cfg.initial_pool = std::stoull(value());
    } else if (a == "--small") {
      cfg.threads  = 4;
      cfg.ops      = 300;
      cfg.max_size = 64 << 10;
    } else if (a == "--inject-corruption") {
      cfg.inject = true;
    } else if (a == "--help" || a == "-h") {
      usage();
      std::exit(0);
    } else {
      throw std::invalid_argument{"unknown option " + a};
    }
  }
  if (cfg.threads < 1 || cfg.live < 1 || cfg.batch < 1 || cfg.min_size < 1 ||
      (cfg.max_size != 0 && cfg.max_size < cfg.min_size) || cfg.handoff < 0 || cfg.handoff > 1) {
    throw std::invalid_argument{"bad option value (see --help)"};
  }
  if (list == "all") {
    for (auto const& d : defaults_table) { cfg.resources.emplace_back(d.name); }
  } else {
    std::stringstream ss{list};
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (find_defaults(item) == nullptr) { throw std::invalid_argument{"unknown resource " + item}; }
      cfg.resources.push_back(item);
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv)
{
  config cfg;
  try {
    parse(argc, argv, cfg);
  } catch (std::exception const& e) {
    std::printf("gpu_stress: %s\n", e.what());
    usage();
    return 2;
  }
  if (rmm::get_num_cuda_devices() == 0) {
    std::puts("skipped: no CUDA device");
    return 0;
  }
  std::printf("gpu_stress: seed=%" PRIu64 " threads=%d live<=%d batch=%d handoff=%.3f (rerun with --seed %" PRIu64 ")\n",
              cfg.seed, cfg.threads, cfg.live, cfg.batch, cfg.handoff, cfg.seed);
  int failed = 0;
  for (auto const& name : cfg.resources) {
    try {
      if (!run_resource(name, cfg)) { ++failed; }
    } catch (std::exception const& e) {
      std::printf("FAIL: %s: %s\n", name.c_str(), e.what());
      ++failed;
    }
  }
  std::printf("gpu_stress: %zu resources, %d failed\n", cfg.resources.size(), failed);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
