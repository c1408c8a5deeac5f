/*
 * rmm-rs: an owning CUDA stream (RMM's rmm/cuda_stream.hpp), header-only.
 *
 * The stream may be destroyed with work queued and with blocks freed on it in pools: before it is
 * destroyed every pool captures its work (an event), so the next stream the driver creates, which
 * often gets the same handle, never takes those blocks before that work is done.
 */
#pragma once

#include <rmm/cuda_stream_view.hpp>
#include <rmm/error.hpp>

#include "rmm-rs/src/bridge.rs.h"

#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>

namespace rmm {

/// A CUDA stream owned by this object (move-only), destroyed with it.
class cuda_stream {
 public:
  enum class flags : unsigned int {
    sync_default = cudaStreamDefault,      ///< Synchronizes with the legacy default stream.
    non_blocking = cudaStreamNonBlocking,  ///< Does not synchronize with the default stream.
  };

  cuda_stream(cuda_stream&&)            = default;
  cuda_stream& operator=(cuda_stream&&) = default;
  ~cuda_stream()                        = default;
  cuda_stream(cuda_stream const&)       = delete;
  cuda_stream& operator=(cuda_stream const&) = delete;

  /// Creates a stream; throws rmm::cuda_error on failure.
  cuda_stream(cuda_stream::flags f = cuda_stream::flags::sync_default)
    : stream_{[f]() {
                auto* s = new cudaStream_t;  // NOLINT(cppcoreguidelines-owning-memory)
                auto const status =
                  cudaStreamCreateWithFlags(s, static_cast<unsigned int>(f));
                if (status != cudaSuccess) {
                  delete s;  // NOLINT(cppcoreguidelines-owning-memory)
                  RMM_CUDA_TRY(status);
                }
                rmm_rs::register_stream(reinterpret_cast<std::uintptr_t>(*s));
                return s;
              }(),
              [](cudaStream_t* s) {
                rmm_rs::retire_stream(reinterpret_cast<std::uintptr_t>(*s));
                RMM_ASSERT_CUDA_SUCCESS_SAFE_SHUTDOWN(cudaStreamDestroy(*s));
                delete s;  // NOLINT(cppcoreguidelines-owning-memory)
              }}
  {
  }

  /// False after the stream was moved from.
  [[nodiscard]] bool is_valid() const { return stream_ != nullptr; }
  [[nodiscard]] cudaStream_t value() const
  {
    RMM_EXPECTS(is_valid(), "Invalid stream handle");
    return *stream_;
  }
  explicit operator cudaStream_t() const noexcept { return is_valid() ? *stream_ : cudaStream_t{}; }
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
  /// A view of the stream. @deprecated rmm::cuda_stream_view is; convert to cuda::stream_ref.
  [[nodiscard, deprecated("Use conversion to cuda::stream_ref instead.")]] cuda_stream_view view()
    const
  {
    return cuda_stream_view{value()};
  }
  /// @deprecated rmm::cuda_stream_view is; convert to cuda::stream_ref.
  [[deprecated("Use conversion to cuda::stream_ref instead.")]] operator cuda_stream_view() const
  {
    return cuda_stream_view{value()};
  }
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
  operator cuda::stream_ref() const noexcept
  {
    return cuda::stream_ref{is_valid() ? *stream_ : cudaStream_t{}};
  }
  void synchronize() const { RMM_CUDA_TRY(cudaStreamSynchronize(value())); }
  void synchronize_no_throw() const noexcept
  {
    RMM_ASSERT_CUDA_SUCCESS(cudaStreamSynchronize(static_cast<cudaStream_t>(*this)));
  }

 private:
  std::unique_ptr<cudaStream_t, std::function<void(cudaStream_t*)>> stream_;
};

}  // namespace rmm
