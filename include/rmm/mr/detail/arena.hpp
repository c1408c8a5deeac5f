/*
 * rmm-rs: RMM's detail header of the arena allocator. The algorithm lives in Rust (src/arena/);
 * this header keeps RMM's include path and names the sizes the arena is built on.
 */
#pragma once

#include <cstddef>

namespace rmm::mr::detail::arena {

/// Bytes of the smallest superblock; larger requests go to the global arena directly.
inline constexpr std::size_t superblock_minimum_size{std::size_t{1} << 20};

/// Bytes of the largest superblock RMM allows (a sanity bound).
inline constexpr std::size_t superblock_maximum_size{std::size_t{1} << 40};

}  // namespace rmm::mr::detail::arena
