/*
 * rmm-rs: alignment helpers (RMM's rmm/aligned.hpp), header-only.
 */
#pragma once

#include <rmm/detail/export.hpp>

#include <cassert>
#include <cstddef>
#include <cstdint>

namespace rmm {

/// Alignment of every device allocation when less is asked for.
static constexpr std::size_t CUDA_ALLOCATION_ALIGNMENT{256};

/// True when `value` is a non-zero power of two.
[[nodiscard]] constexpr bool is_pow2(std::size_t value) noexcept
{
  return value != 0 && (value & (value - 1)) == 0;
}

/// True when `alignment` is a power of two.
[[nodiscard]] constexpr bool is_supported_alignment(std::size_t alignment) noexcept
{
  return is_pow2(alignment);
}

/// True when a base resource (one that talks to CUDA) can honour `alignment`.
[[nodiscard]] constexpr bool is_supported_base_resource_alignment(std::size_t alignment) noexcept
{
  return is_pow2(alignment) && alignment <= CUDA_ALLOCATION_ALIGNMENT;
}

/// `value` rounded up to a multiple of `alignment` (a power of two).
[[nodiscard]] constexpr std::size_t align_up(std::size_t value, std::size_t alignment) noexcept
{
  return (value + (alignment - 1)) & ~(alignment - 1);
}

/// `value` rounded down to a multiple of `alignment` (a power of two).
[[nodiscard]] constexpr std::size_t align_down(std::size_t value, std::size_t alignment) noexcept
{
  return value & ~(alignment - 1);
}

/// True when `value` is a multiple of `alignment` (a power of two).
[[nodiscard]] constexpr bool is_aligned(std::size_t value, std::size_t alignment) noexcept
{
  return value == align_down(value, alignment);
}

/// True when `ptr` is a multiple of `alignment`.
[[nodiscard]] inline bool is_pointer_aligned(void* ptr,
                                             std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) noexcept
{
  return is_aligned(reinterpret_cast<std::uintptr_t>(ptr), alignment);
}

}  // namespace rmm
