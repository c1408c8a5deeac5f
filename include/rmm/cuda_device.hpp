/*
 * rmm-rs: CUDA device ids and helpers (RMM's rmm/cuda_device.hpp), header-only over the CUDA
 * runtime. The runtime and the Rust side share the primary context of each device.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

namespace rmm {

struct cuda_device_id;
inline cuda_device_id get_current_cuda_device();

/// A strong type for a CUDA device ordinal.
struct cuda_device_id {
  using value_type = int;  ///< Integer type of the ordinal

  /// The current device.
  cuda_device_id() noexcept;
  explicit constexpr cuda_device_id(value_type dev_id) noexcept : id_{dev_id} {}

  [[nodiscard]] constexpr value_type value() const noexcept { return id_; }

  [[nodiscard]] constexpr friend bool operator==(cuda_device_id const& lhs,
                                                 cuda_device_id const& rhs) noexcept
  {
    return lhs.value() == rhs.value();
  }
  [[nodiscard]] constexpr friend bool operator!=(cuda_device_id const& lhs,
                                                 cuda_device_id const& rhs) noexcept
  {
    return lhs.value() != rhs.value();
  }

 private:
  value_type id_;
};

/// The device current on this thread (`cudaGetDevice`).
inline cuda_device_id get_current_cuda_device()
{
  cuda_device_id::value_type dev_id{-1};
  RMM_ASSERT_CUDA_SUCCESS(cudaGetDevice(&dev_id));
  return cuda_device_id{dev_id};
}

inline cuda_device_id::cuda_device_id() noexcept : id_{get_current_cuda_device().value()} {}

/// The number of CUDA devices; 0 when there is no device or no driver.
inline int get_num_cuda_devices()
{
  int count{0};
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  return count;
}

/// `(free, total)` bytes of the current device.
inline std::pair<std::size_t, std::size_t> available_device_memory()
{
  std::size_t free{};
  std::size_t total{};
  RMM_CUDA_TRY(cudaMemGetInfo(&free, &total));
  return {free, total};
}

/// `percent` percent of the current device's free memory, rounded down to a multiple of 256.
inline std::size_t percent_of_free_device_memory(int percent)
{
  RMM_EXPECTS(percent >= 0 && percent <= 100, "percent must be within [0, 100]");
  auto const [free, total] = available_device_memory();
  (void)total;
  auto const bytes = static_cast<std::size_t>(static_cast<double>(free) * percent / 100.0);
  return align_down(bytes, CUDA_ALLOCATION_ALIGNMENT);
}

/// Makes `dev_id` current for its lifetime and restores the previous device afterwards.
struct cuda_set_device_raii {
  explicit cuda_set_device_raii(cuda_device_id dev_id)
    : old_device_{get_current_cuda_device()},
      needs_reset_{dev_id.value() >= 0 && old_device_ != dev_id}
  {
    if (needs_reset_) { RMM_CUDA_TRY(cudaSetDevice(dev_id.value())); }
  }
  ~cuda_set_device_raii() noexcept
  {
    if (needs_reset_) { RMM_ASSERT_CUDA_SUCCESS(cudaSetDevice(old_device_.value())); }
  }
  cuda_set_device_raii(cuda_set_device_raii const&)            = delete;
  cuda_set_device_raii& operator=(cuda_set_device_raii const&) = delete;
  cuda_set_device_raii(cuda_set_device_raii&&)                 = delete;
  cuda_set_device_raii& operator=(cuda_set_device_raii&&)      = delete;

 private:
  cuda_device_id old_device_;
  bool needs_reset_;
};

}  // namespace rmm
