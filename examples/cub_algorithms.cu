// Example: CUB device algorithms over a Rust pool. CUB's two-phase calls (ask for the scratch size
// with a null pointer, allocate it, run) take their scratch in an rmm::device_buffer from the
// current device resource; CCCL 3.5's single-call forms take it from a device_async_resource_ref
// carried in an execution environment next to the stream. A statistics adaptor over the pool
// counts every scratch allocation; each result is checked against a host computation.
//
// Exits 0 and prints "skipped: no CUDA device" when there is no GPU; non-zero on a wrong answer.

#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/device_buffer.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/resource_ref.hpp>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <cub/device/device_select.cuh>
#include <cuda/memory_resource>
#include <cuda/std/execution>
#include <cuda/stream_ref>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

namespace {

/// DeviceSelect's predicate: keeps the even values.
struct is_even {
  __host__ __device__ bool operator()(int x) const { return x % 2 == 0; }
};

/// Host data into a device_uvector (memory: the current device resource).
rmm::device_uvector<int> to_device(std::vector<int> const& host, cuda::stream_ref stream)
{
  rmm::device_uvector<int> d(host.size(), stream);
  RMM_CUDA_TRY(cudaMemcpyAsync(
    d.data(), host.data(), host.size() * sizeof(int), cudaMemcpyHostToDevice, stream.get()));
  return d;
}

/// The first `n` elements of `d` back on the host (waits for the stream).
std::vector<int> to_host(int const* d, std::size_t n, cuda::stream_ref stream)
{
  std::vector<int> host(n);
  RMM_CUDA_TRY(cudaMemcpyAsync(host.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost, stream.get()));
  stream.sync();
  return host;
}

int failures = 0;

/// Counts a wrong answer, and a call whose scratch did not come from the counted resource (the
/// statistics adaptor's allocations total did not move from `before`).
void check(bool ok, char const* what, rmm::mr::statistics_resource_adaptor& stats, long long before)
{
  long long const scratch = static_cast<long long>(stats.get_allocations_counter().total) - before;
  std::printf("%-44s %s, %lld scratch allocation(s)\n", what, ok ? "ok" : "WRONG", scratch);
  if (!ok) { ++failures; }
  if (scratch < 1) {
    std::printf("FAIL: %s took no scratch from the current device resource\n", what);
    ++failures;
  }
}

/// Runs the five algorithms both ways on `stream`; every device allocation comes from the
/// current device resource and is freed before this returns.
void run(cuda::stream_ref stream, rmm::mr::statistics_resource_adaptor& stats)
{
  std::size_t const n = 1 << 20;
  std::mt19937 rng{7};
  std::uniform_int_distribution<int> value{-1000, 1000};
  std::vector<int> host(n);
  for (auto& x : host) { x = value(rng); }
  auto const in = to_device(host, stream);
  rmm::device_uvector<int> out(n, stream);
  int const count = static_cast<int>(n);

  // Host answers.
  int const sum = std::accumulate(host.begin(), host.end(), 0);
  std::vector<int> scan(n);
  std::partial_sum(host.begin(), host.end(), scan.begin());
  std::vector<int> sorted = host;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> evens;
  std::copy_if(host.begin(), host.end(), std::back_inserter(evens), is_even{});
  // Segments of random lengths (some empty) covering the whole input.
  std::vector<int> offsets{0};
  std::uniform_int_distribution<int> length{0, 4000};
  while (offsets.back() < count) { offsets.push_back(std::min(count, offsets.back() + length(rng))); }
  std::vector<int> seg_sorted = host;
  for (std::size_t s = 0; s + 1 < offsets.size(); ++s) {
    std::sort(seg_sorted.begin() + offsets[s], seg_sorted.begin() + offsets[s + 1]);
  }
  auto const d_offsets = to_device(offsets, stream);
  auto const segments = static_cast<std::int64_t>(offsets.size() - 1);
  rmm::device_uvector<int> d_count(1, stream);
  long long before = 0;
  auto const start = [&] { before = static_cast<long long>(stats.get_allocations_counter().total); };

  // Two-phase: the size query with a null pointer, the scratch in a device_buffer, the run.
  {
    start();
    std::size_t bytes = 0;
    RMM_CUDA_TRY(cub::DeviceReduce::Sum(nullptr, bytes, in.data(), out.data(), count, stream.get()));
    rmm::device_buffer scratch(bytes, stream);
    RMM_CUDA_TRY(cub::DeviceReduce::Sum(scratch.data(), bytes, in.data(), out.data(), count, stream.get()));
    check(to_host(out.data(), 1, stream)[0] == sum, "DeviceReduce::Sum (two-phase)", stats, before);
  }
  {
    start();
    std::size_t bytes = 0;
    RMM_CUDA_TRY(cub::DeviceScan::InclusiveSum(nullptr, bytes, in.data(), out.data(), count, stream.get()));
    rmm::device_buffer scratch(bytes, stream);
    RMM_CUDA_TRY(
      cub::DeviceScan::InclusiveSum(scratch.data(), bytes, in.data(), out.data(), count, stream.get()));
    check(to_host(out.data(), n, stream) == scan, "DeviceScan::InclusiveSum (two-phase)", stats, before);
  }
  {
    start();
    std::size_t bytes = 0;
    RMM_CUDA_TRY(cub::DeviceRadixSort::SortKeys(
      nullptr, bytes, in.data(), out.data(), count, 0, 32, stream.get()));
    rmm::device_buffer scratch(bytes, stream);
    RMM_CUDA_TRY(cub::DeviceRadixSort::SortKeys(
      scratch.data(), bytes, in.data(), out.data(), count, 0, 32, stream.get()));
    check(to_host(out.data(), n, stream) == sorted, "DeviceRadixSort::SortKeys (two-phase)", stats, before);
  }
  {
    start();
    std::size_t bytes = 0;
    RMM_CUDA_TRY(cub::DeviceSegmentedSort::SortKeys(nullptr, bytes, in.data(), out.data(), count, segments,
                                                    d_offsets.data(), d_offsets.data() + 1, stream.get()));
    rmm::device_buffer scratch(bytes, stream);
    RMM_CUDA_TRY(cub::DeviceSegmentedSort::SortKeys(scratch.data(), bytes, in.data(), out.data(), count,
                                                    segments, d_offsets.data(), d_offsets.data() + 1,
                                                    stream.get()));
    check(to_host(out.data(), n, stream) == seg_sorted, "DeviceSegmentedSort::SortKeys (two-phase)", stats, before);
  }
  {
    start();
    std::size_t bytes = 0;
    RMM_CUDA_TRY(cub::DeviceSelect::If(
      nullptr, bytes, in.data(), out.data(), d_count.data(), count, is_even{}, stream.get()));
    rmm::device_buffer scratch(bytes, stream);
    RMM_CUDA_TRY(cub::DeviceSelect::If(
      scratch.data(), bytes, in.data(), out.data(), d_count.data(), count, is_even{}, stream.get()));
    auto const selected = static_cast<std::size_t>(to_host(d_count.data(), 1, stream)[0]);
    check(selected == evens.size() && to_host(out.data(), selected, stream) == evens,
          "DeviceSelect::If (two-phase)", stats, before);
  }

  // Single call: the environment carries the stream and the resource the scratch comes from.
  rmm::device_async_resource_ref const mr = rmm::mr::get_current_device_resource_ref();
  using mr_prop = cuda::std::execution::prop<cuda::mr::get_memory_resource_t, rmm::device_async_resource_ref>;
  cuda::std::execution::env<cuda::stream_ref, mr_prop> const env{stream,
                                                                 mr_prop{cuda::mr::get_memory_resource, mr}};
  start();
  RMM_CUDA_TRY(cub::DeviceReduce::Sum(in.data(), out.data(), count, env));
  check(to_host(out.data(), 1, stream)[0] == sum, "DeviceReduce::Sum (environment)", stats, before);
  start();
  RMM_CUDA_TRY(cub::DeviceScan::InclusiveSum(in.data(), out.data(), count, env));
  check(to_host(out.data(), n, stream) == scan, "DeviceScan::InclusiveSum (environment)", stats, before);
  start();
  RMM_CUDA_TRY(cub::DeviceRadixSort::SortKeys(in.data(), out.data(), count, 0, 32, env));
  check(to_host(out.data(), n, stream) == sorted, "DeviceRadixSort::SortKeys (environment)", stats, before);
  start();
  RMM_CUDA_TRY(cub::DeviceSegmentedSort::SortKeys(
    in.data(), out.data(), count, segments, d_offsets.data(), d_offsets.data() + 1, env));
  check(to_host(out.data(), n, stream) == seg_sorted, "DeviceSegmentedSort::SortKeys (environment)", stats, before);
  start();
  RMM_CUDA_TRY(cub::DeviceSelect::If(in.data(), out.data(), d_count.data(), count, is_even{}, env));
  auto const selected = static_cast<std::size_t>(to_host(d_count.data(), 1, stream)[0]);
  check(selected == evens.size() && to_host(out.data(), selected, stream) == evens,
        "DeviceSelect::If (environment)", stats, before);
}

}  // namespace

int main()
{
  if (rmm::get_num_cuda_devices() == 0) {
    std::puts("skipped: no CUDA device");
    return 0;
  }

  rmm::mr::cuda_memory_resource cuda;
  rmm::mr::pool_memory_resource pool{cuda, std::size_t{64} << 20};  // 64 MiB to start
  rmm::mr::statistics_resource_adaptor stats{pool};
  rmm::mr::set_current_device_resource(stats);

  rmm::cuda_stream stream;
  run(stream, stats);
  stream.synchronize();

  auto const bytes = stats.get_bytes_counter();
  auto const allocs = stats.get_allocations_counter();
  std::printf("pool size: %zu bytes\n", pool.pool_size());
  std::printf("bytes:       current %lld, peak %lld, total %lld\n",
              static_cast<long long>(bytes.value), static_cast<long long>(bytes.peak),
              static_cast<long long>(bytes.total));
  std::printf("allocations: current %lld, peak %lld, total %lld\n",
              static_cast<long long>(allocs.value), static_cast<long long>(allocs.peak),
              static_cast<long long>(allocs.total));
  if (bytes.value != 0 || allocs.value != 0) {
    std::puts("FAIL: memory still held after every buffer was freed");
    ++failures;
  }

  rmm::mr::reset_current_device_resource();
  if (failures == 0) { std::puts("cub_algorithms: OK"); }
  return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
