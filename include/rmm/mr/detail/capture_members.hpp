/*
 * rmm-rs: the calls behind the stream-capture members of pool_memory_resource and
 * virtual_pool_memory_resource (an addition of rmm-rs: RMM 26.10 has no such members).
 */
#pragma once

#include <rmm/mr/detail/rust_resource.hpp>

#include <cuda/stream_ref>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rmm::mr::detail {

/// Marks `stream` of the pool `h` as capturing into memory private to its capture; its id.
[[nodiscard]] inline std::uint64_t capture_begin(rmm_rs::PoolResource const& h, cuda::stream_ref stream)
{
  return query(h.capture_begin(reinterpret_cast<std::uintptr_t>(stream.get())));
}

/// The capture on `stream` of the pool `h` ended.
inline void capture_end(rmm_rs::PoolResource const& h, cuda::stream_ref stream)
{
  check(h.capture_end(reinterpret_cast<std::uintptr_t>(stream.get())));
}

/// Gives capture `id`'s private memory back to the pool `h`.
inline void capture_release(rmm_rs::PoolResource const& h, std::uint64_t id)
{
  check(h.capture_release(id));
}

/// The ids of the captures whose private memory the pool `h` keeps.
[[nodiscard]] inline std::vector<std::uint64_t> capture_ids(rmm_rs::PoolResource const& h)
{
  rust::Vec<std::uint64_t> ids;
  check(h.capture_ids(ids));
  return std::vector<std::uint64_t>(ids.begin(), ids.end());
}

/// Bytes of private memory the pool `h` keeps for capture `id`.
[[nodiscard]] inline std::size_t capture_pool_bytes(rmm_rs::PoolResource const& h, std::uint64_t id)
{
  return query(h.capture_pool_bytes(id));
}

}  // namespace rmm::mr::detail
