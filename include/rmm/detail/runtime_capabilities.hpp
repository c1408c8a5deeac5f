/*
 * rmm-rs: rmm::detail's runtime capability checks, answered by the Rust driver layer of rmm-rs
 * (src/capabilities.rs), which asks only what the running driver can answer. Cached and
 * answering false without a device, as RMM's are.
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

/// Asks the Rust side whether the current device has `capability`: false where it has not, where
/// there is no device (found without a driver call that fails), or where the driver cannot say
/// (RMM's cached checks answer false on any error too).
[[nodiscard]] inline bool current_device_has(rmm_rs::Capability capability)
{
  if (rmm::get_num_cuda_devices() == 0) { return false; }
  auto const out = rmm_rs::runtime_capability(capability, rmm::get_current_cuda_device().value(), 0);
  return out.kind == rmm_rs::ErrorKind::Ok && out.ptr != 0;
}

// As in RMM, each check but export_handle_type asks once, for the device current at the first
// call, and answers the same from then on.

/// Whether the driver and current device support the stream-ordered allocator (memory pools).
struct runtime_async_alloc {
  static bool is_supported()
  {
    static bool const supported = current_device_has(rmm_rs::Capability::AsyncAlloc);
    return supported;
  }
};

/// Whether memory pools of the current device may export allocations as `handle_type`; asked on
/// every call. @throws rmm::cuda_error where there is no device or the driver fails to answer
struct export_handle_type {
  static bool is_supported(cudaMemAllocationHandleType handle_type)
  {
    if (handle_type == cudaMemHandleTypeNone) { return true; }
    if (rmm::get_num_cuda_devices() == 0) {
      throw rmm::cuda_error{"CUDA error: no CUDA device to ask for its export handle types"};
    }
    auto const out = rmm_rs::runtime_capability(rmm_rs::Capability::ExportHandleType,
                                                rmm::get_current_cuda_device().value(),
                                                static_cast<std::uint32_t>(handle_type));
    rmm::mr::detail::check(out);
    return out.ptr != 0;
  }
};

/// Whether the driver supports hardware decompression (a 12.8 driver; no device needed).
struct hwdecompress {
  static bool is_supported()
  {
    static bool const supported = [] {
      auto const out = rmm_rs::runtime_capability(rmm_rs::Capability::HwDecompress, 0, 0);
      return out.kind == rmm_rs::ErrorKind::Ok && out.ptr != 0;
    }();
    return supported;
  }
};

/// Whether the current device supports concurrent managed access (needed for prefetching).
struct concurrent_managed_access {
  static bool is_supported()
  {
    static bool const supported = current_device_has(rmm_rs::Capability::ConcurrentManagedAccess);
    return supported;
  }
};

/// Whether the driver and current device support pools of managed memory (CUDA 13.0).
struct runtime_async_managed_alloc {
  static bool is_supported()
  {
    static bool const supported = current_device_has(rmm_rs::Capability::AsyncManagedAlloc);
    return supported;
  }
};

/// Whether the current device is integrated (shares physical memory with the host).
struct device_integrated_memory {
  static bool is_supported()
  {
    static bool const supported = current_device_has(rmm_rs::Capability::DeviceIntegratedMemory);
    return supported;
  }
};

}  // namespace rmm::detail
