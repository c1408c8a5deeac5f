// A program that ends with memory resources still alive, run by process_exit_test.cu: pools with
// live blocks in a namespace-scope static (destroyed last, after the CUDA runtime's own exit
// handler), in a function-local static (destroyed first), and in the per-device table (one set by
// type, which Rust code sees too, and one held only by the C++ table), plus a static stream, with
// kernels still running. It must exit with status 0, neither crashing nor hanging.
//
//   rmm_exit_child host|gpu|gpu-cudart-first exit|return
//
// host: the pools take host memory from operator new (no GPU needed). gpu: device memory.
// gpu-cudart-first: the CUDA runtime makes the context before any Rust code runs. exit: ends with
// std::exit(0) from a nested call (no unwinding); return: returns from main.

#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>

// In a named namespace: nvcc warns (#177) about members of a class in an anonymous namespace
// that only the type-erased upstream calls.
namespace rmm_exit_child {

/// Host memory declared device accessible: stands in for device memory where nothing touches it.
struct host_upstream {
  void* allocate(cuda::stream_ref, std::size_t bytes, std::size_t)
  {
    return ::operator new(bytes, std::align_val_t{256});
  }
  void deallocate(cuda::stream_ref, void* p, std::size_t, std::size_t) noexcept
  {
    ::operator delete(p, std::align_val_t{256});
  }
  void* allocate_sync(std::size_t bytes, std::size_t alignment)
  {
    return allocate(cuda::stream_ref{cudaStream_t{nullptr}}, bytes, alignment);
  }
  void deallocate_sync(void* p, std::size_t bytes, std::size_t alignment) noexcept
  {
    deallocate(cuda::stream_ref{cudaStream_t{nullptr}}, p, bytes, alignment);
  }
  bool operator==(host_upstream const&) const noexcept { return true; }
  bool operator!=(host_upstream const&) const noexcept { return false; }
  friend void get_property(host_upstream const&, cuda::mr::device_accessible) noexcept {}
};

}  // namespace rmm_exit_child

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;


// Constructed (empty) before main, so destroyed after everything main sets up.
std::optional<rmm::mr::pool_memory_resource> early_pool;
std::optional<rmm::mr::statistics_resource_adaptor> early_stats;
std::optional<rmm::cuda_stream> early_stream;

/// Spins for `cycles` clock ticks, then writes the block: still running when the process ends.
__global__ void busy_write(unsigned char* p, std::size_t n, long long cycles)
{
  long long const start = clock64();
  while (clock64() - start < cycles) {}
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    p[i] = 0x5A;
  }
}

template <class Upstream>
rmm::mr::pool_memory_resource& late_pool(Upstream const& upstream)
{
  static rmm::mr::pool_memory_resource pool{upstream, 0};  // made now: destroyed early in exit
  return pool;
}

template <class Upstream>
void set_up(Upstream const& upstream, bool gpu, cuda::stream_ref s1, cuda::stream_ref s2)
{
  early_pool.emplace(upstream, gpu ? 8 * MiB : 0);
  early_stats.emplace(*early_pool);
  // A block freed on s1 and wanted by s2, so the pool orders the two streams.
  void* a = early_stats->allocate(s1, 3 * MiB);
  early_stats->deallocate(s1, a, 3 * MiB);
  void* b = early_stats->allocate(s2, 6 * MiB);
  void* c = early_stats->allocate(s1, MiB);
  void* d = late_pool(upstream).allocate(s2, 2 * MiB);

  // Set by type: the Rust per-device table holds it too.
  rmm::mr::set_per_device_resource(rmm::cuda_device_id{0}, *early_stats);
  // Held only by the C++ table, which drops the last reference during exit.
  rmm::mr::set_per_device_resource(
    rmm::cuda_device_id{7},
    rmm::mr::detail::any_device_resource{rmm::mr::pool_memory_resource{upstream, 0}});
  void* e = rmm::mr::get_per_device_resource_ref(rmm::cuda_device_id{7}).allocate(s1, 4 * MiB, 256);

  if (gpu) {
    long long const cycles = 200'000'000;  // about 0.1 s
    busy_write<<<64, 256, 0, s1.get()>>>(static_cast<unsigned char*>(c), MiB, cycles);
    busy_write<<<64, 256, 0, s2.get()>>>(static_cast<unsigned char*>(b), 6 * MiB, cycles);
    busy_write<<<64, 256, 0, s2.get()>>>(static_cast<unsigned char*>(d), 2 * MiB, cycles);
    busy_write<<<64, 256, 0, s1.get()>>>(static_cast<unsigned char*>(e), 4 * MiB, cycles);
    RMM_CUDA_TRY(cudaGetLastError());
  }
  std::printf("exit child: live blocks %p %p %p %p, pool size %zu\n", b, c, d, e, early_pool->pool_size());
}

[[noreturn]] void end_with_exit()
{
  std::printf("exit child: reached the end\n");
  std::fflush(stdout);
  std::exit(0);
}

}  // namespace

int main(int argc, char** argv)
{
  std::string const where{argc == 3 ? argv[1] : ""};
  std::string const how{argc == 3 ? argv[2] : ""};
  if ((where != "host" && where != "gpu" && where != "gpu-cudart-first") ||
      (how != "exit" && how != "return")) {
    std::fprintf(stderr, "usage: %s host|gpu|gpu-cudart-first exit|return\n", argv[0]);
    return 2;
  }
  bool const exit_early = how == "exit";
  bool const gpu        = where != "host";
  if (gpu && rmm::get_num_cuda_devices() == 0) {
    std::fprintf(stderr, "exit child: no CUDA device\n");
    return 3;
  }

  if (where == "gpu-cudart-first") {
    early_stream.emplace();  // the runtime makes the primary context current before Rust runs
    void* p{};
    RMM_CUDA_TRY(cudaMallocAsync(&p, 1024, early_stream->value()));
    RMM_CUDA_TRY(cudaFreeAsync(p, early_stream->value()));
  }
  if (gpu) {
    rmm::cuda_stream s1;
    rmm::cuda_stream s2;
    set_up(rmm::mr::cuda_memory_resource{}, true, s1, s2);
    if (!early_stream) { early_stream.emplace(); }
    if (exit_early) { end_with_exit(); }
  } else {
    // Real handles (the driver may see them where there is one): the legacy and per-thread
    // default streams, which the pool treats as two streams.
    cuda::stream_ref const s1{cudaStream_t{nullptr}};
    cuda::stream_ref const s2{cudaStreamPerThread};
    set_up(rmm_exit_child::host_upstream{}, false, s1, s2);
    if (exit_early) { end_with_exit(); }
  }
  std::printf("exit child: reached the end\n");
  return 0;
}
