// Two GPUs: every container member that allocates, frees or copies runs with its own device
// current, whichever device the caller has current (RMM 26.10 makes the buffer's device current
// with cuda_set_device_raii in each of them).
//
// A resource adaptor written here as a user would write one checks it: it remembers the device
// current when it was made and throws from allocate (counts a failure from deallocate, which may
// not throw) when another device is current. Each container is made on one device, the other
// device is made current, and the member is called; then the same with the devices swapped. Each
// test restores the current device and the per-device resources, so the tests repeat
// (--gtest_repeat=20) and run beside the others. They skip, saying why, with fewer than two GPUs.

#include "test_utils.hpp"

#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/device_buffer.hpp>
#include <rmm/device_scalar.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/device_vector.hpp>
#include <rmm/exec_policy.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/thrust_allocator_adaptor.hpp>

#include <thrust/sequence.h>
#include <thrust/sort.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

int current_device()
{
  int d = -1;
  RMM_CUDA_TRY(cudaGetDevice(&d));
  return d;
}

int device_of(void const* p)
{
  cudaPointerAttributes attributes{};
  RMM_CUDA_TRY(cudaPointerGetAttributes(&attributes, p));
  return attributes.device;
}

/// The user's adaptor: forwards to a cuda_memory_resource (which allocates on whichever device is
/// current), and insists that the device current at its construction is current for every call.
/// Copies share their counters.
struct device_checking_resource {
  struct state {
    int device{-1};
    std::atomic<long> allocations{0};
    std::atomic<long> deallocations{0};
    std::atomic<long> outstanding_bytes{0};
    std::atomic<long> wrong_device_frees{0};
  };
  std::shared_ptr<state> s = std::make_shared<state>();
  rmm::mr::cuda_memory_resource upstream{};

  device_checking_resource() { s->device = current_device(); }

  void* allocate(cuda::stream_ref stream, std::size_t bytes, std::size_t alignment)
  {
    int const now = current_device();
    if (now != s->device) {
      throw std::runtime_error("allocate through the resource of device " + std::to_string(s->device) +
                               " while device " + std::to_string(now) + " is current");
    }
    void* p = upstream.allocate(stream, bytes, alignment);
    ++s->allocations;
    s->outstanding_bytes += static_cast<long>(bytes);
    return p;
  }
  void deallocate(cuda::stream_ref stream, void* p, std::size_t bytes, std::size_t alignment) noexcept
  {
    int now = -1;
    (void)cudaGetDevice(&now);
    if (now != s->device) {
      ++s->wrong_device_frees;
      ADD_FAILURE() << "free through the resource of device " << s->device << " while device " << now
                    << " is current";
    }
    ++s->deallocations;
    s->outstanding_bytes -= static_cast<long>(bytes);
    upstream.deallocate(stream, p, bytes, alignment);
  }
  void* allocate_sync(std::size_t bytes, std::size_t alignment)
  {
    return allocate(rmm::test::default_stream(), bytes, alignment);
  }
  void deallocate_sync(void* p, std::size_t bytes, std::size_t alignment) noexcept
  {
    deallocate(rmm::test::default_stream(), p, bytes, alignment);
  }
  bool operator==(device_checking_resource const& o) const noexcept { return s == o.s; }
  bool operator!=(device_checking_resource const& o) const noexcept { return s != o.s; }
  friend void get_property(device_checking_resource const&, cuda::mr::device_accessible) noexcept {}
};

static_assert(cuda::mr::resource_with<device_checking_resource, cuda::mr::device_accessible>);

/// On each of the first two devices: a checking resource (made with that device current) set as
/// the device's resource, and a stream of that device. TearDown puts back the previous resources
/// and the device current at SetUp, and checks that everything allocated was freed.
class MultiGpuContainers : public ::testing::Test {
 protected:
  void SetUp() override
  {
    if (rmm::get_num_cuda_devices() < 2) {
      GTEST_SKIP() << "skipped: needs two CUDA devices, this machine has " << rmm::get_num_cuda_devices();
    }
    device_at_start_ = current_device();
    for (int d = 0; d < 2; ++d) {
      rmm::cuda_set_device_raii dev{rmm::cuda_device_id{d}};
      resources_[d].emplace();
      streams_[d].emplace();
      previous_[d].emplace(rmm::mr::set_per_device_resource(rmm::cuda_device_id{d}, *resources_[d]));
    }
    ASSERT_EQ(current_device(), device_at_start_);
  }

  void TearDown() override
  {
    if (!resources_[0]) { return; }  // skipped
    for (int d = 0; d < 2; ++d) {
      rmm::mr::set_per_device_resource(rmm::cuda_device_id{d}, std::move(*previous_[d]));
      rmm::cuda_set_device_raii dev{rmm::cuda_device_id{d}};
      streams_[d]->synchronize();
      EXPECT_EQ(resources_[d]->s->outstanding_bytes.load(), 0) << "device " << d;
      EXPECT_EQ(resources_[d]->s->wrong_device_frees.load(), 0) << "device " << d;
      streams_[d].reset();
    }
    RMM_CUDA_TRY(cudaSetDevice(device_at_start_));
  }

  device_checking_resource& mr(int d) { return *resources_[d]; }
  cuda::stream_ref stream(int d) { return *streams_[d]; }

  /// Bytes 0, 1, 2, ... (mod 256), `n` of them, written to `p` on `d`'s stream.
  void write_pattern(void* p, std::size_t n, int d)
  {
    std::vector<std::uint8_t> host(n);
    std::iota(host.begin(), host.end(), std::uint8_t{0});
    RMM_CUDA_TRY(cudaMemcpyAsync(p, host.data(), n, cudaMemcpyDefault, stream(d).get()));
    RMM_CUDA_TRY(cudaStreamSynchronize(stream(d).get()));
  }
  /// True when the first `n` bytes at `p` hold write_pattern's bytes.
  bool holds_pattern(void const* p, std::size_t n, int d)
  {
    std::vector<std::uint8_t> host(n);
    RMM_CUDA_TRY(cudaMemcpyAsync(host.data(), p, n, cudaMemcpyDefault, stream(d).get()));
    RMM_CUDA_TRY(cudaStreamSynchronize(stream(d).get()));
    for (std::size_t i = 0; i < n; ++i) {
      if (host[i] != static_cast<std::uint8_t>(i)) { return false; }
    }
    return true;
  }

  int device_at_start_{0};
  std::optional<device_checking_resource> resources_[2];
  std::optional<rmm::cuda_stream> streams_[2];
  std::optional<rmm::mr::detail::any_device_resource> previous_[2];
};

// The crash of the report: made on one device, resized and shrunk with the other current.
TEST_F(MultiGpuContainers, DeviceBufferResizeThenShrinkToFit)
{
  for (int made_on = 0; made_on < 2; ++made_on) {
    int const other = 1 - made_on;
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    rmm::device_buffer buf(1000, stream(made_on), mr(made_on));
    write_pattern(buf.data(), 1000, made_on);

    RMM_CUDA_TRY(cudaSetDevice(other));
    buf.resize(5000, stream(made_on));  // grows: a new allocation
    EXPECT_EQ(current_device(), other) << "resize left its device current";
    EXPECT_EQ(device_of(buf.data()), made_on);
    buf.resize(700, stream(made_on));
    buf.shrink_to_fit(stream(made_on));
    EXPECT_EQ(current_device(), other) << "shrink_to_fit left its device current";
    EXPECT_EQ(buf.size(), 700u);
    EXPECT_EQ(buf.capacity(), 700u);
    EXPECT_EQ(device_of(buf.data()), made_on);
    EXPECT_TRUE(holds_pattern(buf.data(), 700, made_on));

    buf.resize(900, stream(made_on));  // grows again after the swap of shrink_to_fit
    EXPECT_EQ(device_of(buf.data()), made_on);
    EXPECT_TRUE(holds_pattern(buf.data(), 700, made_on));
  }  // each buffer is destroyed with the other device current
  EXPECT_EQ(mr(0).s->allocations.load(), 4);
  EXPECT_EQ(mr(1).s->allocations.load(), 4);
}

TEST_F(MultiGpuContainers, DeviceBufferReserveAndDestroy)
{
  for (int made_on = 0; made_on < 2; ++made_on) {
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    rmm::device_buffer buf(256, stream(made_on), mr(made_on));
    write_pattern(buf.data(), 256, made_on);
    RMM_CUDA_TRY(cudaSetDevice(1 - made_on));
    buf.reserve(4096, stream(made_on));
    EXPECT_EQ(buf.size(), 256u);
    EXPECT_EQ(buf.capacity(), 4096u);
    EXPECT_EQ(device_of(buf.data()), made_on);
    EXPECT_TRUE(holds_pattern(buf.data(), 256, made_on));
    buf.reserve(100, stream(made_on));  // nothing to do
    EXPECT_EQ(buf.capacity(), 4096u);
  }
  EXPECT_EQ(current_device(), 0);
}

// A default-constructed buffer records the device current then, and takes that device's resource.
TEST_F(MultiGpuContainers, DefaultConstructedBufferGrowsOnItsDevice)
{
  for (int made_on = 0; made_on < 2; ++made_on) {
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    rmm::device_buffer buf;
    RMM_CUDA_TRY(cudaSetDevice(1 - made_on));
    buf.resize(512, stream(made_on));
    EXPECT_EQ(device_of(buf.data()), made_on);
    EXPECT_EQ(mr(made_on).s->allocations.load(), 1);
  }
}

// The copy is a new buffer of the device current at the copy (as in RMM), with that device's
// resource; the source is untouched.
TEST_F(MultiGpuContainers, DeviceBufferCopyConstructOnTheOtherDevice)
{
  for (int made_on = 0; made_on < 2; ++made_on) {
    int const other = 1 - made_on;
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    rmm::device_buffer buf(3000, stream(made_on), mr(made_on));
    write_pattern(buf.data(), 3000, made_on);
    RMM_CUDA_TRY(cudaStreamSynchronize(stream(made_on).get()));
    RMM_CUDA_TRY(cudaSetDevice(other));
    std::optional<rmm::device_buffer> copy;
    copy.emplace(buf, stream(other));  // the current device's resource by default
    EXPECT_EQ(device_of(copy->data()), other);
    EXPECT_TRUE(holds_pattern(copy->data(), 3000, other));
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    copy->resize(6000, stream(other));  // the copy's device is `other`
    EXPECT_EQ(device_of(copy->data()), other);
    copy.reset();
    EXPECT_EQ(current_device(), made_on);
  }
}

TEST_F(MultiGpuContainers, DeviceBufferMoveAssignFromTheOtherDevice)
{
  for (int made_on = 0; made_on < 2; ++made_on) {
    int const other = 1 - made_on;
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    rmm::device_buffer a(1000, stream(made_on), mr(made_on));
    RMM_CUDA_TRY(cudaSetDevice(other));
    rmm::device_buffer b(2000, stream(other), mr(other));
    write_pattern(b.data(), 2000, other);
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    a = std::move(b);  // frees a's memory with `made_on` current, takes b's device
    EXPECT_EQ(device_of(a.data()), other);
    EXPECT_EQ(b.data(), nullptr);
    a.resize(8000, stream(other));  // with `made_on` current: allocates on `other`
    EXPECT_EQ(device_of(a.data()), other);
    EXPECT_TRUE(holds_pattern(a.data(), 2000, other));
    EXPECT_EQ(current_device(), made_on);
  }
}

TEST_F(MultiGpuContainers, DeviceBufferMoveConstructAndSetStream)
{
  for (int made_on = 0; made_on < 2; ++made_on) {
    int const other = 1 - made_on;
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    rmm::cuda_stream second;  // another stream of the same device
    std::optional<rmm::device_buffer> moved;
    {
      rmm::device_buffer a(1024, stream(made_on), mr(made_on));
      write_pattern(a.data(), 1024, made_on);  // the resize below copies these bytes
      RMM_CUDA_TRY(cudaSetDevice(other));
      moved.emplace(std::move(a));
    }  // the moved-from `a` is destroyed with `other` current: nothing to free
    moved->set_stream(second);
    moved->resize(4096, second);
    EXPECT_EQ(device_of(moved->data()), made_on);
    second.synchronize();
    EXPECT_TRUE(holds_pattern(moved->data(), 1024, made_on));
    moved.reset();  // freed on `second`, with `made_on` current
    EXPECT_EQ(current_device(), other);
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    second.synchronize();
  }
}

TEST_F(MultiGpuContainers, DeviceUvectorMembers)
{
  for (int made_on = 0; made_on < 2; ++made_on) {
    int const other = 1 - made_on;
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    rmm::device_uvector<std::int32_t> v(100, stream(made_on), mr(made_on));
    for (int i = 0; i < 100; ++i) {
      v.set_element(i, i, stream(made_on));
    }
    RMM_CUDA_TRY(cudaSetDevice(other));
    v.reserve(400, stream(made_on));
    EXPECT_EQ(device_of(v.data()), made_on);
    v.resize(1000, stream(made_on));
    EXPECT_EQ(device_of(v.data()), made_on);
    v.resize(50, stream(made_on));
    v.shrink_to_fit(stream(made_on));
    EXPECT_EQ(v.capacity(), 50u);
    EXPECT_EQ(device_of(v.data()), made_on);
    EXPECT_EQ(v.element(49, stream(made_on)), 49);
    EXPECT_EQ(current_device(), other);

    // A copy made with `other` current is `other`'s; the two then swap by move assignment.
    rmm::device_uvector<std::int32_t> copy(v, stream(other));
    EXPECT_EQ(device_of(copy.data()), other);
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    std::swap(v, copy);
    v.resize(200, stream(other));
    EXPECT_EQ(device_of(v.data()), other);
    copy.resize(200, stream(made_on));
    EXPECT_EQ(device_of(copy.data()), made_on);

    // release() hands the memory, with its device, to a device_buffer; the resize copies all of
    // it, so the 150 elements the resize above added uninitialised are written first.
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    RMM_CUDA_TRY(cudaMemsetAsync(copy.data() + 50, 0, 150 * sizeof(std::int32_t), stream(made_on).get()));
    RMM_CUDA_TRY(cudaSetDevice(other));
    rmm::device_buffer released = copy.release();
    released.resize(4096, stream(made_on));
    EXPECT_EQ(device_of(released.data()), made_on);
  }
  EXPECT_EQ(current_device(), 0);
}

TEST_F(MultiGpuContainers, DeviceScalarMembers)
{
  for (int made_on = 0; made_on < 2; ++made_on) {
    int const other = 1 - made_on;
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    std::int64_t const initial = 42;
    std::int64_t const seven   = 7;
    std::optional<rmm::device_scalar<std::int64_t>> s;
    s.emplace(initial, stream(made_on), mr(made_on));
    RMM_CUDA_TRY(cudaStreamSynchronize(stream(made_on).get()));
    RMM_CUDA_TRY(cudaSetDevice(other));
    rmm::device_scalar<std::int64_t> copy(*s, stream(other));
    EXPECT_EQ(device_of(copy.data()), other);
    EXPECT_EQ(copy.value(stream(other)), 42);
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    rmm::device_scalar<std::int64_t> target(seven, stream(made_on));
    target = std::move(copy);  // frees target's memory on `made_on`, takes `other`'s
    EXPECT_EQ(device_of(target.data()), other);
    RMM_CUDA_TRY(cudaSetDevice(other));
    s.reset();  // made on `made_on`, destroyed with `other` current
    EXPECT_EQ(current_device(), other);
  }
}

TEST_F(MultiGpuContainers, ThrustAllocatorAndDeviceVector)
{
  for (int made_on = 0; made_on < 2; ++made_on) {
    int const other = 1 - made_on;
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    rmm::mr::thrust_allocator<int> alloc(stream(made_on));  // the current device's resource
    std::optional<rmm::device_vector<int>> v;
    v.emplace(1000, 0, alloc);
    thrust::sequence(rmm::exec_policy(stream(made_on)), v->begin(), v->end());

    RMM_CUDA_TRY(cudaSetDevice(other));
    auto p = alloc.allocate(64);
    EXPECT_EQ(device_of(thrust::raw_pointer_cast(p)), made_on);
    alloc.deallocate(p, 64);
    rmm::mr::thrust_allocator<char> rebound(alloc);  // keeps the device
    auto q = rebound.allocate(64);
    EXPECT_EQ(device_of(thrust::raw_pointer_cast(q)), made_on);
    rebound.deallocate(q, 64);

    // (Growing the vector here would also run Thrust's copy kernel on the current device: not
    // the allocator's business, and as in RMM the caller's to avoid.)
    v.reset();  // freed through the allocator, with `made_on` made current for it
    EXPECT_EQ(current_device(), other);
  }
}

TEST_F(MultiGpuContainers, ExecPolicyAllocatorKeepsItsDevice)
{
  for (int made_on = 0; made_on < 2; ++made_on) {
    RMM_CUDA_TRY(cudaSetDevice(made_on));
    auto policy = rmm::exec_policy(stream(made_on));
    rmm::device_uvector<int> v(1 << 16, stream(made_on));
    thrust::sequence(policy, v.begin(), v.end(), 1 << 16, -1);
    thrust::sort(policy, v.begin(), v.end());  // scratch memory from the checking resource
    EXPECT_EQ(v.element(0, stream(made_on)), 1);

    RMM_CUDA_TRY(cudaSetDevice(1 - made_on));
    auto& alloc = policy.get_allocator();
    auto p      = alloc.allocate(4096);
    EXPECT_EQ(device_of(thrust::raw_pointer_cast(p)), made_on);
    alloc.deallocate(p, 4096);
  }
}

TEST_F(MultiGpuContainers, CudaSetDeviceRaiiSwitchesAndRestores)
{
  RMM_CUDA_TRY(cudaSetDevice(1));
  {
    rmm::cuda_set_device_raii dev{rmm::cuda_device_id{0}};
    EXPECT_EQ(current_device(), 0);
    {
      rmm::cuda_set_device_raii same{rmm::cuda_device_id{0}};
      EXPECT_EQ(current_device(), 0);
      rmm::cuda_set_device_raii none{rmm::cuda_device_id{-1}};  // a moved-from buffer's device
      EXPECT_EQ(current_device(), 0);
    }
    EXPECT_EQ(current_device(), 0);
  }
  EXPECT_EQ(current_device(), 1);
}

}  // namespace

namespace {

// One GPU is enough: what a move leaves behind, as RMM 26.10 leaves it (empty, alignment 1, no
// device), and a moved-from buffer grown again records the device current then.
TEST(MultiGpuMovedFrom, EmptyWithAlignmentOneAndNoDevice)
{
  RMM_SKIP_WITHOUT_GPU();
  auto const s = rmm::test::default_stream();
  rmm::device_buffer a(1000, 128, s);  // the cuda resource takes alignments up to 256, as RMM's
  rmm::device_buffer b{std::move(a)};
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.capacity(), 0u);
  EXPECT_EQ(a.alignment(), 1u);
  EXPECT_EQ(b.alignment(), 128u);

  rmm::device_buffer c(10, s);
  c = std::move(b);
  EXPECT_EQ(b.alignment(), 1u);
  EXPECT_EQ(c.alignment(), 128u);
  EXPECT_EQ(c.size(), 1000u);
  c.resize(4000, s);  // reallocates: the alignment survives the internal move
  EXPECT_EQ(c.alignment(), 128u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(c.data()) % 128, 0u);
  RMM_CUDA_TRY(cudaStreamSynchronize(s.get()));
}

}  // namespace
