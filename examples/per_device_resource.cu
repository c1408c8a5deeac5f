// Example: the application sets the per-device resource once; "library" code that never names a
// resource (containers, Thrust policies) picks it up. A tracking adaptor over a Rust pool shows
// that every allocation of the library went through it, and that all were freed.
//
// Exits 0 and prints "skipped: no CUDA device" when there is no GPU; non-zero on a wrong answer.

#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/device_buffer.hpp>
#include <rmm/device_scalar.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/exec_policy.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>

#include <thrust/sequence.h>
#include <thrust/transform_reduce.h>
#include <thrust/functional.h>

#include <cstdio>
#include <cstdlib>

namespace library {

struct square {
  __host__ __device__ long long operator()(int x) const { return static_cast<long long>(x) * x; }
};

/// Library code: allocates only through RMM's defaults. Returns sum of squares of 0..n-1 and
/// reports how many bytes it saw outstanding through `probe` while its buffers were alive.
long long sum_of_squares(int n, cuda::stream_ref stream, std::size_t (*probe)())
{
  rmm::device_uvector<int> v(n, stream);
  thrust::sequence(rmm::exec_policy(stream), v.begin(), v.end());
  rmm::device_buffer scratch(1 << 16, stream);
  rmm::device_scalar<long long> result(stream);
  long long const sum = thrust::transform_reduce(
    rmm::exec_policy(stream), v.begin(), v.end(), square{}, 0LL, thrust::plus<long long>{});
  result.set_value_async(sum, stream);
  if (probe != nullptr && probe() < n * sizeof(int) + (1 << 16)) { return -1; }
  return result.value(stream);
}

}  // namespace library

namespace {
rmm::mr::tracking_resource_adaptor* tracker = nullptr;
std::size_t outstanding() { return tracker->get_allocated_bytes(); }
}  // namespace

int main()
{
  if (rmm::get_num_cuda_devices() == 0) {
    std::puts("skipped: no CUDA device");
    return 0;
  }
  int failures = 0;
  rmm::cuda_stream stream;
  int const n = 100000;
  long long const expected = static_cast<long long>(n - 1) * n * (2LL * n - 1) / 6;

  rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, std::size_t{8} << 20};
  rmm::mr::tracking_resource_adaptor tracking{pool};
  tracker = &tracking;

  // Set once, for the current device ...
  rmm::mr::set_current_device_resource(tracking);
  auto const device = rmm::get_current_cuda_device();
  if (rmm::mr::get_per_device_resource_ref(device) != rmm::device_async_resource_ref{tracking}) {
    std::puts("FAIL: get_per_device_resource_ref does not return the resource just set");
    ++failures;
  }

  // ... and the library uses it without being told.
  long long const got = library::sum_of_squares(n, stream, &outstanding);
  if (got != expected) {
    std::printf("FAIL: library result %lld, expected %lld (-1: allocations bypassed the resource)\n",
                got, expected);
    ++failures;
  }
  stream.synchronize();
  if (tracking.get_allocated_bytes() != 0) {
    std::printf("FAIL: %zu bytes still outstanding:\n%s", tracking.get_allocated_bytes(),
                tracking.get_outstanding_allocations_str().c_str());
    ++failures;
  }
  std::printf("pool size after the library call: %zu bytes\n", pool.pool_size());

  // Reset: back to the initial cuda_memory_resource; the library still works.
  rmm::mr::reset_current_device_resource();
  if (rmm::mr::get_current_device_resource_ref() == rmm::device_async_resource_ref{tracking}) {
    std::puts("FAIL: reset_current_device_resource left the tracking adaptor in place");
    ++failures;
  }
  if (library::sum_of_squares(n, stream, nullptr) != expected) {
    std::puts("FAIL: library result after reset");
    ++failures;
  }

  if (failures == 0) { std::puts("per_device_resource: OK"); }
  return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
