// The bad-input catalogue of docs/errors.md from C++: for every row, the exact exception (or, for
// frees, which are noexcept, the exact report on stderr), that nothing observable changed, and that
// the resource keeps working. Pools and adaptors run over a host-memory stand-in without a GPU;
// the CUDA resources and the device rows need one.

#include "test_utils.hpp"

#include <rmm/cuda_stream.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/failure_callback_resource_adaptor.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/managed_memory_resource.hpp>
#include <rmm/mr/pinned_host_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

namespace {

using rmm::test::default_stream;
using rmm::test::device_keeps_working;
using rmm::test::expect_throws_exactly;
using rmm::test::new_delete_resource;
constexpr std::size_t max_size = std::numeric_limits<std::size_t>::max();

std::string hex(void const* p)
{
  std::ostringstream s;
  s << "0x" << std::hex << reinterpret_cast<std::uintptr_t>(p);
  return s.str();
}

/// How a resource handles a bad free: a pool refuses it; the tracking adaptor logs it and passes it
/// to its pool (which refuses it), a wrong size corrected to the size allocated.
enum class blocks { pool, tracking };

/// One resource under test: its name in reports and a snapshot of its observable state.
template <class R>
struct subject {
  std::string name;
  R& mr;
  std::function<std::string()> state;
  blocks kind;
};

/// The state that an allocation and its free leave as they were.
std::string pool_state(rmm::mr::pool_memory_resource const& pool, new_delete_resource const& up)
{
  return "pool size " + std::to_string(pool.pool_size()) + ", upstream blocks " +
         std::to_string(up.s->outstanding.load());
}

/// Calls `f(subject)` for the pool and every adaptor over a pool of its own (4 MiB, host memory).
template <class F>
void for_each_subject(F&& f)
{
  new_delete_resource up;
  auto make_pool = [&] { return rmm::mr::pool_memory_resource{up, 4 * MiB}; };
  {
    auto pool = make_pool();
    f(subject<rmm::mr::pool_memory_resource>{
      "pool_memory_resource", pool, [&] { return pool_state(pool, up); }, blocks::pool});
  }
  {
    auto pool = make_pool();
    rmm::mr::statistics_resource_adaptor mr{pool};
    f(subject<rmm::mr::statistics_resource_adaptor>{
      "statistics_resource_adaptor",
      mr,
      [&] {
        return std::to_string(mr.get_bytes_counter().value) + " bytes, " +
               std::to_string(mr.get_allocations_counter().value) + " allocations, " + pool_state(pool, up);
      },
      blocks::pool});
  }
  {
    auto pool = make_pool();
    rmm::mr::tracking_resource_adaptor mr{pool};
    f(subject<rmm::mr::tracking_resource_adaptor>{
      "tracking_resource_adaptor",
      mr,
      [&] { return std::to_string(mr.get_allocated_bytes()) + " tracked, " + pool_state(pool, up); },
      blocks::tracking});
  }
  {
    auto pool = make_pool();
    rmm::mr::limiting_resource_adaptor mr{pool, 64 * MiB};
    f(subject<rmm::mr::limiting_resource_adaptor>{
      "limiting_resource_adaptor",
      mr,
      [&] { return std::to_string(mr.get_allocated_bytes()) + " counted, " + pool_state(pool, up); },
      blocks::pool});
  }
  {
    auto pool = make_pool();
    std::string const path = testing::TempDir() + "rmm_rs_bad_input_log.csv";
    {
      rmm::mr::logging_resource_adaptor mr{pool, path};
      f(subject<rmm::mr::logging_resource_adaptor>{
        "logging_resource_adaptor", mr, [&] { return pool_state(pool, up); }, blocks::pool});
    }
    std::remove(path.c_str());
  }
  {
    auto pool = make_pool();
    rmm::mr::failure_callback_resource_adaptor<> mr{pool, [](std::size_t, void*) { return false; }, nullptr};
    f(subject<rmm::mr::failure_callback_resource_adaptor<>>{
      "failure_callback_resource_adaptor", mr, [&] { return pool_state(pool, up); }, blocks::pool});
  }
  EXPECT_EQ(up.s->outstanding, 0) << "every pool gave its memory back";
}

/// An allocation and a free succeed and leave the state as it was.
template <class R>
void keeps_working(subject<R> const& s)
{
  auto const before = s.state();
  void* a = s.mr.allocate(default_stream(), 1000);
  void* b = s.mr.allocate(default_stream(), MiB, 4096);
  ASSERT_NE(a, nullptr) << s.name;
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % 4096, 0u) << s.name;
  s.mr.deallocate(default_stream(), b, MiB, 4096);
  s.mr.deallocate(default_stream(), a, 1000);
  EXPECT_EQ(s.state(), before) << s.name;
}

TEST(BadInput, ZeroBytesIsNullAndChangesNothing)
{
  for_each_subject([](auto const& s) {
    auto const before = s.state();
    EXPECT_EQ(s.mr.allocate(default_stream(), 0), nullptr) << s.name;
    s.mr.deallocate(default_stream(), nullptr, 0);
    EXPECT_EQ(s.state(), before) << s.name;
    keeps_working(s);
  });
}

TEST(BadInput, MaxSizeIsOutOfMemory)
{
  for_each_subject([](auto const& s) {
    auto const before = s.state();
    // The limiting adaptor cannot even round the size; everyone else passes it to the pool.
    std::string const reason = s.name == "limiting_resource_adaptor"
                                 ? "(size overflows the address space)"
                                 : "(larger than any pool can hold); pool size 4194304";
    expect_throws_exactly<rmm::out_of_memory>(
      [&] { (void)s.mr.allocate(default_stream(), max_size); },
      "out of memory: cannot allocate 18446744073709551615 bytes " + reason);
    EXPECT_EQ(s.state(), before) << s.name;
    keeps_working(s);
  });
}

TEST(BadInput, BadAlignmentIsBadAlloc)
{
  for_each_subject([](auto const& s) {
    auto const before = s.state();
    for (std::size_t alignment : {std::size_t{0}, std::size_t{3}, std::size_t{768}, std::size_t{1} << 31}) {
      expect_throws_exactly<rmm::bad_alloc>(
        [&] { (void)s.mr.allocate(default_stream(), 1000, alignment); },
        "bad alignment " + std::to_string(alignment) + ": must be a power of two no larger than 1073741824");
    }
    EXPECT_EQ(s.state(), before) << s.name;
    keeps_working(s);
  });
}

TEST(BadInput, MoreThanTheUpstreamHasIsOutOfMemory)
{
  // A 64 MiB limit stands in for a 64 MiB device.
  new_delete_resource up;
  rmm::mr::limiting_resource_adaptor device{up, 64 * MiB};
  rmm::mr::pool_memory_resource pool{device, 0};
  expect_throws_exactly<rmm::out_of_memory>(
    [&] { (void)device.allocate(default_stream(), 64 * MiB + 256); },
    "Exceeded memory limit 67108864; Allocated bytes 0; Requested bytes 67109120\n");
  expect_throws_exactly<rmm::out_of_memory>(
    [&] { (void)pool.allocate(default_stream(), 64 * MiB + 256); },
    "Maximum pool size exceeded (failed to allocate 64.000244 MiB): std::bad_alloc: out_of_memory: "
    "Exceeded memory limit 67108864; Allocated bytes 0; Requested bytes 67109120\n");
  EXPECT_EQ(device.get_allocated_bytes(), 0u);
  EXPECT_EQ(up.s->outstanding, 0);
  void* p = pool.allocate(default_stream(), 32 * MiB);
  pool.deallocate(default_stream(), p, 32 * MiB);
  EXPECT_EQ(pool.pool_size(), 32 * MiB);
}

/// Frees `ptr` and returns what was reported on stderr.
template <class R>
std::string refused_free(R& mr, void* ptr, std::size_t bytes)
{
  testing::internal::CaptureStderr();
  mr.deallocate(default_stream(), ptr, bytes);  // noexcept: a refusal is reported, not thrown
  return testing::internal::GetCapturedStderr();
}

TEST(BadInput, BadFreesAreReportedAndChangeNothing)
{
  new_delete_resource other;
  for_each_subject([&](auto const& s) {
    void* live  = s.mr.allocate(default_stream(), 1000);
    void* freed = s.mr.allocate(default_stream(), 5000);
    s.mr.deallocate(default_stream(), freed, 5000);
    void* foreign = other.allocate(default_stream(), 512, 256);
    void* inside  = static_cast<char*>(live) + 256;
    // The tracking adaptor passes a free it cannot match to its pool, as RMM's does, which
    // reports it; a wrong size it corrects to the size allocated, so that free succeeds.
    bool const tracking = s.kind == blocks::tracking;
    std::string const unknown = " was not allocated by this resource";
    struct bad_free {
      char const* what;
      void* ptr;
      std::size_t bytes;
      std::string report;
    };
    std::vector<bad_free> const cases{
      {"double free", freed, 5000, "misuse: double free: " + hex(freed) + " is already free in this resource"},
      {"foreign pointer", foreign, 512, "misuse: unknown pointer: " + hex(foreign) + unknown},
      {"interior pointer", inside, 744,
       "misuse: interior pointer: " + hex(inside) + " points inside the block that starts at " + hex(live)},
      {"wrong size", live, 999,
       "misuse: wrong size: " + hex(live) + " was allocated with 1000 bytes but freed with 999"},
    };
    auto const before = s.state();
    // The failure-callback adaptor is C++ (it catches and retries with the exception's own type,
    // as RMM's): a free passes straight to its pool, which reports it.
    std::string const reporter =
      s.name == "failure_callback_resource_adaptor" ? std::string{"pool_memory_resource"} : s.name;
    for (auto const& c : cases) {
      // Tracking frees a wrong size with the allocated size: adaptors_zero_bytes_bad_frees_test.cu
      if (tracking && std::string{c.what} == "wrong size") { continue; }
      std::string const err = refused_free(s.mr, c.ptr, c.bytes);
      std::string const head = "rmm: deallocate(" + hex(c.ptr) + ", " + std::to_string(c.bytes) +
                               " bytes, alignment 256, stream 0x0) on " + reporter + " failed: ";
      EXPECT_NE(err.find(head + c.report), std::string::npos) << s.name << " " << c.what << ": " << err;
      EXPECT_EQ(s.state(), before) << s.name << ": " << c.what;
    }
    s.mr.deallocate(default_stream(), live, 1000);
    other.deallocate(default_stream(), foreign, 512, 256);
    keeps_working(s);
  });
}

TEST(BadInput, PoolSizesAreCheckedBeforeTheUpstreamIsAsked)
{
  new_delete_resource up;
  expect_throws_exactly<rmm::logic_error>([&] { rmm::mr::pool_memory_resource{up, 1000}; },
                                          "Error, Initial pool size required to be a multiple of 256 bytes");
  expect_throws_exactly<rmm::logic_error>([&] { rmm::mr::pool_memory_resource{up, 0, 1000}; },
                                          "Error, Maximum pool size required to be a multiple of 256 bytes");
  expect_throws_exactly<rmm::logic_error>([&] { rmm::mr::pool_memory_resource{up, 2 * MiB, MiB}; },
                                          "Initial pool size exceeds the maximum pool size!");
  EXPECT_EQ(up.s->allocations, 0) << "nothing was taken from the upstream";
  void* p = up.allocate_sync(MiB, 256);
  up.deallocate_sync(p, MiB, 256);
}

TEST(BadInput, LoggingToAPathThatCannotBeWritten)
{
  new_delete_resource up;
  rmm::mr::pool_memory_resource pool{up, 0};
  for (std::string const path : {"/dev/null/log.csv", "/proc/version/log.csv"}) {
    expect_throws_exactly<rmm::logic_error>([&] { rmm::mr::logging_resource_adaptor{pool, path}; },
                                            "cannot write " + path + ": ");
  }
  EXPECT_EQ(pool.pool_size(), 0u);
  void* p = pool.allocate(default_stream(), MiB);
  pool.deallocate(default_stream(), p, MiB);
}

TEST(BadInput, LoggingWithoutAFileName)
{
  char const* set = std::getenv("RMM_LOG_FILE");
  std::string const saved{set != nullptr ? set : ""};
  unsetenv("RMM_LOG_FILE");
  new_delete_resource up;
  rmm::mr::pool_memory_resource pool{up, 0};
  expect_throws_exactly<rmm::logic_error>([&] { rmm::mr::logging_resource_adaptor{pool}; },
                                          "RMM_LOG_FILE is unset");
  if (set != nullptr) { setenv("RMM_LOG_FILE", saved.c_str(), 1); }
  EXPECT_EQ(up.s->allocations, 0);
  void* p = pool.allocate(default_stream(), MiB);
  pool.deallocate(default_stream(), p, MiB);
}

/// Without a driver an allocation fails as RMM's do (rmm::bad_alloc); a constructor that needs
/// the driver throws rmm::cuda_error.
TEST(BadInput, NoDriver)
{
  if (rmm::get_num_cuda_devices() > 0) { GTEST_SKIP() << "skipped: needs a machine without a CUDA device"; }
  rmm::mr::cuda_memory_resource cuda;
  expect_throws_exactly<rmm::bad_alloc>([&] { (void)cuda.allocate_sync(MiB); }, "no CUDA driver: ");
  EXPECT_EQ(cuda.allocate_sync(0), nullptr);
  expect_throws_exactly<rmm::cuda_error>([] { rmm::mr::cuda_async_memory_resource{}; }, "no CUDA driver: ");
}

// ---------------------------------------------------------------------------------------------
// On the device
// ---------------------------------------------------------------------------------------------

/// Zero bytes and bad alignments (the CUDA resources accept up to 256): refused before any driver
/// call. `SIZE_MAX`, which the driver refuses, is in device_out_of_memory_test.cu.
template <class R>
void cuda_resource_refuses_bad_arguments(R mr, std::string const& call)
{
  EXPECT_EQ(mr.allocate(default_stream(), 0), nullptr) << call;
  for (std::size_t alignment : {std::size_t{0}, std::size_t{3}, std::size_t{512}}) {
    expect_throws_exactly<rmm::bad_alloc>(
      [&] { (void)mr.allocate(default_stream(), 1000, alignment); },
      "bad alignment " + std::to_string(alignment) + ": must be a power of two no larger than 256");
  }
  device_keeps_working(mr);
}

TEST(BadInputOnGpu, CudaResourcesRefuseBadArguments)
{
  RMM_SKIP_WITHOUT_GPU();
  cuda_resource_refuses_bad_arguments(rmm::mr::cuda_memory_resource{}, "cuMemAlloc");
  cuda_resource_refuses_bad_arguments(rmm::mr::managed_memory_resource{}, "cuMemAllocManaged");
  cuda_resource_refuses_bad_arguments(rmm::mr::pinned_host_memory_resource{}, "cuMemHostAlloc");
  cuda_resource_refuses_bad_arguments(rmm::mr::cuda_async_memory_resource{}, "cuMemAllocFromPoolAsync");
}

TEST(BadInputOnGpu, FreeOnADestroyedStream)
{
  RMM_SKIP_WITHOUT_GPU();
  rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 64 * MiB, 64 * MiB};
  for (int round = 0; round < 10; ++round) {
    // The taker may well get the dying stream's handle back from the driver: the pool waits for
    // the dead stream's memset all the same (tests/stress/stream_reuse_stress.cu at scale).
    void* p{};
    cudaStream_t dead{};
    {
      rmm::cuda_stream s;
      p = pool.allocate(s, 64 * MiB);
      RMM_CUDA_TRY(cudaMemsetAsync(p, 0x11, 64 * MiB, s.value()));
      dead = s.value();
      // Freed while the stream is alive (naming a destroyed stream is undefined, as in RMM).
      testing::internal::CaptureStderr();
      pool.deallocate(cuda::stream_ref{dead}, p, 64 * MiB);
      EXPECT_EQ(testing::internal::GetCapturedStderr(), "") << "the free was accepted";
    }  // destroyed, its memset perhaps still running
    rmm::cuda_stream t;
    void* q = pool.allocate(t, 64 * MiB);
    EXPECT_EQ(q, p);
    RMM_CUDA_TRY(cudaMemsetAsync(q, 0x22, 64 * MiB, t.value()));
    std::vector<unsigned char> back(64 * MiB);
    RMM_CUDA_TRY(cudaMemcpyAsync(back.data(), q, back.size(), cudaMemcpyDeviceToHost, t.value()));
    t.synchronize();
    for (std::size_t i = 0; i < back.size(); i += 4099) {
      ASSERT_EQ(back[i], 0x22) << "round " << round << ": the dead stream's memset ran after the new owner's";
    }
    pool.deallocate(t, q, 64 * MiB);
  }
  EXPECT_EQ(pool.pool_size(), 64 * MiB);
}

}  // namespace
