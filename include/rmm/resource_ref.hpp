/*
 * rmm-rs: the resource reference aliases of RMM 26 (rmm/resource_ref.hpp).
 *
 * `device_async_resource_ref` is the stream-ordered CCCL reference; every resource in rmm::mr
 * (the Rust-backed ones and any user resource satisfying cuda::mr::resource_with<R,
 * device_accessible>) converts to it.
 */
#pragma once

#include <rmm/error.hpp>

#include <cuda/memory_resource>

#include <type_traits>

namespace rmm {

using device_resource_ref = cuda::mr::synchronous_resource_ref<cuda::mr::device_accessible>;
using device_async_resource_ref = cuda::mr::resource_ref<cuda::mr::device_accessible>;
using host_resource_ref = cuda::mr::synchronous_resource_ref<cuda::mr::host_accessible>;
using host_async_resource_ref = cuda::mr::resource_ref<cuda::mr::host_accessible>;
using host_device_resource_ref =
  cuda::mr::synchronous_resource_ref<cuda::mr::host_accessible, cuda::mr::device_accessible>;
using host_device_async_resource_ref =
  cuda::mr::resource_ref<cuda::mr::host_accessible, cuda::mr::device_accessible>;

/// A `device_async_resource_ref` to `*res`; throws rmm::logic_error when `res` is null.
template <class Resource>
device_async_resource_ref to_device_async_resource_ref_checked(Resource* res)
{
  RMM_EXPECTS(res, "Unexpected null resource pointer.");
  return device_async_resource_ref{*res};
}

static_assert(std::is_constructible_v<device_async_resource_ref, host_device_async_resource_ref>);
static_assert(std::is_constructible_v<device_resource_ref, host_device_resource_ref>);

}  // namespace rmm
