// Shared helpers of the C++ tests.
#pragma once

#include <rmm/cuda_device.hpp>
#include <rmm/error.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <typeinfo>

/// Skips the current test on a machine without a CUDA device.
#define RMM_SKIP_WITHOUT_GPU()                                                      \
  do {                                                                              \
    if (rmm::get_num_cuda_devices() == 0) { GTEST_SKIP() << "skipped: no CUDA device"; } \
  } while (0)

/// One mebibyte, the unit most tests size their requests in (one definition for every test
/// source: the Makefile and CMake compile several test sources as one translation unit).
inline constexpr std::size_t MiB = std::size_t{1} << 20;

namespace rmm::test {

/// A C++ resource that is not ours: host memory from operator new, declared device accessible so
/// that it can stand in for device memory where nothing touches the memory (so these tests run
/// without a GPU). Copies share their counters, like a real stateful resource's handles.
struct new_delete_resource {
  struct state {
    std::atomic<long> allocations{0};
    std::atomic<long> outstanding{0};
    std::atomic<long> fail_next{0};  ///< allocations left to refuse with std::bad_alloc
  };
  std::shared_ptr<state> s = std::make_shared<state>();

  void* allocate(cuda::stream_ref, std::size_t bytes, std::size_t alignment)
  {
    if (s->fail_next > 0) {
      --s->fail_next;
      throw std::bad_alloc{};
    }
    ++s->allocations;
    ++s->outstanding;
    return ::operator new(bytes, std::align_val_t{alignment < 256 ? 256 : alignment});
  }
  void deallocate(cuda::stream_ref, void* p, std::size_t, std::size_t alignment) noexcept
  {
    --s->outstanding;
    ::operator delete(p, std::align_val_t{alignment < 256 ? 256 : alignment});
  }
  void* allocate_sync(std::size_t bytes, std::size_t alignment)
  {
    return allocate(cuda::stream_ref{cudaStream_t{nullptr}}, bytes, alignment);
  }
  void deallocate_sync(void* p, std::size_t bytes, std::size_t alignment) noexcept
  {
    deallocate(cuda::stream_ref{cudaStream_t{nullptr}}, p, bytes, alignment);
  }
  bool operator==(new_delete_resource const& o) const noexcept { return s == o.s; }
  bool operator!=(new_delete_resource const& o) const noexcept { return s != o.s; }
  friend void get_property(new_delete_resource const&, cuda::mr::device_accessible) noexcept {}
};

static_assert(cuda::mr::resource_with<new_delete_resource, cuda::mr::device_accessible>);

/// The legacy default stream.
inline cuda::stream_ref default_stream() { return cuda::stream_ref{cudaStream_t{nullptr}}; }

/// `f()` throws exactly `E` (not a type derived from it) and `what()` contains `part`.
template <class E, class F>
void expect_throws_exactly(F&& f, std::string const& part)
{
  try {
    f();
    ADD_FAILURE() << "expected " << typeid(E).name() << " containing \"" << part << "\"";
  } catch (std::exception const& e) {
    EXPECT_EQ(typeid(e), typeid(E)) << e.what();
    EXPECT_NE(std::string{e.what()}.find(part), std::string::npos) << e.what();
  }
}

/// One allocation of 1 MiB and its free succeed on the device: the resource kept working.
template <class R>
void device_keeps_working(R& mr)
{
  constexpr std::size_t MiB = std::size_t{1} << 20;
  void* p                   = mr.allocate(default_stream(), MiB);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u);
  mr.deallocate(default_stream(), p, MiB);
  RMM_CUDA_TRY(cudaDeviceSynchronize());
}

}  // namespace rmm::test
