/*
 * rmm-rs: aligned allocation on top of an unaligned host allocator (RMM's detail helpers).
 * The distance from the raw allocation to the aligned pointer is kept just before the aligned
 * pointer, so that deallocation finds the raw allocation again.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/detail/export.hpp>

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>

RMM_NAMESPACE_BEGIN
namespace detail {

/**
 * @brief Allocates `bytes` aligned to `alignment` (a power of two) through `alloc(n)`, which
 * returns `n` unaligned bytes. Free with aligned_host_deallocate and the matching deallocator.
 */
template <typename Alloc>
void* aligned_host_allocate(std::size_t bytes, std::size_t alignment, Alloc alloc)
{
  assert(rmm::is_supported_alignment(alignment));
  std::size_t const header = sizeof(std::ptrdiff_t);
  char* const raw          = static_cast<char*>(alloc(bytes + alignment + header));
  auto const first         = reinterpret_cast<std::uintptr_t>(raw) + header;
  auto const aligned_addr  = (first + alignment - 1) & ~(std::uintptr_t{alignment} - 1);
  char* const aligned      = raw + (aligned_addr - reinterpret_cast<std::uintptr_t>(raw));
  std::ptrdiff_t const offset = aligned - raw;
  std::memcpy(aligned - header, &offset, header);
  return aligned;
}

/**
 * @brief Frees `ptr` from aligned_host_allocate through `dealloc(raw)`; `bytes` and `alignment`
 * are those of the allocation. A null `ptr` does nothing.
 */
template <typename Dealloc>
void aligned_host_deallocate(void* ptr,
                             [[maybe_unused]] std::size_t bytes,
                             [[maybe_unused]] std::size_t alignment,
                             Dealloc dealloc) noexcept
{
  assert(rmm::is_supported_alignment(alignment));
  if (ptr == nullptr) { return; }
  std::ptrdiff_t offset{};
  std::memcpy(&offset, static_cast<char*>(ptr) - sizeof(std::ptrdiff_t), sizeof(std::ptrdiff_t));
  dealloc(static_cast<char*>(ptr) - offset);
}

}  // namespace detail
RMM_NAMESPACE_END
