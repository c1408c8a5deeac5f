// Example: a Rust pool as the current device resource; thrust::sort takes its scratch memory from
// it through rmm::exec_policy, the vectors take theirs through the containers' defaults. A
// statistics adaptor between the pool and its users counts everything.
//
// Exits 0 and prints "skipped: no CUDA device" when there is no GPU; non-zero on a wrong answer.

#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/device_vector.hpp>
#include <rmm/exec_policy.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <thrust/host_vector.h>
#include <thrust/sort.h>
#include <thrust/sequence.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <vector>

int main()
{
  if (rmm::get_num_cuda_devices() == 0) {
    std::puts("skipped: no CUDA device");
    return 0;
  }

  rmm::mr::cuda_memory_resource cuda;
  rmm::mr::pool_memory_resource pool{cuda, std::size_t{64} << 20};  // 64 MiB to start
  // With RMM_LOG_FILE set, every allocation and free of the pool is also logged there (a CSV that
  // rmm_replay and benches/cpp/replay.cu replay).
  std::optional<rmm::mr::logging_resource_adaptor> logged;
  if (std::getenv("RMM_LOG_FILE") != nullptr) { logged.emplace(pool); }
  rmm::mr::statistics_resource_adaptor stats = logged ? rmm::mr::statistics_resource_adaptor{*logged}
                                                      : rmm::mr::statistics_resource_adaptor{pool};
  rmm::mr::set_current_device_resource(stats);

  rmm::cuda_stream stream;
  std::size_t const n = 1 << 22;

  // Random keys from the host into a device_uvector (memory: the current resource).
  std::vector<int> host(n);
  std::mt19937 rng{42};
  for (auto& x : host) { x = static_cast<int>(rng()); }
  rmm::device_uvector<int> keys(n, stream);
  RMM_CUDA_TRY(cudaMemcpyAsync(keys.data(), host.data(), n * sizeof(int), cudaMemcpyHostToDevice, stream.value()));

  auto const before = stats.get_allocations_counter().total;
  thrust::sort(rmm::exec_policy(stream), keys.begin(), keys.end());
  auto const scratch_allocations = stats.get_allocations_counter().total - before;
  bool const keys_sorted = thrust::is_sorted(rmm::exec_policy(stream), keys.begin(), keys.end());

  // A device_vector (thrust_allocator over the current resource), sorted descending and back.
  rmm::device_vector<double> values(n);
  thrust::sequence(rmm::exec_policy(stream), values.begin(), values.end(), 0.0);
  thrust::sort(rmm::exec_policy(stream), values.rbegin(), values.rend());  // descending
  thrust::host_vector<double> check = values;
  bool values_ok = true;
  for (std::size_t i = 0; i < n; ++i) {
    if (check[i] != static_cast<double>(n - 1 - i)) {
      values_ok = false;
      break;
    }
  }

  auto const bytes = stats.get_bytes_counter();
  auto const allocs = stats.get_allocations_counter();
  std::printf("pool size: %zu bytes\n", pool.pool_size());
  std::printf("bytes:       current %lld, peak %lld, total %lld\n",
              static_cast<long long>(bytes.value), static_cast<long long>(bytes.peak),
              static_cast<long long>(bytes.total));
  std::printf("allocations: current %lld, peak %lld, total %lld (sort scratch: %lld)\n",
              static_cast<long long>(allocs.value), static_cast<long long>(allocs.peak),
              static_cast<long long>(allocs.total), static_cast<long long>(scratch_allocations));

  int failures = 0;
  if (!keys_sorted) { std::puts("FAIL: device_uvector keys are not sorted"); ++failures; }
  if (!values_ok) { std::puts("FAIL: device_vector values are not in descending order"); ++failures; }
  if (scratch_allocations < 1) {
    std::puts("FAIL: thrust::sort did not take scratch memory from the current device resource");
    ++failures;
  }
  if (bytes.peak < static_cast<long long>(n * sizeof(int))) {
    std::puts("FAIL: the statistics adaptor did not see the vectors' memory");
    ++failures;
  }

  rmm::mr::reset_current_device_resource();
  if (failures == 0) { std::puts("thrust_sort: OK"); }
  return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
