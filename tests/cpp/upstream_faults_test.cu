// A user's upstream that breaks what a pool relies on, from C++. One that is not thread-safe is
// entered by one thread at a time however many threads grow the pool at once (RMM's pool calls its
// upstream under one mutex; ours grows its shards under separate locks). One that returns null or
// memory 16 bytes past a 256-aligned base is refused with rmm::logic_error, gets that memory back,
// and the pool keeps working. Host memory stands in for device memory: these run without a GPU.

#include "test_utils.hpp"

#include <rmm/error.hpp>
#include <rmm/mr/callback_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <utility>
#include <vector>

namespace {

using rmm::test::default_stream;
using rmm::test::expect_throws_exactly;

/// Counts the threads inside its calls at once, the highest count seen, and stays inside a while
/// so that overlapping calls are seen.
struct entry_counter {
  std::atomic<int> inside{0};
  std::atomic<int> most_inside{0};
  std::atomic<long> allocations{0};
  std::atomic<long> outstanding{0};

  /// Held for the length of one call.
  struct visit {
    entry_counter& c;
    explicit visit(entry_counter& counter) : c{counter}
    {
      int const now = ++c.inside;
      int most      = c.most_inside.load();
      while (now > most && !c.most_inside.compare_exchange_weak(most, now)) {}
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    visit(visit const&)            = delete;
    visit& operator=(visit const&) = delete;
    ~visit() { --c.inside; }
  };

  void* allocate(std::size_t bytes)
  {
    visit const v{*this};
    void* p = ::operator new(bytes, std::align_val_t{256});
    ++allocations;
    ++outstanding;
    return p;
  }
  void deallocate(void* p) noexcept
  {
    visit const v{*this};
    --outstanding;
    ::operator delete(p, std::align_val_t{256});
  }
};

/// A user's resource that is not thread-safe (it says nothing of threads, as RMM allows).
struct upstream_counting_resource {
  std::shared_ptr<entry_counter> c = std::make_shared<entry_counter>();

  void* allocate(cuda::stream_ref, std::size_t bytes, std::size_t) { return c->allocate(bytes); }
  void deallocate(cuda::stream_ref, void* p, std::size_t, std::size_t) noexcept { c->deallocate(p); }
  void* allocate_sync(std::size_t bytes, std::size_t alignment)
  {
    return allocate(default_stream(), bytes, alignment);
  }
  void deallocate_sync(void* p, std::size_t bytes, std::size_t alignment) noexcept
  {
    deallocate(default_stream(), p, bytes, alignment);
  }
  bool operator==(upstream_counting_resource const& o) const noexcept { return c == o.c; }
  bool operator!=(upstream_counting_resource const& o) const noexcept { return c != o.c; }
  friend void get_property(upstream_counting_resource const&, cuda::mr::device_accessible) noexcept {}
};

static_assert(cuda::mr::resource_with<upstream_counting_resource, cuda::mr::device_accessible>);

/// 16 threads start together, each on its own (per-thread default) stream, so that they spread
/// over the pool's shards and each grows its own, several times.
template <class Pool>
void grow_from_16_threads(Pool& pool)
{
  constexpr int threads = 16;
  std::atomic<int> ready{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      cuda::stream_ref const own{cudaStreamPerThread};
      ++ready;
      while (ready.load() < threads) {
        std::this_thread::yield();
      }
      std::vector<std::pair<void*, std::size_t>> blocks;
      for (std::size_t i = 1; i <= 4; ++i) {
        blocks.emplace_back(pool.allocate(own, i * MiB), i * MiB);
      }
      for (auto [p, bytes] : blocks) {
        pool.deallocate(own, p, bytes);
      }
    });
  }
  for (auto& w : workers) {
    w.join();
  }
}

TEST(UpstreamContract, ANonThreadSafeUpstreamIsEnteredByOneThreadAtATime)
{
  upstream_counting_resource up;
  {
    rmm::mr::pool_memory_resource pool{up, 0};
    grow_from_16_threads(pool);
    EXPECT_GT(up.c->allocations.load(), 1) << "the pool grew more than once";
  }
  EXPECT_EQ(up.c->most_inside.load(), 1);
  EXPECT_EQ(up.c->outstanding.load(), 0) << "the pool gave every chunk back";
}

TEST(UpstreamContract, CallbacksAreEnteredByOneThreadAtATime)
{
  entry_counter c;
  rmm::mr::callback_memory_resource callbacks{
    [](std::size_t bytes, cuda::stream_ref, void* arg) { return static_cast<entry_counter*>(arg)->allocate(bytes); },
    [](void* p, std::size_t, cuda::stream_ref, void* arg) { static_cast<entry_counter*>(arg)->deallocate(p); },
    &c,
    &c};
  {
    rmm::mr::pool_memory_resource pool{callbacks, 0};
    grow_from_16_threads(pool);
    EXPECT_GT(c.allocations.load(), 1) << "the pool grew more than once";
  }
  EXPECT_EQ(c.most_inside.load(), 1);
  EXPECT_EQ(c.outstanding.load(), 0);
}

/// A user's resource whose answers the test switches: host memory as asked, null, or memory 16
/// bytes past a 256-aligned base (as malloc gives).
struct faulty_resource {
  enum class mode { good, null, misaligned };
  struct state {
    std::mutex lock;
    mode now{mode::good};
    std::map<void*, void*> live;  ///< handed out -> what operator new gave
  };
  std::shared_ptr<state> s = std::make_shared<state>();

  void set(mode m)
  {
    std::lock_guard<std::mutex> const g{s->lock};
    s->now = m;
  }
  std::size_t outstanding() const
  {
    std::lock_guard<std::mutex> const g{s->lock};
    return s->live.size();
  }

  void* allocate(cuda::stream_ref, std::size_t bytes, std::size_t)
  {
    std::lock_guard<std::mutex> const g{s->lock};
    if (s->now == mode::null) { return nullptr; }
    std::size_t const shift = s->now == mode::misaligned ? 16 : 0;
    void* base              = ::operator new(bytes + 256, std::align_val_t{256});
    void* p                 = static_cast<char*>(base) + shift;
    s->live.emplace(p, base);
    return p;
  }
  void deallocate(cuda::stream_ref, void* p, std::size_t, std::size_t) noexcept
  {
    std::lock_guard<std::mutex> const g{s->lock};
    auto const it = s->live.find(p);
    if (it == s->live.end()) { return; }
    ::operator delete(it->second, std::align_val_t{256});
    s->live.erase(it);
  }
  void* allocate_sync(std::size_t bytes, std::size_t alignment)
  {
    return allocate(default_stream(), bytes, alignment);
  }
  void deallocate_sync(void* p, std::size_t bytes, std::size_t alignment) noexcept
  {
    deallocate(default_stream(), p, bytes, alignment);
  }
  bool operator==(faulty_resource const& o) const noexcept { return s == o.s; }
  bool operator!=(faulty_resource const& o) const noexcept { return s != o.s; }
  friend void get_property(faulty_resource const&, cuda::mr::device_accessible) noexcept {}
};

static_assert(cuda::mr::resource_with<faulty_resource, cuda::mr::device_accessible>);

TEST(UpstreamContract, APoolRefusesNullOrMisalignedUpstreamMemoryAndKeepsWorking)
{
  using mode = faulty_resource::mode;
  // A null chunk is the upstream saying "no memory": the pool backs off and reports out of memory.
  for (auto [bad, text] : {std::pair{mode::null, "out of memory"}, std::pair{mode::misaligned, "not so aligned"}}) {
    faulty_resource up;
    rmm::mr::pool_memory_resource pool{up, MiB};
    void* a = pool.allocate(default_stream(), MiB);
    auto const size = pool.pool_size();
    up.set(bad);
    auto const refuse = [&] { (void)pool.allocate(default_stream(), 4 * MiB); };
    if (bad == mode::null) {
      expect_throws_exactly<rmm::out_of_memory>(refuse, text);
    } else {
      expect_throws_exactly<rmm::logic_error>(refuse, text);
    }
    EXPECT_EQ(pool.pool_size(), size);
    EXPECT_EQ(up.outstanding(), 1u) << "the refused chunk was given back";

    up.set(mode::good);
    void* b = pool.allocate(default_stream(), 4 * MiB);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % 256, 0u);
    pool.deallocate(default_stream(), a, MiB);
    pool.deallocate(default_stream(), b, 4 * MiB);
  }
}

TEST(UpstreamContract, AnAdaptorRefusesANullPointerFromAUserResource)
{
  faulty_resource up;
  rmm::mr::statistics_resource_adaptor stats{up};
  up.set(faulty_resource::mode::null);
  expect_throws_exactly<rmm::out_of_memory>([&] { (void)stats.allocate(default_stream(), MiB); }, "null pointer");
  EXPECT_EQ(stats.get_allocations_counter().value, 0);

  up.set(faulty_resource::mode::good);
  void* p = stats.allocate(default_stream(), MiB);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(stats.get_allocations_counter().value, 1);
  stats.deallocate(default_stream(), p, MiB);
  EXPECT_EQ(up.outstanding(), 0u);
}

}  // namespace
