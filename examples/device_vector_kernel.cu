// Example: rmm::device_vector and rmm::device_uvector passed to user __global__ kernels, with
// memory from the initial per-device resource (the Rust cuda_memory_resource) and from an
// explicitly given Rust pool. Results come back through an rmm::device_scalar.
//
// Exits 0 and prints "skipped: no CUDA device" when there is no GPU; non-zero on a wrong answer.

#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/device_scalar.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/device_vector.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>

#include <thrust/host_vector.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

// y[i] = a * x[i] + y[i]
__global__ void saxpy(int n, float a, float const* x, float* y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { y[i] = a * x[i] + y[i]; }
}

// Fills v[i] = i * i.
__global__ void squares(int n, long long* v)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { v[i] = static_cast<long long>(i) * i; }
}

// *sum += v[i] for all i.
__global__ void sum_into(int n, long long const* v, unsigned long long* sum)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { atomicAdd(sum, static_cast<unsigned long long>(v[i])); }
}

int main()
{
  if (rmm::get_num_cuda_devices() == 0) {
    std::puts("skipped: no CUDA device");
    return 0;
  }
  int failures = 0;
  rmm::cuda_stream stream;
  int const n        = 1 << 20;
  int const threads  = 256;
  int const blocks   = (n + threads - 1) / threads;

  // device_uvector from the current device resource (initially cuda_memory_resource).
  {
    std::vector<float> hx(n), hy(n);
    for (int i = 0; i < n; ++i) {
      hx[i] = static_cast<float>(i);
      hy[i] = 1.0f;
    }
    rmm::device_uvector<float> x(n, stream);
    rmm::device_uvector<float> y(n, stream);
    RMM_CUDA_TRY(cudaMemcpyAsync(x.data(), hx.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream.value()));
    RMM_CUDA_TRY(cudaMemcpyAsync(y.data(), hy.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream.value()));
    saxpy<<<blocks, threads, 0, stream.value()>>>(n, 2.0f, x.data(), y.data());
    RMM_CUDA_TRY(cudaGetLastError());
    RMM_CUDA_TRY(cudaMemcpyAsync(hy.data(), y.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream.value()));
    stream.synchronize();
    for (int i = 0; i < n; ++i) {
      if (hy[i] != 2.0f * i + 1.0f) {
        std::printf("FAIL: saxpy y[%d] = %f, expected %f\n", i, hy[i], 2.0f * i + 1.0f);
        ++failures;
        break;
      }
    }
    // Element access from the host.
    if (y.element(10, stream) != 21.0f) {
      std::puts("FAIL: device_uvector::element");
      ++failures;
    }
    y.set_element(10, 7.0f, stream);
    if (y.front_element(stream) != 1.0f || y.element(10, stream) != 7.0f) {
      std::puts("FAIL: device_uvector::set_element");
      ++failures;
    }
  }

  // device_vector (Thrust, rmm::mr::thrust_allocator) and device_scalar from an explicit pool.
  {
    rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, std::size_t{32} << 20};
    rmm::device_vector<long long> v(n, 0, rmm::mr::thrust_allocator<long long>(stream, pool));
    long long* raw = thrust::raw_pointer_cast(v.data());
    squares<<<blocks, threads, 0, stream.value()>>>(n, raw);
    RMM_CUDA_TRY(cudaGetLastError());
    rmm::device_scalar<unsigned long long> sum(0ULL, stream, pool);
    sum_into<<<blocks, threads, 0, stream.value()>>>(n, raw, sum.data());
    RMM_CUDA_TRY(cudaGetLastError());
    unsigned long long const expected = static_cast<unsigned long long>(n - 1) * n * (2ULL * n - 1) / 6;
    unsigned long long const got      = sum.value(stream);
    if (got != expected) {
      std::printf("FAIL: sum of squares %llu, expected %llu\n", got, expected);
      ++failures;
    }
    stream.synchronize();
    thrust::host_vector<long long> h = v;
    if (h[n - 1] != static_cast<long long>(n - 1) * (n - 1)) {
      std::puts("FAIL: device_vector contents");
      ++failures;
    }
    std::printf("pool size after device_vector + device_scalar: %zu bytes\n", pool.pool_size());
  }

  if (failures == 0) { std::puts("device_vector_kernel: OK"); }
  return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
