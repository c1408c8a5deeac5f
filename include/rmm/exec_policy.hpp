/*
 * rmm-rs: Thrust execution policies whose temporary memory comes from an RMM resource
 * (RMM's rmm/exec_policy.hpp):
 *
 *   thrust::sort(rmm::exec_policy(stream), v.begin(), v.end());
 *
 * runs on `stream` and takes its scratch memory from the current device resource (or the resource
 * given as second argument).
 */
#pragma once

#include <rmm/detail/thrust_namespace.h>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/thrust_allocator_adaptor.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/version.h>

#include <utility>

namespace rmm {

/// The Thrust policy type exec_policy derives from.
using thrust_exec_policy_t =
  thrust::detail::execute_with_allocator<mr::thrust_allocator<char>,
                                         thrust::cuda_cub::execute_on_stream_base>;

/// Runs Thrust algorithms on a stream (synchronizing where Thrust must) with scratch memory from
/// an RMM resource.
class exec_policy : public thrust_exec_policy_t {
 public:
  explicit exec_policy(
    cuda::stream_ref stream = cuda::stream_ref{cudaStream_t{nullptr}},
    cuda::mr::any_resource<cuda::mr::device_accessible> mr = mr::get_current_device_resource_ref())
    : thrust_exec_policy_t(
        thrust::cuda::par(mr::thrust_allocator<char>(stream, std::move(mr))).on(stream.get()))
  {
  }
};

/// The Thrust policy type exec_policy_nosync derives from.
using thrust_exec_policy_nosync_t =
  thrust::detail::execute_with_allocator<mr::thrust_allocator<char>,
                                         thrust::cuda_cub::execute_on_stream_nosync_base>;

/// Like exec_policy, but lets Thrust skip the stream synchronizations it can avoid.
class exec_policy_nosync : public thrust_exec_policy_nosync_t {
 public:
  explicit exec_policy_nosync(
    cuda::stream_ref stream = cuda::stream_ref{cudaStream_t{nullptr}},
    cuda::mr::any_resource<cuda::mr::device_accessible> mr = mr::get_current_device_resource_ref())
    : thrust_exec_policy_nosync_t(
        thrust::cuda::par_nosync(mr::thrust_allocator<char>(stream, std::move(mr))).on(stream.get()))
  {
  }
};

}  // namespace rmm
