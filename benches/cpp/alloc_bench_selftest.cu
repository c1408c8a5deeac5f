/*
 * Checks alloc_bench's workload logic without a GPU: the traces, their replay, RMM's random
 * allocation loop and the threads workload's three stream patterns (with fake streams: its
 * cut-offs, its error path, which stream each thread used), against a host-side shadow resource
 * that hands out fake addresses and refuses any free that does not match an outstanding allocation.
 *
 *   bash benches/run_side_by_side.sh selftest
 */
#define ALLOC_BENCH_NO_MAIN
#include "alloc_bench.cu"

#include <map>
#include <set>

// Named, not anonymous: nvcc warns (#177) about unreferenced friends in an anonymous namespace.
namespace alloc_bench_selftest {

using namespace alloc_bench;  // NOLINT(google-build-using-namespace)

int checks_failed = 0;

#define EXPECT(cond)                                                         \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);            \
      ++checks_failed;                                                       \
    }                                                                        \
  } while (0)

/// Fake device memory: unique, aligned addresses and a map of what is outstanding. Shared by its
/// copies (resource_ref does not copy, but keep it honest).
struct shadow_resource {
  struct state {
    std::map<std::uintptr_t, std::size_t> live;
    std::uintptr_t next{std::uintptr_t{1} << 40};
    std::size_t allocations{0};
    std::size_t frees{0};
    std::size_t bad_frees{0};
    std::size_t fail_every{0};  // throw rmm::out_of_memory on every n-th allocation (0: never)
    std::size_t cuda_error_at{0};  // throw rmm::cuda_error at this allocation (1-based; 0: never)
    cudaStream_t slow_stream{};    // allocations on this stream (when set) take 200 us each
    std::map<cudaStream_t, std::set<std::thread::id>> users;  // the threads seen on each stream
    std::mutex lock;  // the threads workload calls from many threads
  };
  std::shared_ptr<state> s = std::make_shared<state>();

  void* allocate(cuda::stream_ref stream, std::size_t bytes, std::size_t align = alignment)
  {
    if (s->slow_stream != cudaStream_t{} && stream.get() == s->slow_stream) {
      std::this_thread::sleep_for(std::chrono::microseconds{200});
    }
    std::lock_guard<std::mutex> guard{s->lock};
    s->users[stream.get()].insert(std::this_thread::get_id());
    if (s->cuda_error_at != 0 && s->allocations + 1 == s->cuda_error_at) {
      ++s->allocations;
      throw rmm::cuda_error{"injected"};
    }
    if (s->fail_every != 0 && (s->allocations + 1) % s->fail_every == 0) {
      ++s->allocations;
      throw rmm::out_of_memory{"injected"};
    }
    ++s->allocations;
    auto const p = s->next;
    s->next += rmm::align_up(std::max<std::size_t>(bytes, 1), align);
    s->live.emplace(p, bytes);
    return reinterpret_cast<void*>(p);
  }
  void deallocate(cuda::stream_ref, void* p, std::size_t bytes, std::size_t = alignment) noexcept
  {
    std::lock_guard<std::mutex> guard{s->lock};
    auto const it = s->live.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == s->live.end() || it->second != bytes) {
      ++s->bad_frees;
      return;
    }
    s->live.erase(it);
    ++s->frees;
  }
  void* allocate_sync(std::size_t b, std::size_t a = alignment) { return allocate(cuda::stream_ref{cudaStream_t{}}, b, a); }
  void deallocate_sync(void* p, std::size_t b, std::size_t a = alignment) noexcept
  {
    deallocate(cuda::stream_ref{cudaStream_t{}}, p, b, a);
  }
  bool operator==(shadow_resource const& o) const noexcept { return s == o.s; }
  bool operator!=(shadow_resource const& o) const noexcept { return s != o.s; }
  friend void get_property(shadow_resource const&, cuda::mr::device_accessible) noexcept {}
};

void test_trace()
{
  auto const a = make_trace(42, 200'000);
  auto const b = make_trace(42, 200'000);
  auto const c = make_trace(1000, 200'000);
  EXPECT(a.size() == 200'000);
  EXPECT(std::equal(a.begin(), a.end(), b.begin(), [](auto x, auto y) { return x.size == y.size && x.slot == y.slot; }));
  EXPECT(!std::equal(a.begin(), a.end(), c.begin(), [](auto x, auto y) { return x.size == y.size && x.slot == y.slot; }));
  std::size_t live = 0, max_live = 0, allocs = 0, small = 0, large = 0;
  std::uint64_t fingerprint = 1469598103934665603ULL;  // FNV-1a over (size, slot)
  for (auto const& op : a) {
    fingerprint = (fingerprint ^ op.size) * 1099511628211ULL;
    fingerprint = (fingerprint ^ op.slot) * 1099511628211ULL;
    if (op.size != 0) {
      EXPECT(op.size >= 8 && op.size <= mib);
      small += op.size < 1024;
      large += op.size >= 512 * 1024;
      ++allocs;
      ++live;
    } else {
      EXPECT(op.slot < live);
      --live;
    }
    EXPECT(live <= trace_max_live);
    max_live = std::max(max_live, live);
  }
  // Log-uniform over 2^3..2^20: about 7/17 of the sizes below 1 KiB, 1/17 at or above 512 KiB.
  std::printf("trace(42): %zu allocations, %zu frees, max live %zu, %.1f%% < 1 KiB, %.1f%% >= 512 KiB, fingerprint %016llx\n",
              allocs, a.size() - allocs, max_live, 100.0 * small / allocs, 100.0 * large / allocs,
              static_cast<unsigned long long>(fingerprint));
  // With probability 0.5 the live count is a reflected random walk: 200k steps take it to a few
  // hundred, so the cap of 1000 does not bind for these seeds.
  EXPECT(max_live <= trace_max_live && max_live > 100);
  EXPECT(small > allocs * 38 / 100 && small < allocs * 44 / 100);
  EXPECT(large > allocs * 4 / 100 && large < allocs * 8 / 100);
}

void test_replay()
{
  shadow_resource mr;
  auto const trace = make_trace(42, 200'000);
  std::vector<block> live;
  cuda::stream_ref const stream{cudaStream_t{}};
  EXPECT(replay(trace, mr, stream, live, deadline_after(60)));
  std::size_t expected_live = 0;
  for (auto const& op : trace) { expected_live += op.size != 0 ? 1 : std::size_t(-1); }
  EXPECT(live.size() == expected_live);
  EXPECT(mr.s->live.size() == expected_live);
  free_all(mr, stream, live);
  EXPECT(mr.s->live.empty() && mr.s->bad_frees == 0 && mr.s->allocations == mr.s->frees);

  // Cut off by the deadline: stops after the first 1024 operations, blocks left to the caller.
  EXPECT(!replay(trace, mr, stream, live, bench_clock::now() - std::chrono::seconds{1}));
  free_all(mr, stream, live);
  EXPECT(mr.s->live.empty() && mr.s->bad_frees == 0);

  // An error: the live blocks are given back before it propagates.
  bool threw = false;
  std::vector<trace_op> prefix(trace.begin(), trace.begin() + 5000);
  shadow_resource mr2;
  {
    // Fail at an allocation in the middle.
    std::size_t n = 0;
    for (auto const& op : prefix) { n += op.size != 0; }
    mr2.s->fail_every = n / 2;
  }
  try {
    replay(prefix, mr2, stream, live, deadline_after(60));
  } catch (rmm::out_of_memory const&) {
    threw = true;
  }
  EXPECT(threw && live.empty() && mr2.s->live.empty() && mr2.s->bad_frees == 0);
}

void test_random_allocations()
{
  for (std::size_t const max_mib : {1, 256}) {
    shadow_resource mr;
    bool completed = false;
    auto const ops = random_allocation_free(mr, 10000, max_mib, deadline_after(60), completed);
    EXPECT(completed);
    EXPECT(mr.s->live.empty() && mr.s->bad_frees == 0);
    EXPECT(ops == 2 * mr.s->allocations);
    std::printf("random_allocations n=10000 max=%zuMiB: %zu allocations, %zu operations\n", max_mib,
                mr.s->allocations, ops);
    EXPECT(mr.s->allocations <= 10000 + 1);
  }
  {
    // Allocation failures (rmm::bad_alloc) turn into frees, as in RMM's benchmark.
    shadow_resource mr;
    mr.s->fail_every = 7;
    bool completed = false;
    auto const ops = random_allocation_free(mr, 10000, 4, deadline_after(60), completed);
    EXPECT(completed && mr.s->live.empty() && mr.s->bad_frees == 0);
    EXPECT(ops == 2 * (mr.s->allocations - mr.s->allocations / 7));
  }
  {
    // Any other exception propagates after everything is freed.
    shadow_resource mr;
    bool completed = false;
    mr.s->cuda_error_at = 500;  // with a few hundred blocks live
    bool threw = false;
    try {
      random_allocation_free(mr, 1000, 1, deadline_after(60), completed);
    } catch (rmm::cuda_error const&) {
      threw = true;
    }
    EXPECT(threw && mr.s->live.empty() && mr.s->bad_frees == 0);
  }
  {
    shadow_resource mr;
    bool completed = true;
    random_allocation_free(mr, 100000, 1, bench_clock::now() - std::chrono::seconds{1}, completed);
    EXPECT(!completed && mr.s->live.empty() && mr.s->bad_frees == 0);
  }
}

void test_median()
{
  EXPECT(median({3, 1, 2}) == 2);
  EXPECT(median({4, 1, 2, 3}) == 2.5);
  EXPECT(median({}) == 0);
}


/// Fake streams for run_threads: distinct made-up handles, never given to CUDA.
struct fake_streams final : thread_streams {
  std::atomic<std::uintptr_t> made{0};
  void enter_thread() override {}
  std::shared_ptr<void> make_stream(cudaStream_t& handle) override
  {
    auto const k = ++made;
    handle       = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x100000} + 16 * k);
    return std::make_shared<std::uintptr_t>(k);
  }
  void synchronize(cuda::stream_ref) override {}
};

std::vector<std::vector<trace_op>> thread_traces(int n, std::size_t ops)
{
  std::vector<std::vector<trace_op>> traces;
  for (int t = 0; t < n; ++t) { traces.push_back(make_trace(1000 + static_cast<std::uint64_t>(t), ops)); }
  return traces;
}

void test_threads_patterns()
{
  auto const traces = thread_traces(16, 20'000);
  for (auto const pattern : {stream_pattern::own, stream_pattern::shared, stream_pattern::ptds}) {
    for (int const n : {1, 4, 16}) {
      shadow_resource mr;
      fake_streams streams;
      auto const run = run_threads(mr, traces, n, pattern, 60, streams);
      EXPECT(run.completed);
      EXPECT(run.ops_done == static_cast<std::size_t>(n) * 20'000);
      EXPECT(run.seconds >= 0 && run.seconds < 60);
      EXPECT(mr.s->live.empty() && mr.s->bad_frees == 0 && mr.s->allocations == mr.s->frees);
      auto const& users = mr.s->users;
      if (pattern == stream_pattern::own) {
        // A stream per thread, each used by one thread.
        EXPECT(users.size() == static_cast<std::size_t>(n) && streams.made == static_cast<std::uintptr_t>(n));
        for (auto const& [stream, threads] : users) { EXPECT(threads.size() == 1); }
      } else if (pattern == stream_pattern::shared) {
        // One stream, made once, used by every thread.
        EXPECT(users.size() == 1 && streams.made == 1);
        EXPECT(users.begin()->second.size() == static_cast<std::size_t>(n));
      } else {
        // The per-thread default stream, no stream made.
        EXPECT(users.size() == 1 && users.begin()->first == cudaStream_t{cudaStreamPerThread} && streams.made == 0);
        EXPECT(users.begin()->second.size() == static_cast<std::size_t>(n));
      }
    }
  }
  std::printf("threads: own, shared, ptds at 1, 4, 16 threads: every block back, streams as named\n");
}

void test_threads_cut_off()
{
  auto const traces = thread_traces(16, 20'000);
  {
    // A deadline already passed: every thread stops at its first check, after 1024 operations.
    shadow_resource mr;
    fake_streams streams;
    auto const run = run_threads(mr, traces, 8, stream_pattern::shared, 0, streams);
    EXPECT(!run.completed);
    EXPECT(run.ops_done == 8 * 1024);
    EXPECT(mr.s->live.empty() && mr.s->bad_frees == 0);
    auto const note = cut_off_note(run, 8 * 20'000.0);
    EXPECT(note.find("at 5% of the operations; >=") != std::string::npos);
    EXPECT(note.find(',') == std::string::npos);
  }
  {
    // One slow thread (own stream, 200 us per allocation: 2 s for its trace) does not hold the
    // others past the cut-off, nor they it: the run ends soon after the deadline.
    shadow_resource mr;
    fake_streams streams;
    mr.s->slow_stream = reinterpret_cast<cudaStream_t>(std::uintptr_t{0x100000} + 16);  // the first made
    auto const t0  = bench_clock::now();
    auto const run = run_threads(mr, traces, 4, stream_pattern::own, 0.05, streams);
    double const s = seconds_since(t0);
    EXPECT(!run.completed && s < 1.0);
    EXPECT(run.ops_done < 4 * 20'000);
    EXPECT(mr.s->live.empty() && mr.s->bad_frees == 0);
    std::printf("threads cut off at 0.05 s with one slow thread: returned after %.3f s, %zu operations\n", s, run.ops_done);
  }
  {
    // A thread that throws: the others stop at their next check, every block is given back, and
    // the run throws.
    shadow_resource mr;
    fake_streams streams;
    mr.s->cuda_error_at = 3000;
    bool threw = false;
    try {
      run_threads(mr, traces, 16, stream_pattern::ptds, 60, streams);
    } catch (rmm::logic_error const& e) {
      threw = std::string{e.what()}.find("injected") != std::string::npos;
    }
    EXPECT(threw);
    EXPECT(mr.s->live.empty() && mr.s->bad_frees == 0);
    EXPECT(mr.s->allocations < 16 * 10'000 / 2);
  }
}

void test_options()
{
  auto const p = parse_patterns("shared,ptds");
  EXPECT(p.size() == 2 && p[0] == stream_pattern::shared && p[1] == stream_pattern::ptds);
  EXPECT(std::string{pattern_name(stream_pattern::own)} == "own");
  auto const t = parse_thread_counts("1,3,64");
  EXPECT(t.size() == 3 && t[1] == 3 && t[2] == 64);
  for (char const* bad : {"0", "65", "4x", "", "-2"}) {
    bool threw = false;
    try {
      parse_thread_counts(bad);
    } catch (std::invalid_argument const&) {
      threw = true;
    }
    EXPECT(threw);
  }
  bool threw = false;
  try {
    parse_patterns("own,mine");
  } catch (std::invalid_argument const&) {
    threw = true;
  }
  EXPECT(threw);
}

}  // namespace alloc_bench_selftest

int main()
{
  using namespace alloc_bench_selftest;  // NOLINT(google-build-using-namespace)
  test_trace();
  test_replay();
  test_random_allocations();
  test_median();
  test_threads_patterns();
  test_threads_cut_off();
  test_options();
  std::printf("alloc_bench selftest (%s): %s\n", RMM_BENCH_IMPL, checks_failed == 0 ? "OK" : "FAILED");
  return checks_failed == 0 ? 0 : 1;
}
