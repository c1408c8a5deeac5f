// What the C++ oracle showed against RMM 26.10, seen from C++: the callback resource passes
// 0-byte requests and null frees to its callbacks, the limiting adaptor counts sizes at its own
// allocation alignment, the limiting adaptor's, the pool's and the statistics adaptor's refusals
// are in RMM's words, and a binning resource without bins sends everything upstream. Host memory
// stands in for device memory (nothing touches it): these run without a GPU.

#include "test_utils.hpp"

#include <rmm/error.hpp>
#include <rmm/mr/aligned_resource_adaptor.hpp>
#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/callback_memory_resource.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using rmm::test::default_stream;

/// A user's resource that records the size of every allocation, answering 0 bytes with null.
struct counting_resource {
  std::shared_ptr<std::vector<std::size_t>> sizes = std::make_shared<std::vector<std::size_t>>();

  void* allocate(cuda::stream_ref, std::size_t bytes, std::size_t)
  {
    sizes->push_back(bytes);
    return bytes == 0 ? nullptr : ::operator new(bytes, std::align_val_t{256});
  }
  void deallocate(cuda::stream_ref, void* p, std::size_t, std::size_t) noexcept
  {
    if (p != nullptr) { ::operator delete(p, std::align_val_t{256}); }
  }
  void* allocate_sync(std::size_t bytes, std::size_t alignment)
  {
    return allocate(default_stream(), bytes, alignment);
  }
  void deallocate_sync(void* p, std::size_t bytes, std::size_t alignment) noexcept
  {
    deallocate(default_stream(), p, bytes, alignment);
  }
  bool operator==(counting_resource const& o) const noexcept { return sizes == o.sizes; }
  bool operator!=(counting_resource const& o) const noexcept { return sizes != o.sizes; }
  friend void get_property(counting_resource const&, cuda::mr::device_accessible) noexcept {}
};

/// The what() of the rmm::out_of_memory that `f` throws ("" if it throws nothing).
template <class F>
std::string out_of_memory_what(F&& f)
{
  try {
    f();
  } catch (rmm::out_of_memory const& e) {
    return e.what();
  }
  return {};
}

struct callback_record {
  std::vector<std::size_t> allocs;
  std::vector<std::size_t> frees;
  std::vector<void*> args;
};

TEST(OracleParity, CallbacksReceiveZeroBytesAndNullFrees)
{
  callback_record rec;
  auto allocate = [](std::size_t bytes, cuda::stream_ref, void* arg) -> void* {
    auto* r = static_cast<callback_record*>(arg);
    r->allocs.push_back(bytes);
    r->args.push_back(arg);
    return bytes == 0 ? nullptr : ::operator new(bytes, std::align_val_t{256});
  };
  auto deallocate = [](void* p, std::size_t bytes, cuda::stream_ref, void* arg) {
    auto* r = static_cast<callback_record*>(arg);
    r->frees.push_back(bytes);
    r->args.push_back(arg);
    if (p != nullptr) { ::operator delete(p, std::align_val_t{256}); }
  };
  rmm::mr::callback_memory_resource mr{allocate, deallocate, &rec, &rec};
  void* a0 = mr.allocate(default_stream(), 0);
  EXPECT_EQ(a0, nullptr) << "null for 0 bytes is handed on, not out of memory";
  void* a1 = mr.allocate(default_stream(), 1);
  void* a2 = mr.allocate_sync(1000);
  mr.deallocate(default_stream(), a0, 0);
  mr.deallocate(default_stream(), a1, 1);
  mr.deallocate_sync(a2, 1000);
  EXPECT_EQ(rec.allocs, (std::vector<std::size_t>{0, 1, 1000}));
  EXPECT_EQ(rec.frees, (std::vector<std::size_t>{0, 1, 1000}));
  EXPECT_EQ(rec.args, (std::vector<void*>(6, &rec)));
}

TEST(OracleParity, PoppingWithNothingPushedSaysRmmsText)
{
  counting_resource up;
  rmm::mr::statistics_resource_adaptor stats{up};
  try {
    (void)stats.pop_counters();
    ADD_FAILURE() << "pop_counters with nothing pushed returned";
  } catch (std::out_of_range const& e) {
    EXPECT_STREQ(e.what(), "cannot pop the last counter pair");
  }
}

TEST(OracleParity, LimitingCountsSizesAtItsAllocationAlignment)
{
  struct row {
    std::size_t alignment, size, counted;
  };
  for (auto r : {row{1, 1, 1},
                 row{1, 255, 255},
                 row{1, 1000, 1000},
                 row{4096, 1, 4096},
                 row{4096, 1000, 4096},
                 row{256, 257, 512}}) {
    counting_resource up;
    rmm::mr::limiting_resource_adaptor limiting{up, std::size_t{1} << 20, r.alignment};
    void* p = limiting.allocate(default_stream(), r.size);
    EXPECT_EQ(limiting.get_allocated_bytes(), r.counted) << r.alignment << " " << r.size;
    limiting.deallocate(default_stream(), p, r.size);
    EXPECT_EQ(limiting.get_allocated_bytes(), 0u);
  }
}

TEST(OracleParity, LimitingRefusesInRmmsWords)
{
  counting_resource up;
  rmm::mr::limiting_resource_adaptor limiting{up, std::size_t{1} << 20};
  void* p = limiting.allocate(default_stream(), 1000);
  EXPECT_EQ(out_of_memory_what([&] { (void)limiting.allocate(default_stream(), std::size_t{1} << 20); }),
            "std::bad_alloc: out_of_memory: Exceeded memory limit 1048576; Allocated bytes 1024; "
            "Requested bytes 1048576\n");
  limiting.deallocate(default_stream(), p, 1000);
}

TEST(OracleParity, PoolRefusesInRmmsWords)
{
  counting_resource up;
  rmm::mr::pool_memory_resource none{up, 0, std::optional<std::size_t>{0}};
  EXPECT_EQ(out_of_memory_what([&] { (void)none.allocate(default_stream(), 1000); }),
            "std::bad_alloc: out_of_memory: Maximum pool size exceeded (failed to allocate "
            "1024.000000 B): Not enough room to grow, current/max/try size = 0.000000 B, "
            "0.000000 B, 1024.000000 B");

  rmm::mr::limiting_resource_adaptor limited{up, 6000};
  rmm::mr::pool_memory_resource pool{limited, 0, std::optional<std::size_t>{8192}};
  void* a = pool.allocate(default_stream(), 1000);
  EXPECT_EQ(out_of_memory_what([&] { (void)pool.allocate(default_stream(), 4000); }),
            "std::bad_alloc: out_of_memory: Maximum pool size exceeded (failed to allocate "
            "4.000000 KiB): std::bad_alloc: out_of_memory: Exceeded memory limit 6000; Allocated "
            "bytes 4096; Requested bytes 4096\n");
  pool.deallocate(default_stream(), a, 1000);
}

TEST(OracleParity, BinningWithoutBinsSendsEveryRequestUpstreamOnce)
{
  counting_resource up;
  rmm::mr::binning_memory_resource binning{up};
  for (std::size_t bytes : {std::size_t{0}, std::size_t{100}, std::size_t{1} << 20}) {
    void* p = binning.allocate(default_stream(), bytes);
    binning.deallocate(default_stream(), p, bytes);
  }
  EXPECT_EQ(*up.sizes, (std::vector<std::size_t>{0, 100, std::size_t{1} << 20}));
}

/// The what() of the rmm::logic_error that `f` throws ("" if it throws nothing).
template <class F>
std::string logic_error_what(F&& f)
{
  try {
    f();
  } catch (rmm::logic_error const& e) {
    return e.what();
  }
  return "";
}

TEST(OracleParity, ArgumentErrorsOfArenaAndAlignedAdaptorReadAsRmms)
{
  counting_resource up;
  EXPECT_EQ(logic_error_what([&] { rmm::mr::arena_memory_resource arena{up, std::size_t{0}}; }),
            "Arena size smaller than minimum superblock size.");
  for (std::size_t alignment : {std::size_t{0}, std::size_t{100}}) {
    EXPECT_EQ(logic_error_what([&] { rmm::mr::aligned_resource_adaptor aligned{up, alignment}; }),
              "Allocation alignment is not a power of 2.");
  }
  EXPECT_TRUE(up.sizes->empty()) << "nothing reached the upstream";
}

}  // namespace
