// Example: several streams (and threads) sharing one Rust pool. Each thread repeatedly allocates
// vectors on its own stream, fills them with a kernel, sorts and reduces them with Thrust on that
// stream, and frees them; memory freed on one stream is reused by others (the pool orders the
// streams with events). A statistics adaptor checks that everything was given back.
//
// Exits 0 and prints "skipped: no CUDA device" when there is no GPU; non-zero on a wrong answer.

#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream_pool.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/error.hpp>
#include <rmm/exec_policy.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>

#include <thrust/reduce.h>
#include <thrust/sort.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>
#include <vector>

// v[i] = (i * 7919 + seed) % n: a permutation-ish pattern whose sum is known.
__global__ void fill(int n, int seed, int* v)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { v[i] = static_cast<int>((static_cast<long long>(i) * 7919 + seed) % n); }
}

int main()
{
  if (rmm::get_num_cuda_devices() == 0) {
    std::puts("skipped: no CUDA device");
    return 0;
  }

  rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, std::size_t{16} << 20};
  // With RMM_LOG_FILE set, every allocation and free of the pool is also logged there (a CSV that
  // rmm_replay and benches/cpp/replay.cu replay).
  std::optional<rmm::mr::logging_resource_adaptor> logged;
  if (std::getenv("RMM_LOG_FILE") != nullptr) { logged.emplace(pool); }
  rmm::mr::statistics_resource_adaptor stats = logged ? rmm::mr::statistics_resource_adaptor{*logged}
                                                      : rmm::mr::statistics_resource_adaptor{pool};
  rmm::mr::set_current_device_resource(stats);

  int const num_threads = 4;
  int const iterations  = 50;
  rmm::cuda_stream_pool streams{static_cast<std::size_t>(num_threads), rmm::cuda_stream::flags::non_blocking};
  std::atomic<int> failures{0};
  int const device = rmm::get_current_cuda_device().value();

  auto worker = [&](int t) {
    try {
      RMM_CUDA_TRY(cudaSetDevice(device));
      cuda::stream_ref stream = streams.get_stream(static_cast<std::size_t>(t));
      for (int it = 0; it < iterations; ++it) {
        int const n = 1000 + ((t * 131 + it * 977) % 200000);
        rmm::device_uvector<int> v(n, stream);
        fill<<<(n + 255) / 256, 256, 0, stream.get()>>>(n, t + it, v.data());
        RMM_CUDA_TRY(cudaGetLastError());
        thrust::sort(rmm::exec_policy(stream), v.begin(), v.end());
        long long const sum = thrust::reduce(rmm::exec_policy(stream), v.begin(), v.end(), 0LL);
        // 7919 is prime and does not divide these n, so the values are a permutation of 0..n-1
        // unless n shares a factor with it; compare against a host computation instead.
        long long expected = 0;
        for (int i = 0; i < n; ++i) { expected += (static_cast<long long>(i) * 7919 + t + it) % n; }
        int const first = v.front_element(stream);
        int const last  = v.back_element(stream);
        if (sum != expected || first > last) {
          std::printf("FAIL: thread %d iteration %d: sum %lld expected %lld, first %d last %d\n",
                      t, it, sum, expected, first, last);
          ++failures;
        }
      }
      stream.sync();
    } catch (std::exception const& e) {
      std::printf("FAIL: thread %d threw: %s\n", t, e.what());
      ++failures;
    }
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < num_threads; ++t) { threads.emplace_back(worker, t); }
  for (auto& th : threads) { th.join(); }

  auto const bytes  = stats.get_bytes_counter();
  auto const allocs = stats.get_allocations_counter();
  std::printf("pool size %zu bytes; allocations total %lld, peak outstanding bytes %lld\n",
              pool.pool_size(), static_cast<long long>(allocs.total), static_cast<long long>(bytes.peak));
  if (bytes.value != 0 || allocs.value != 0) {
    std::printf("FAIL: %lld bytes in %lld allocations still outstanding\n",
                static_cast<long long>(bytes.value), static_cast<long long>(allocs.value));
    ++failures;
  }
  if (allocs.total < num_threads * iterations) {
    std::puts("FAIL: the statistics adaptor missed allocations");
    ++failures;
  }

  rmm::mr::reset_current_device_resource();
  if (failures == 0) { std::puts("multi_stream: OK"); }
  return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
