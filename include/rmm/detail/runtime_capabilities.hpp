/*
 * rmm-rs: rmm::detail's runtime capability checks, answered by the Rust driver layer of rmm-rs
 * (src/capabilities.rs), which asks only what the running driver can answer.
 */
#pragma once

#include <rmm/cuda_device.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/detail/rust_resource.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>

/// The driver version from which hardware decompression is supported.
#define RMM_MIN_HWDECOMPRESS_CUDA_VERSION 12080
/// The driver version from which the stream-ordered managed memory allocator exists.
#define RMM_MIN_ASYNC_MANAGED_ALLOC_CUDA_VERSION 13000

namespace rmm::detail {

/// Asks the Rust side whether the current device has `capability`; throws rmm::cuda_error when
/// the driver cannot be asked.
[[nodiscard]] inline bool current_device_has(rmm_rs::Capability capability,
                                             std::uint32_t handle_types = 0)
{
  auto const out =
    rmm_rs::runtime_capability(capability, rmm::get_current_cuda_device().value(), handle_types);
  rmm::mr::detail::check(out);
  return out.ptr != 0;
}

/// Whether the driver and current device support the stream-ordered allocator (memory pools).
struct runtime_async_alloc {
  static bool is_supported() { return current_device_has(rmm_rs::Capability::AsyncAlloc); }
};

/// Whether memory pools of the current device may export allocations as `handle_type`.
struct export_handle_type {
  static bool is_supported(cudaMemAllocationHandleType handle_type)
  {
    if (handle_type == cudaMemHandleTypeNone) { return true; }
    return current_device_has(rmm_rs::Capability::ExportHandleType,
                              static_cast<std::uint32_t>(handle_type));
  }
};

/// Whether the driver supports hardware decompression.
struct hwdecompress {
  static bool is_supported() { return current_device_has(rmm_rs::Capability::HwDecompress); }
};

/// Whether the current device supports concurrent managed access (needed for prefetching).
struct concurrent_managed_access {
  static bool is_supported()
  {
    return current_device_has(rmm_rs::Capability::ConcurrentManagedAccess);
  }
};

/// Whether the driver and current device support pools of managed memory (CUDA 13.0).
struct runtime_async_managed_alloc {
  static bool is_supported() { return current_device_has(rmm_rs::Capability::AsyncManagedAlloc); }
};

/// Whether the current device is integrated (shares physical memory with the host).
struct device_integrated_memory {
  static bool is_supported()
  {
    return current_device_has(rmm_rs::Capability::DeviceIntegratedMemory);
  }
};

}  // namespace rmm::detail
