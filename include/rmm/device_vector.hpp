/*
 * rmm-rs: a thrust::device_vector whose memory comes from the current device resource.
 */
#pragma once

#include <rmm/detail/thrust_namespace.h>
#include <rmm/mr/thrust_allocator_adaptor.hpp>

#include <thrust/device_vector.h>

namespace rmm {

/// thrust::device_vector with rmm::mr::thrust_allocator (the current device resource by default).
template <typename T>
using device_vector = thrust::device_vector<T, rmm::mr::thrust_allocator<T>>;

}  // namespace rmm
