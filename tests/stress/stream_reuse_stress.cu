// Streams created and destroyed in a loop on many threads, over one pool: the destroyed stream's
// last kernel still reads and writes its blocks when the next owner (often a new stream with the
// same handle: the driver reuses handles at once) gets them. A block handed to the next owner
// before the dead stream's work finished shows up as corrupted bytes: the late kernel finds the
// next owner's tag in it, or the next owner finds the late kernel's.
//
// One lifetime, on stream S (created with rmm::cuda_stream, or with the user's own
// cudaStreamCreate and cudaStreamDestroy):
//   1. allocate K blocks from the pool on S;
//   2. fill them with this lifetime's tag; 3. spin; 4. count the words that lost the tag;
//   5. the late kernel: spin, count the words that lost the tag again, overwrite every word;
//   6. free the blocks on S and destroy S at once, the late kernel still queued.
// Without a GPU wait for the dead stream's work, the next owner's fill (2.) lands while the late
// kernel spins (5.), tens of microseconds before it checks.
//
// With --streams-shared K the threads share streams: thread t belongs to group t % K, and each
// group's threads share one stream per lifetime. One thread of the group (a different one each
// lifetime) destroys the previous lifetime's stream, with every member's late kernel still queued
// on it, and at once creates the next (so the driver hands it the dead stream's handle); every
// member then runs steps 1.-6. on that stream, blocks allocated and freed by several threads on
// one stream at once, and the group waits for all its members before the next lifetime. The
// groups run side by side, so a block freed on a dead stream is also wanted by other groups on
// their own (sometimes reused) handles. --lifetimes then counts stream lifetimes (split over the
// groups); each has as many thread lifetimes as its group has threads.
//
//   stream_reuse_stress [--threads 8] [--lifetimes 100000] [--blocks 4] [--seed 1]
//                       [--ours-only | --foreign-only] [--pool-mib N] [--streams-shared K]
//                       [--inject-unordered-reuse]
//
// --inject-unordered-reuse bypasses the pool: each lifetime reuses its thread's previous blocks
// (plain cudaMalloc memory) at once, as a pool keyed by stream handle would; it must report
// corrupted bytes, which shows that the check sees the hazard (with --streams-shared too). Exits 0
// with "corrupted=0 OK", 1 on corruption or error; prints "skipped: no CUDA device" and exits 0
// without a GPU.

#include <rmm/aligned.hpp>
#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>

#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_set>
#include <vector>

namespace {

constexpr int max_blocks = 16;

/// The blocks of one lifetime, passed by value to every kernel.
struct block_list {
  std::uint32_t* ptr[max_blocks];
  std::size_t words[max_blocks];
  int count;
};

__device__ void spin_ns(unsigned long long ns)
{
  unsigned long long start{};
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    unsigned long long now{};
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start >= ns) { break; }
  }
}

__device__ std::uint32_t word_tag(std::uint32_t tag, std::size_t i)
{
  return tag ^ static_cast<std::uint32_t>(i * 0x9E3779B1u);
}

__global__ void fill(block_list blocks, std::uint32_t tag)
{
  for (int b = 0; b < blocks.count; ++b) {
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < blocks.words[b]; i += gridDim.x * blockDim.x) {
      blocks.ptr[b][i] = word_tag(tag, i);
    }
  }
}

__global__ void spin(unsigned long long ns)
{
  if (threadIdx.x == 0) { spin_ns(ns); }
}

/// Adds to `wrong` the words of `blocks` that do not hold `tag`'s pattern.
__global__ void count_wrong(block_list blocks, std::uint32_t tag, unsigned long long* wrong)
{
  unsigned long long mine = 0;
  for (int b = 0; b < blocks.count; ++b) {
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < blocks.words[b]; i += gridDim.x * blockDim.x) {
      if (blocks.ptr[b][i] != word_tag(tag, i)) { ++mine; }
    }
  }
  if (mine != 0) { atomicAdd(wrong, mine); }
}

/// The dead stream's last work: waits, counts the words that lost `tag`, overwrites every word.
__global__ void late_check_and_fill(block_list blocks,
                                    std::uint32_t tag,
                                    unsigned long long ns,
                                    unsigned long long* wrong)
{
  if (threadIdx.x == 0) { spin_ns(ns); }
  __syncthreads();
  unsigned long long mine = 0;
  for (int b = 0; b < blocks.count; ++b) {
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < blocks.words[b]; i += gridDim.x * blockDim.x) {
      if (blocks.ptr[b][i] != word_tag(tag, i)) { ++mine; }
      blocks.ptr[b][i] = word_tag(~tag, i);
    }
  }
  if (mine != 0) { atomicAdd(wrong, mine); }
}

struct options {
  int threads{8};
  long lifetimes{100000};
  int blocks{4};
  unsigned seed{1};
  bool ours{true};
  bool foreign{true};
  std::size_t pool_mib{0};  ///< 0: twice the most the threads can hold at once (blocks of 1 MiB)
  bool inject{false};
  int streams_shared{0};  ///< 0: a stream per thread and lifetime; K: K groups sharing a stream each
};

void usage()
{
  std::puts(
    "stream_reuse_stress [--threads 8] [--lifetimes 100000] [--blocks 4] [--seed 1]\n"
    "                    [--ours-only | --foreign-only] [--pool-mib N] [--streams-shared K]\n"
    "                    [--inject-unordered-reuse]\n"
    "Streams created and destroyed in a loop on many threads over one pool; every lifetime fills its\n"
    "blocks, checks them after longer than the previous owner's late kernel can take, then queues a\n"
    "late kernel and destroys its stream. Reports corrupted bytes (must be 0).\n"
    "--streams-shared K: K groups of threads (thread t in group t % K), each group's threads sharing\n"
    "one stream per lifetime; --lifetimes then counts stream lifetimes.");
}

options parse(int argc, char** argv)
{
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string const a = argv[i];
    auto next           = [&]() -> char const* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads") {
      o.threads = std::atoi(next());
    } else if (a == "--lifetimes") {
      o.lifetimes = std::atol(next());
    } else if (a == "--blocks") {
      o.blocks = std::atoi(next());
    } else if (a == "--seed") {
      o.seed = static_cast<unsigned>(std::strtoul(next(), nullptr, 10));
    } else if (a == "--pool-mib") {
      o.pool_mib = static_cast<std::size_t>(std::atol(next()));
    } else if (a == "--ours-only") {
      o.foreign = false;
    } else if (a == "--foreign-only") {
      o.ours = false;
    } else if (a == "--inject-unordered-reuse") {
      o.inject = true;
    } else if (a == "--streams-shared") {
      o.streams_shared = std::atoi(next());
    } else if (a == "--help" || a == "-h") {
      usage();
      std::exit(0);
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      usage();
      std::exit(2);
    }
  }
  if (o.threads < 1 || o.lifetimes < 1 || o.blocks < 1 || o.blocks > max_blocks) {
    std::fprintf(stderr, "bad option value\n");
    std::exit(2);
  }
  if (o.streams_shared < 0 || o.streams_shared > o.threads) {
    std::fprintf(stderr, "--streams-shared must be between 1 and --threads (%d)\n", o.threads);
    std::exit(2);
  }
  if (o.pool_mib == 0) { o.pool_mib = std::max<std::size_t>(64, 2 * o.threads * o.blocks); }
  return o;
}

/// A stream for one lifetime: ours (rmm::cuda_stream) or the user's own (cudaStreamCreate).
class lifetime_stream {
 public:
  explicit lifetime_stream(bool ours)
  {
    if (ours) {
      ours_.emplace(rmm::cuda_stream::flags::non_blocking);
      handle_ = ours_->value();
    } else {
      RMM_CUDA_TRY(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking));
    }
  }
  lifetime_stream(lifetime_stream const&)            = delete;
  lifetime_stream& operator=(lifetime_stream const&) = delete;
  ~lifetime_stream()
  {
    if (!ours_) { RMM_ASSERT_CUDA_SUCCESS(cudaStreamDestroy(handle_)); }
  }
  [[nodiscard]] cudaStream_t get() const noexcept { return handle_; }

 private:
  std::optional<rmm::cuda_stream> ours_;
  cudaStream_t handle_{};
};

/// Handles destroyed so far, to count how often a new stream got one back.
struct handle_history {
  std::mutex lock;
  std::unordered_set<cudaStream_t> destroyed;
  std::atomic<long> reused{0};
  void created(cudaStream_t s)
  {
    std::lock_guard<std::mutex> guard{lock};
    if (destroyed.erase(s) != 0) { ++reused; }
  }
  void destroying(cudaStream_t s)
  {
    std::lock_guard<std::mutex> guard{lock};
    destroyed.insert(s);
  }
};

struct totals {
  std::atomic<long> ours{0};
  std::atomic<long> foreign{0};
  std::atomic<long> thread_lifetimes{0};
  std::atomic<unsigned long long> bytes_checked{0};
};

/// Spins of the check (3.) and of the late kernel (5.), in nanoseconds: long beside the host's
/// time from one lifetime's last launch to the next lifetime's first.
constexpr unsigned long long check_ns = 20'000;
constexpr unsigned long long late_ns  = 60'000;

using block_set = std::vector<std::pair<void*, std::size_t>>;

/**
 * One thread's part of a lifetime on stream `stream`: steps 1. to 5., then the blocks freed on
 * the stream (6.; the caller destroys it). With --inject-unordered-reuse the blocks are
 * `previous` (the thread's blocks of its last lifetime, cudaMalloc memory) and are kept there.
 */
void one_lifetime(options const& o,
                  std::mt19937_64& rng,
                  cudaStream_t stream,
                  rmm::mr::pool_memory_resource* pool,
                  block_set& previous,
                  totals& sums,
                  unsigned long long* wrong)
{
  cuda::stream_ref const s{stream};
  block_list blocks{};
  blocks.count = o.blocks;
  block_set taken;
  for (int b = 0; b < o.blocks; ++b) {
    std::size_t bytes = std::size_t{64} << 10 << (rng() % 5);  // 64 KiB .. 1 MiB
    void* p{};
    if (o.inject) {
      if (!previous.empty()) {
        std::tie(p, bytes) = previous[static_cast<std::size_t>(b)];
      } else {
        RMM_CUDA_TRY(cudaMalloc(&p, bytes));
      }
    } else {
      p = pool->allocate(s, bytes, rmm::CUDA_ALLOCATION_ALIGNMENT);
    }
    taken.emplace_back(p, bytes);
    blocks.ptr[b]   = static_cast<std::uint32_t*>(p);
    blocks.words[b] = bytes / sizeof(std::uint32_t);
    sums.bytes_checked += bytes;
  }
  auto const tag = static_cast<std::uint32_t>(rng());
  fill<<<64, 256, 0, stream>>>(blocks, tag);
  spin<<<1, 32, 0, stream>>>(check_ns);
  count_wrong<<<64, 256, 0, stream>>>(blocks, tag, wrong);
  late_check_and_fill<<<64, 256, 0, stream>>>(blocks, tag, late_ns, wrong);
  RMM_CUDA_TRY(cudaGetLastError());
  if (o.inject) {
    previous = taken;
  } else {
    for (auto [p, bytes] : taken) { pool->deallocate(s, p, bytes, rmm::CUDA_ALLOCATION_ALIGNMENT); }
  }
  ++sums.thread_lifetimes;
}

void run_thread(int t,
                options const& o,
                rmm::mr::pool_memory_resource* pool,
                handle_history& history,
                totals& sums,
                unsigned long long* wrong)
{
  std::mt19937_64 rng{o.seed * 7919u + static_cast<unsigned>(t)};
  long const mine = o.lifetimes / o.threads + (t < o.lifetimes % o.threads ? 1 : 0);
  block_set previous;  // --inject-unordered-reuse only
  for (long life = 0; life < mine; ++life) {
    bool const ours = o.ours && (!o.foreign || (rng() & 1) == 0);
    lifetime_stream stream{ours};
    (ours ? sums.ours : sums.foreign)++;
    history.created(stream.get());
    one_lifetime(o, rng, stream.get(), pool, previous, sums, wrong);
    history.destroying(stream.get());
  }  // each stream destroyed here, its late kernel still queued
  RMM_CUDA_TRY(cudaDeviceSynchronize());
  for (auto [p, bytes] : previous) { RMM_CUDA_TRY(cudaFree(p)); }
}

/// Waits for every thread of a group; broken (for good) when one of them fails.
class group_barrier {
 public:
  explicit group_barrier(int count) : count_{count} {}
  /// False when the group is broken: the caller stops.
  bool arrive_and_wait()
  {
    std::unique_lock<std::mutex> guard{lock_};
    if (broken_) { return false; }
    auto const generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return true;
    }
    changed_.wait(guard, [&] { return generation_ != generation || broken_; });
    return generation_ != generation;
  }
  void break_group()
  {
    std::lock_guard<std::mutex> guard{lock_};
    broken_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex lock_;
  std::condition_variable changed_;
  int const count_;
  int arrived_{0};
  long generation_{0};
  bool broken_{false};
};

/// The threads that share one stream per lifetime (--streams-shared), and that stream.
struct stream_group {
  explicit stream_group(int size) : members{size}, barrier{size} {}
  int const members;
  group_barrier barrier;
  std::optional<lifetime_stream> stream;  // written by one member while the others wait
};

/**
 * One member (`member` of the group's `group.members`) of group `g` (of `o.streams_shared`):
 * lifetime by lifetime, member life % members destroys the last lifetime's stream (every member's
 * late kernel still queued on it) and creates the next; after a barrier every member runs its part
 * on that stream; a second barrier closes the lifetime.
 */
void run_shared_thread(int t,
                       int g,
                       int member,
                       options const& o,
                       stream_group& group,
                       rmm::mr::pool_memory_resource* pool,
                       handle_history& history,
                       totals& sums,
                       unsigned long long* wrong)
{
  std::mt19937_64 rng{o.seed * 7919u + static_cast<unsigned>(t)};
  long const lifetimes = o.lifetimes / o.streams_shared + (g < o.lifetimes % o.streams_shared ? 1 : 0);
  block_set previous;  // --inject-unordered-reuse only
  // Destroys the group's stream, its late kernels still queued.
  auto destroy = [&] {
    if (group.stream) {
      history.destroying(group.stream->get());
      group.stream.reset();
    }
  };
  try {
    for (long life = 0; life < lifetimes; ++life) {
      if (life % group.members == member) {
        destroy();
        bool const ours = o.ours && (!o.foreign || (rng() & 1) == 0);
        group.stream.emplace(ours);
        (ours ? sums.ours : sums.foreign)++;
        history.created(group.stream->get());
      }
      if (!group.barrier.arrive_and_wait()) { return; }  // the stream is there
      one_lifetime(o, rng, group.stream->get(), pool, previous, sums, wrong);
      if (!group.barrier.arrive_and_wait()) { return; }  // every member's work is queued on it
    }
    if (lifetimes % group.members == member) { destroy(); }
  } catch (...) {
    group.barrier.break_group();
    throw;
  }
  RMM_CUDA_TRY(cudaDeviceSynchronize());
  for (auto [p, bytes] : previous) { RMM_CUDA_TRY(cudaFree(p)); }
}

}  // namespace

int main(int argc, char** argv)
{
  options const o = parse(argc, argv);
  // Without a driver RMM 26.10 returns -1 (the failed cudaGetDeviceCount's untouched -1), rmm-rs 0.
  if (rmm::get_num_cuda_devices() <= 0) {
    std::puts("skipped: no CUDA device");
    return 0;
  }
  try {
    std::size_t const pool_bytes = o.pool_mib << 20;
    rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, pool_bytes, pool_bytes};
    unsigned long long* wrong{};
    RMM_CUDA_TRY(cudaMalloc(&wrong, sizeof(*wrong)));
    RMM_CUDA_TRY(cudaMemset(wrong, 0, sizeof(*wrong)));
    RMM_CUDA_TRY(cudaDeviceSynchronize());
    handle_history history;
    totals sums;
    std::atomic<int> failed{0};
    auto const start = std::chrono::steady_clock::now();
    // --streams-shared K: thread t is member t / K of group t % K.
    std::vector<std::unique_ptr<stream_group>> groups;
    for (int g = 0; g < o.streams_shared; ++g) {
      groups.push_back(std::make_unique<stream_group>(o.threads / o.streams_shared + (g < o.threads % o.streams_shared ? 1 : 0)));
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < o.threads; ++t) {
      threads.emplace_back([&, t] {
        try {
          if (o.streams_shared > 0) {
            int const g = t % o.streams_shared;
            run_shared_thread(t, g, t / o.streams_shared, o, *groups[static_cast<std::size_t>(g)], &pool, history, sums, wrong);
          } else {
            run_thread(t, o, &pool, history, sums, wrong);
          }
        } catch (std::exception const& e) {
          std::fprintf(stderr, "thread %d: %s\n", t, e.what());
          ++failed;
        }
      });
    }
    for (auto& th : threads) { th.join(); }
    groups.clear();  // a failed group's last stream
    RMM_CUDA_TRY(cudaDeviceSynchronize());
    unsigned long long corrupted_words{};
    RMM_CUDA_TRY(cudaMemcpy(&corrupted_words, wrong, sizeof(corrupted_words), cudaMemcpyDeviceToHost));
    RMM_CUDA_TRY(cudaFree(wrong));
    double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bool const ok = failed == 0 && corrupted_words == 0;
    char shared[96] = "";
    if (o.streams_shared > 0) {
      std::snprintf(shared, sizeof shared, " streams_shared=%d thread_lifetimes=%ld", o.streams_shared,
                    sums.thread_lifetimes.load());
    }
    std::printf(
      "stream_reuse_stress: threads=%d lifetimes=%ld (rmm::cuda_stream %ld, cudaStreamCreate %ld)%s "
      "handles_reused=%ld blocks=%ld checked=%.2f GiB pool=%zu MiB%s time=%.2f s corrupted=%llu %s\n",
      o.threads,
      sums.ours + sums.foreign,
      sums.ours.load(),
      sums.foreign.load(),
      shared,
      history.reused.load(),
      sums.thread_lifetimes * o.blocks,
      static_cast<double>(sums.bytes_checked) / (1 << 30),
      o.pool_mib,
      o.inject ? " (injected: unordered reuse, no pool)" : "",
      seconds,
      corrupted_words * sizeof(std::uint32_t),
      ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "stream_reuse_stress: %s\n", e.what());
    return 1;
  }
}
