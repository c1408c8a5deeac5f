// Quick start: thrust::sort with its scratch memory from a Rust pool. Exits 1 on a wrong answer.
#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/exec_policy.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <thrust/sequence.h>
#include <thrust/sort.h>

int main()
{
  if (rmm::get_num_cuda_devices() == 0) { return 0; }  // nothing to sort on
  rmm::mr::cuda_memory_resource cuda;
  rmm::mr::pool_memory_resource pool{cuda, rmm::percent_of_free_device_memory(50)};
  rmm::mr::set_current_device_resource(pool);  // containers and exec_policy allocate from it
  rmm::cuda_stream stream;
  rmm::device_uvector<int> v(1 << 24, stream);
  thrust::sequence(rmm::exec_policy(stream), v.rbegin(), v.rend());  // descending
  thrust::sort(rmm::exec_policy(stream), v.begin(), v.end());
  bool const sorted = v.element(0, stream) == 0 && v.back_element(stream) == (1 << 24) - 1;
  rmm::mr::reset_current_device_resource();  // the table lets go of the pool before it goes
  return sorted ? 0 : 1;
}
