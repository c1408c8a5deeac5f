// Tests of the C++ <-> Rust boundary that need no GPU: a C++ resource that is not ours as the
// upstream of the Rust pool, adaptors, exceptions, misuse reporting, equality and conversions.

#include "test_utils.hpp"

#include <rmm/error.hpp>
#include <rmm/mr/failure_callback_resource_adaptor.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>
#include <rmm/resource_ref.hpp>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <unistd.h>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using rmm::test::default_stream;
using rmm::test::new_delete_resource;

// A pool that takes an initial chunk from a device-accessible upstream synchronizes the device once
// (the chunk may still be in use by stream-ordered work), which needs a driver. The pools here start
// empty and grow on demand, so these tests run anywhere; resources_test.cu covers initial sizes.

TEST(Bridge, CppResourceFeedsTheRustPool)
{
  new_delete_resource upstream;
  {
    // No maximum: the pool grows by max(request, pool size), as RMM's does, so the 8 MiB request
    // below is larger than the pool and must take a second chunk.
    rmm::mr::pool_memory_resource pool{upstream, 0};
    EXPECT_EQ(pool.pool_size(), 0u);
    void* first = pool.allocate(default_stream(), 1000);
    EXPECT_GT(pool.pool_size(), 0u);
    EXPECT_EQ(upstream.s->allocations, 1);  // the very copy held by the pool was used
    pool.deallocate(default_stream(), first, 1000);

    std::vector<std::pair<void*, std::size_t>> blocks;
    for (std::size_t i = 1; i <= 64; ++i) {
      std::size_t const bytes = i * 1000;
      void* p = pool.allocate(default_stream(), bytes);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u);
      blocks.emplace_back(p, bytes);
    }
    EXPECT_GT(pool.pool_size(), 0u);
    for (auto [p, bytes] : blocks) { pool.deallocate(default_stream(), p, bytes); }

    // Growth: a request larger than the pool takes another chunk from the C++ upstream.
    auto const before = pool.pool_size();
    void* big = pool.allocate(default_stream(), 8 * MiB);
    EXPECT_GE(pool.pool_size(), before + 8 * MiB);
    EXPECT_GE(upstream.s->allocations, 2);
    pool.deallocate(default_stream(), big, 8 * MiB);

    EXPECT_EQ(pool.get_upstream_resource(), rmm::device_async_resource_ref{upstream});
  }
  EXPECT_EQ(upstream.s->outstanding, 0) << "the pool gave its chunks back when the last copy went";
}

TEST(Bridge, PoolReportsUpstreamFailureAsOutOfMemory)
{
  new_delete_resource upstream;
  rmm::mr::pool_memory_resource pool{upstream, 0, 2 * MiB};
  try {
    (void)pool.allocate(default_stream(), 4 * MiB);
    FAIL() << "expected rmm::out_of_memory";
  } catch (rmm::out_of_memory const& e) {
    EXPECT_NE(std::string{e.what()}.find("(failed to allocate 4.000000 MiB)"), std::string::npos) << e.what();
  }
  upstream.s->fail_next = 100;  // the C++ upstream now throws std::bad_alloc
  EXPECT_THROW((void)pool.allocate(default_stream(), MiB), rmm::out_of_memory);
}

TEST(Bridge, PoolConstructorMisuseIsLogicError)
{
  new_delete_resource upstream;
  EXPECT_THROW((rmm::mr::pool_memory_resource{upstream, 1000}), rmm::logic_error);
  EXPECT_THROW((rmm::mr::pool_memory_resource{upstream, 2 * MiB, MiB}), rmm::logic_error);
  EXPECT_THROW((rmm::mr::pool_memory_resource{upstream, 0, 1000}), rmm::logic_error);
  new_delete_resource* null_upstream = nullptr;
  EXPECT_THROW((rmm::mr::pool_memory_resource{null_upstream, 0}), rmm::logic_error);
}

TEST(Bridge, LimitingAdaptorThrowsOutOfMemoryWithTheNumbers)
{
  new_delete_resource upstream;
  rmm::mr::pool_memory_resource pool{upstream, 0};
  rmm::mr::limiting_resource_adaptor limit{pool, MiB};
  EXPECT_EQ(limit.get_allocation_limit(), MiB);

  void* a = limit.allocate(default_stream(), 768 * 1024);
  EXPECT_EQ(limit.get_allocated_bytes(), 768u * 1024);
  try {
    (void)limit.allocate(default_stream(), 512 * 1024);
    FAIL() << "expected rmm::out_of_memory";
  } catch (rmm::out_of_memory const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("524288"), std::string::npos) << what;
  }
  // Also catchable as the bases RMM users catch.
  EXPECT_THROW((void)limit.allocate(default_stream(), MiB), rmm::bad_alloc);
  EXPECT_THROW((void)limit.allocate(default_stream(), MiB), std::bad_alloc);
  limit.deallocate(default_stream(), a, 768 * 1024);
  EXPECT_EQ(limit.get_allocated_bytes(), 0u);
  void* b = limit.allocate(default_stream(), MiB);  // fits again
  limit.deallocate(default_stream(), b, MiB);
}

TEST(Bridge, DoubleFreeIsReportedOnStderrAndChangesNothing)
{
  new_delete_resource upstream;
  rmm::mr::pool_memory_resource pool{upstream, 0};
  rmm::mr::statistics_resource_adaptor stats{pool};
  void* p = stats.allocate(default_stream(), 1000);
  stats.deallocate(default_stream(), p, 1000);
  auto const size = pool.pool_size();

  testing::internal::CaptureStderr();
  stats.deallocate(default_stream(), p, 1000);  // noexcept: reported, not thrown
  std::string const err = testing::internal::GetCapturedStderr();
  std::ostringstream ptr;
  ptr << std::hex << reinterpret_cast<std::uintptr_t>(p);
  EXPECT_NE(err.find(ptr.str()), std::string::npos) << err;
  EXPECT_NE(err.find("1000 bytes"), std::string::npos) << err;

  EXPECT_EQ(stats.get_allocations_counter().value, 0);
  EXPECT_EQ(stats.get_bytes_counter().value, 0);
  EXPECT_EQ(pool.pool_size(), size);
  void* q = stats.allocate(default_stream(), size);  // the whole pool is still free
  stats.deallocate(default_stream(), q, size);
  EXPECT_EQ(pool.pool_size(), size);
}

TEST(Bridge, FreeingAForeignPointerIsReported)
{
  new_delete_resource upstream;
  rmm::mr::pool_memory_resource pool{upstream, 0};
  int not_from_the_pool = 0;
  testing::internal::CaptureStderr();
  pool.deallocate(default_stream(), &not_from_the_pool, sizeof(int));
  std::string const err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("deallocate"), std::string::npos) << err;
  EXPECT_NE(err.find("4 bytes"), std::string::npos) << err;
}

TEST(Bridge, StatisticsCountersPushAndPop)
{
  new_delete_resource upstream;
  rmm::mr::statistics_resource_adaptor stats{rmm::mr::pool_memory_resource{upstream, 0}};
  void* a = stats.allocate(default_stream(), 1000);
  auto [bytes_before, allocs_before] = stats.push_counters();
  EXPECT_EQ(bytes_before.value, 1000);
  EXPECT_EQ(allocs_before.value, 1);
  EXPECT_EQ(stats.get_bytes_counter().value, 0);  // a fresh frame
  void* b = stats.allocate(default_stream(), 3000);
  EXPECT_EQ(stats.get_bytes_counter().value, 3000);
  auto [bytes_inner, allocs_inner] = stats.pop_counters();
  EXPECT_EQ(bytes_inner.value, 3000);
  EXPECT_EQ(allocs_inner.total, 1);
  EXPECT_EQ(stats.get_bytes_counter().value, 4000);
  EXPECT_EQ(stats.get_bytes_counter().peak, 4000);
  EXPECT_EQ(stats.get_allocations_counter().total, 2);
  EXPECT_THROW((void)stats.pop_counters(), rmm::out_of_range);
  stats.deallocate(default_stream(), b, 3000);
  stats.deallocate(default_stream(), a, 1000);
  EXPECT_EQ(stats.get_bytes_counter().value, 0);
}

TEST(Bridge, TrackingAdaptorListsOutstandingAllocations)
{
  new_delete_resource upstream;
  rmm::mr::tracking_resource_adaptor tracking{rmm::mr::pool_memory_resource{upstream, 0}};
  void* p = tracking.allocate(default_stream(), 4096);
  EXPECT_EQ(tracking.get_allocated_bytes(), 4096u);
  std::string const report = tracking.get_outstanding_allocations_str();
  std::ostringstream want;
  want << p << ": 4096 B\n";
  EXPECT_EQ(report, want.str());
  tracking.deallocate(default_stream(), p, 4096);
  EXPECT_EQ(tracking.get_allocated_bytes(), 0u);
}

TEST(Bridge, FailureCallbackRetriesAfterFreeing)
{
  new_delete_resource upstream;
  rmm::mr::pool_memory_resource pool{upstream, 0};
  rmm::mr::limiting_resource_adaptor limit{pool, MiB};
  struct context {
    rmm::mr::limiting_resource_adaptor* limit;
    void* held;
    int calls;
  } ctx{&limit, nullptr, 0};
  ctx.held = limit.allocate(default_stream(), MiB);
  auto callback = [](std::size_t, void* arg) {
    auto* c = static_cast<context*>(arg);
    ++c->calls;
    if (c->held == nullptr) { return false; }
    c->limit->deallocate(default_stream(), c->held, MiB);
    c->held = nullptr;
    return true;
  };
  rmm::mr::failure_callback_resource_adaptor<> retrying{limit, callback, &ctx};
  void* p = retrying.allocate(default_stream(), MiB);  // fails once, callback frees, retry fits
  EXPECT_EQ(ctx.calls, 1);
  EXPECT_THROW((void)retrying.allocate(default_stream(), MiB), rmm::out_of_memory);
  EXPECT_EQ(ctx.calls, 2);
  retrying.deallocate(default_stream(), p, MiB);
}

TEST(Bridge, LoggingAdaptorWritesCsv)
{
  std::string const path = testing::TempDir() + "rmm_rs_logging_test.csv";
  new_delete_resource upstream;
  {
    rmm::mr::logging_resource_adaptor log{rmm::mr::pool_memory_resource{upstream, 0}, path, true};
    void* p = log.allocate(default_stream(), 512);
    log.deallocate(default_stream(), p, 512);
    log.flush();
    EXPECT_EQ(log.header(), "Thread,Time,Action,Pointer,Size,Stream");
  }
  std::ifstream in{path};
  std::string header, line1, line2;
  std::getline(in, header);
  std::getline(in, line1);
  std::getline(in, line2);
  EXPECT_EQ(header, "Thread,Time,Action,Pointer,Size,Stream");
  EXPECT_NE(line1.find("allocate"), std::string::npos) << line1;
  EXPECT_NE(line1.find("512"), std::string::npos) << line1;
  EXPECT_NE(line2.find("free"), std::string::npos) << line2;
  std::remove(path.c_str());

  EXPECT_THROW((rmm::mr::logging_resource_adaptor{upstream, "/dev/null/x.csv"}), rmm::logic_error);

  // Missing folders above the file are created, as RMM's spdlog sink creates them.
  std::string const root = "/tmp/rmm-rs-bridge-folders-" + std::to_string(::getpid());
  std::string const nested = root + "/a/b/log.csv";
  {
    rmm::mr::logging_resource_adaptor made{upstream, nested};
    made.flush();
  }
  std::ifstream made_in{nested};
  std::string made_header;
  std::getline(made_in, made_header);
  EXPECT_EQ(made_header, "Thread,Time,Action,Pointer,Size,Stream");
  std::remove(nested.c_str());
  ::rmdir((root + "/a/b").c_str());
  ::rmdir((root + "/a").c_str());
  ::rmdir(root.c_str());
}

TEST(Bridge, CopiesShareStateAndCompareEqual)
{
  new_delete_resource upstream;
  rmm::mr::pool_memory_resource pool{upstream, 0};
  rmm::mr::pool_memory_resource copy = pool;
  EXPECT_TRUE(pool == copy);
  rmm::mr::pool_memory_resource other{upstream, 0};
  EXPECT_TRUE(pool != other);

  void* p = copy.allocate(default_stream(), 256);
  pool.deallocate(default_stream(), p, 256);  // one pool behind both handles: no complaint

  rmm::mr::statistics_resource_adaptor stats{pool};
  rmm::mr::statistics_resource_adaptor stats_copy{stats};  // a copy, not an adaptor of an adaptor
  EXPECT_TRUE(stats == stats_copy);
  void* q = stats_copy.allocate(default_stream(), 256);
  EXPECT_EQ(stats.get_allocations_counter().value, 1);
  stats.deallocate(default_stream(), q, 256);
}

TEST(Bridge, ResourceRefConversionsAndEquality)
{
  new_delete_resource upstream;
  rmm::mr::pool_memory_resource pool{upstream, 0};
  rmm::mr::statistics_resource_adaptor stats{pool};

  rmm::device_async_resource_ref async_ref{pool};
  rmm::device_resource_ref sync_ref{pool};
  rmm::device_async_resource_ref stats_ref{stats};
  EXPECT_TRUE(async_ref == rmm::device_async_resource_ref{pool});
  EXPECT_FALSE(async_ref == stats_ref);

  void* p = async_ref.allocate(default_stream(), 1024, 256);
  async_ref.deallocate(default_stream(), p, 1024, 256);
  void* q = sync_ref.allocate_sync(1024, 256);
  sync_ref.deallocate_sync(q, 1024, 256);

  // Owning, type-erased copies share the pool.
  cuda::mr::any_resource<cuda::mr::device_accessible> any{pool};
  EXPECT_TRUE(rmm::device_async_resource_ref{any} == async_ref);

  // A pool over a reference to ours, and over an any_resource: both accepted as upstreams.
  rmm::mr::pool_memory_resource over_ref{stats_ref, 0};
  rmm::mr::pool_memory_resource over_any{any, 0};
  void* r = over_ref.allocate(default_stream(), 4096);
  EXPECT_EQ(stats.get_allocations_counter().value, 1);  // the chunk went through stats
  over_ref.deallocate(default_stream(), r, 4096);

  static_assert(std::is_convertible_v<rmm::mr::pool_memory_resource&, rmm::device_async_resource_ref>);
  static_assert(std::is_convertible_v<rmm::mr::pool_memory_resource&, rmm::device_resource_ref>);
}

TEST(Bridge, ExceptionTypesDeriveAsInRmm)
{
  static_assert(std::is_base_of_v<rmm::bad_alloc, rmm::out_of_memory>);
  static_assert(std::is_base_of_v<std::bad_alloc, rmm::bad_alloc>);
  static_assert(std::is_base_of_v<std::logic_error, rmm::logic_error>);
  static_assert(std::is_base_of_v<std::runtime_error, rmm::cuda_error>);
  static_assert(std::is_base_of_v<std::out_of_range, rmm::out_of_range>);
  EXPECT_THROW(RMM_EXPECTS(false, "expected"), rmm::logic_error);
  EXPECT_THROW(RMM_FAIL("always"), rmm::logic_error);
  EXPECT_THROW(RMM_EXPECTS(1 + 1 == 3, "math", rmm::invalid_argument), rmm::invalid_argument);
}

}  // namespace
