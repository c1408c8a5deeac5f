/*
 * rmm-rs: the path of RMM's base of its C++ pools (stream_ordered_memory_resource: per-stream free
 * lists with events between streams). In rmm-rs that algorithm is the Rust pool (algorithms/,
 * src/resource/pool.rs), which every pool class of rmm::mr uses through the bridge; its stream
 * ordering is described in the top-level README. This header keeps the path and the small CRTP
 * helper RMM declares here; it does not provide RMM's C++ base class.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/cuda_device.hpp>
#include <rmm/detail/error.hpp>
#include <rmm/detail/export.hpp>
#include <rmm/detail/format.hpp>
#include <rmm/logger.hpp>
#include <rmm/process_is_exiting.hpp>

#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

RMM_NAMESPACE_BEGIN
namespace mr::detail {

/// Access to the derived class of a CRTP base.
template <typename T>
struct crtp {
  [[nodiscard]] T& underlying() { return static_cast<T&>(*this); }  ///< The derived object
  [[nodiscard]] T const& underlying() const { return static_cast<T const&>(*this); }  ///< The derived object
};

}  // namespace mr::detail
RMM_NAMESPACE_END
