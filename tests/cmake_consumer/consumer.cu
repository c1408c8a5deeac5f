// A downstream program of rmm-rs (see CMakeLists.txt): thrust::sort through rmm::exec_policy with
// its scratch memory and the vector's from a pool. Prints "skipped: no CUDA device" and exits 0
// without a GPU; exits non-zero on a wrong answer.

#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/exec_policy.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>

#include <thrust/sequence.h>
#include <thrust/sort.h>

#include <cstdio>
#include <cstdlib>

int main()
{
  if (rmm::get_num_cuda_devices() == 0) {
    std::puts("skipped: no CUDA device");
    return EXIT_SUCCESS;
  }

  rmm::mr::cuda_memory_resource cuda;
  rmm::mr::pool_memory_resource pool{cuda, std::size_t{32} << 20};
  rmm::cuda_stream stream;
  std::size_t const n = 1 << 20;

  rmm::device_uvector<int> v(n, stream, pool);
  thrust::sequence(rmm::exec_policy(stream, pool), v.begin(), v.end(), 0);
  thrust::sort(rmm::exec_policy(stream, pool), v.rbegin(), v.rend());  // descending
  int const first = v.front_element(stream);
  int const last  = v.back_element(stream);
  bool const ok   = first == static_cast<int>(n - 1) && last == 0;
  std::printf("consumer: pool of %zu bytes, first %d, last %d: %s\n", pool.pool_size(), first, last,
              ok ? "OK" : "FAIL");
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
