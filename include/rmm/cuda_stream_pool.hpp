/*
 * rmm-rs: a fixed pool of CUDA streams handed out round-robin (RMM's rmm/cuda_stream_pool.hpp).
 */
#pragma once

#include <rmm/cuda_stream.hpp>
#include <rmm/error.hpp>

#include <cuda/stream_ref>

#include <atomic>
#include <cstddef>
#include <vector>

namespace rmm {

class cuda_stream_pool {
 public:
  static constexpr std::size_t default_size{16};  ///< Default number of streams

  /// Creates `pool_size` streams (at least one).
  explicit cuda_stream_pool(std::size_t pool_size    = default_size,
                            cuda_stream::flags flags = cuda_stream::flags::sync_default)
  {
    RMM_EXPECTS(pool_size > 0, "Stream pool size must be greater than zero");
    streams_.reserve(pool_size);
    for (std::size_t i = 0; i < pool_size; ++i) {
      streams_.emplace_back(flags);
    }
  }
  ~cuda_stream_pool()                                  = default;
  cuda_stream_pool(cuda_stream_pool&&)                 = delete;
  cuda_stream_pool(cuda_stream_pool const&)            = delete;
  cuda_stream_pool& operator=(cuda_stream_pool&&)      = delete;
  cuda_stream_pool& operator=(cuda_stream_pool const&) = delete;

  /// The next stream, round-robin; thread-safe.
  cuda::stream_ref get_stream() const noexcept
  {
    return streams_[(next_stream_++) % streams_.size()];
  }
  /// Stream number `stream_id` modulo the pool size.
  cuda::stream_ref get_stream(std::size_t stream_id) const
  {
    return streams_[stream_id % streams_.size()];
  }
  std::size_t get_pool_size() const noexcept { return streams_.size(); }

 private:
  std::vector<rmm::cuda_stream> streams_;
  mutable std::atomic_size_t next_stream_{};
};

}  // namespace rmm
