// `rmm::mr::virtual_pool_memory_resource`: the conformance suite (mr_conformance.hpp) on a device
// with virtual memory management, its own members (release, release_above, the byte counts, peer
// access, exported handles) on the GPU, and its argument errors on any machine.
#include "mr_conformance.hpp"

#include <rmm/cuda_device.hpp>
#include <rmm/device_buffer.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/virtual_pool_memory_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace rmm::test {
namespace {

using rmm::mr::virtual_pool_memory_resource;

static_assert(std::is_convertible_v<virtual_pool_memory_resource&, rmm::device_async_resource_ref>,
              "a virtual pool converts to rmm::device_async_resource_ref");

constexpr std::size_t GiB = std::size_t{1} << 30;

/// Whether the current device supports virtual memory management: the runtime API has no
/// attribute for it, so the resource itself is asked (it checks the driver's attribute first).
bool vmm_supported()
{
  try {
    virtual_pool_memory_resource probe{GiB};
    return true;
  } catch (rmm::logic_error const& e) {
    if (std::string{e.what()}.find("virtual memory management") != std::string::npos) { return false; }
    throw;
  }
}

struct virtual_pool_factory {
  static constexpr bool needs_gpu = true;
  static char const* unsupported()
  {
    return vmm_supported() ? nullptr : "the device does not support virtual memory management";
  }
  static auto make() { return virtual_pool_memory_resource{4 * GiB}; }
};

/// Skips the test without a GPU, or where the device lacks virtual memory management.
#define SKIP_WITHOUT_VMM()                                                                          \
  do {                                                                                              \
    RMM_SKIP_WITHOUT_GPU();                                                                         \
    if (!vmm_supported()) { GTEST_SKIP() << "skipped: the device does not support virtual memory management"; } \
  } while (0)

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(VirtualPool, MrConformance, virtual_pool_factory);

// --- Any machine: arguments refused before the device is asked ---------------------------------

TEST(VirtualPoolArguments, AnInitialSizeAboveTheMaximumIsALogicError)
{
  EXPECT_THROW(virtual_pool_memory_resource(GiB, 2 * GiB), rmm::logic_error);
}

TEST(VirtualPoolArguments, AZeroMaximumIsALogicError)
{
  EXPECT_THROW(virtual_pool_memory_resource(0), rmm::logic_error);
}

TEST(VirtualPoolArguments, WithoutADeviceTheConstructorThrowsAnRmmError)
{
  if (rmm::get_num_cuda_devices() != 0) { GTEST_SKIP() << "skipped: a CUDA device is present"; }
  try {
    virtual_pool_memory_resource mr{GiB};
    FAIL() << "made a virtual pool without a device";
  } catch (rmm::cuda_error const& e) {
    EXPECT_FALSE(std::string{e.what()}.empty());
  } catch (rmm::logic_error const& e) {
    EXPECT_FALSE(std::string{e.what()}.empty());
  }
}

// --- GPU ---------------------------------------------------------------------------------------

TEST(VirtualPool, TheInitialSizeIsMappedAtOnceAndTheReservationIsWhole)
{
  SKIP_WITHOUT_VMM();
  virtual_pool_memory_resource mr{8 * GiB, 64 * MiB};
  auto const g = mr.granularity();
  ASSERT_GT(g, 0u);
  EXPECT_GE(mr.reserved_bytes(), 8 * GiB);
  EXPECT_EQ(mr.reserved_bytes() % g, 0u);
  EXPECT_GE(mr.mapped_bytes(), 64 * MiB);
  EXPECT_EQ(mr.mapped_bytes() % g, 0u);
  EXPECT_EQ(mr.pool_size(), mr.mapped_bytes());
}

TEST(VirtualPool, ReleaseUnmapsAndRegrowthKeepsTheAddress)
{
  SKIP_WITHOUT_VMM();
  virtual_pool_memory_resource mr{16 * GiB};
  auto const bytes = 3 * GiB;
  void* p          = mr.allocate_sync(bytes);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(cudaMemset(p, 0x5a, bytes), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_GE(mr.mapped_bytes(), bytes);
  mr.deallocate_sync(p, bytes);

  EXPECT_GE(mr.release(), bytes);
  EXPECT_EQ(mr.mapped_bytes(), 0u);

  void* q = mr.allocate_sync(bytes);
  EXPECT_EQ(q, p) << "the same addresses are mapped again";
  EXPECT_GE(mr.mapped_bytes(), bytes);
  ASSERT_EQ(cudaMemset(q, 0x11, bytes), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  mr.deallocate_sync(q, bytes);
}

TEST(VirtualPool, ReleaseAboveKeepsWhatItIsAskedTo)
{
  SKIP_WITHOUT_VMM();
  virtual_pool_memory_resource mr{8 * GiB};
  auto const bytes = GiB;
  void* p          = mr.allocate_sync(bytes);
  mr.deallocate_sync(p, bytes);
  auto const before = mr.mapped_bytes();
  auto const keep   = 256 * MiB;
  auto const freed  = mr.release_above(keep);
  EXPECT_EQ(before - freed, mr.mapped_bytes());
  EXPECT_LE(mr.mapped_bytes(), keep + mr.granularity());
  EXPECT_EQ(mr.release_above(mr.mapped_bytes()), 0u) << "nothing above what is mapped";
}

TEST(VirtualPool, LiveBlocksAreNotReleased)
{
  SKIP_WITHOUT_VMM();
  virtual_pool_memory_resource mr{4 * GiB};
  void* p = mr.allocate_sync(64 * MiB);
  mr.release();
  EXPECT_GE(mr.mapped_bytes(), 64 * MiB);
  ASSERT_EQ(cudaMemset(p, 0, 64 * MiB), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  mr.deallocate_sync(p, 64 * MiB);
}

TEST(VirtualPool, AnExhaustedReservationIsOutOfMemory)
{
  SKIP_WITHOUT_VMM();
  virtual_pool_memory_resource mr{GiB};
  EXPECT_THROW((void)mr.allocate_sync(mr.reserved_bytes() + 1), rmm::out_of_memory);
}

TEST(VirtualPool, AGranularityTheDeviceRefusesIsALogicError)
{
  SKIP_WITHOUT_VMM();
  virtual_pool_memory_resource::options opts;
  opts.granularity = 3 * 4096;
  EXPECT_THROW(virtual_pool_memory_resource(GiB, std::nullopt, opts), rmm::logic_error);
}

TEST(VirtualPool, AsTheCurrentResourceItBacksABuffer)
{
  SKIP_WITHOUT_VMM();
  virtual_pool_memory_resource mr{4 * GiB};
  auto old = rmm::mr::set_current_device_resource_ref(mr);
  {
    rmm::device_buffer buf{MiB, default_stream()};
    ASSERT_EQ(cudaMemset(buf.data(), 7, buf.size()), cudaSuccess);
    std::vector<unsigned char> host(buf.size());
    ASSERT_EQ(cudaMemcpy(host.data(), buf.data(), buf.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(host.front(), 7);
    EXPECT_EQ(host.back(), 7);
    EXPECT_GE(mr.mapped_bytes(), MiB);
  }
  rmm::mr::set_current_device_resource_ref(old);
}

TEST(VirtualPool, APeerDeviceMayWriteTheMemory)
{
  SKIP_WITHOUT_VMM();
  if (rmm::get_num_cuda_devices() < 2) { GTEST_SKIP() << "skipped: fewer than two CUDA devices"; }
  int can = 0;
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can, 1, 0), cudaSuccess);
  if (can == 0) { GTEST_SKIP() << "skipped: device 1 cannot access device 0"; }
  rmm::cuda_set_device_raii on0{rmm::cuda_device_id{0}};
  virtual_pool_memory_resource mr{GiB, std::nullopt, {rmm::cuda_device_id{1}}};
  void* p = mr.allocate_sync(MiB);
  {
    rmm::cuda_set_device_raii on1{rmm::cuda_device_id{1}};
    ASSERT_EQ(cudaMemset(p, 3, MiB), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  unsigned char b = 0;
  ASSERT_EQ(cudaMemcpy(&b, p, 1, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(b, 3);
  mr.deallocate_sync(p, MiB);
}

TEST(VirtualPool, MemoryMadeExportableGivesAFileDescriptor)
{
  SKIP_WITHOUT_VMM();
  virtual_pool_memory_resource::options opts;
  opts.export_posix_fd = true;
  virtual_pool_memory_resource mr{GiB, std::nullopt, opts};
  void* p = mr.allocate_sync(MiB);
  try {
    int const fd = mr.export_posix_fd(p);
    EXPECT_GE(fd, 0);
    if (fd >= 0) { ::close(fd); }
  } catch (rmm::logic_error const& e) {  // the device cannot export POSIX file descriptors
    EXPECT_NE(std::string{e.what()}.find("exportable"), std::string::npos) << e.what();
  }
  mr.deallocate_sync(p, MiB);
}

TEST(VirtualPool, MemoryNotMadeExportableSaysSo)
{
  SKIP_WITHOUT_VMM();
  virtual_pool_memory_resource mr{GiB};
  void* p = mr.allocate_sync(MiB);
  EXPECT_THROW((void)mr.export_posix_fd(p), rmm::logic_error);
  mr.deallocate_sync(p, MiB);
}

TEST(VirtualPool, AMovedFromPoolAnswersZeroAndRefusesToRelease)
{
  SKIP_WITHOUT_VMM();
  virtual_pool_memory_resource mr{GiB, 2 * MiB};
  virtual_pool_memory_resource moved{std::move(mr)};
  EXPECT_GT(moved.mapped_bytes(), 0u);
  EXPECT_EQ(mr.mapped_bytes(), 0u);  // NOLINT(bugprone-use-after-move): what a moved-from one says
  EXPECT_THROW(mr.release(), rmm::logic_error);
}

}  // namespace rmm::test
