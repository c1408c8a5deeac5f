/*
 * rmm-rs: rmm::prefetch, migrating managed memory to a device.
 */
#pragma once

#include <rmm/cuda_device.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/detail/rust_resource.hpp>

#include <cuda/std/span>
#include <cuda/stream_ref>

#include <cstddef>
#include <cstdint>

namespace rmm {

/**
 * @brief Prefetches `size` bytes at `ptr` to `device` in stream order on `stream`.
 *
 * Only managed memory moves; for other memory this does nothing, as in RMM.
 *
 * @throws rmm::cuda_error if the prefetch fails
 */
inline void prefetch(void const* ptr,
                     std::size_t size,
                     rmm::cuda_device_id device,
                     cuda::stream_ref stream)
{
  mr::detail::check(rmm_rs::prefetch_memory(
    reinterpret_cast<std::uintptr_t>(ptr), size, device.value(), mr::detail::stream_handle(stream)));
}

/**
 * @brief Prefetches the elements of `data` to `device` in stream order on `stream`.
 *
 * @throws rmm::cuda_error if the prefetch fails
 */
template <typename T>
void prefetch(cuda::std::span<T const> data, rmm::cuda_device_id device, cuda::stream_ref stream)
{
  prefetch(data.data(), data.size_bytes(), device, stream);
}

}  // namespace rmm
