/*
 * rmm-rs: a non-owning view of a CUDA stream (RMM's rmm/cuda_stream_view.hpp). Deprecated, as in
 * RMM 26.10, in favour of `cuda::stream_ref`; the two convert into each other, so code written for
 * either compiles. The header itself uses the deprecated names with the warning off, as RMM's does.
 */
#pragma once

#include <rmm/error.hpp>

#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <ostream>
#include <type_traits>

namespace rmm {

/// A copyable, non-owning wrapper of a `cudaStream_t`. @deprecated Use cuda::stream_ref instead.
class [[deprecated("Use cuda::stream_ref instead.")]] cuda_stream_view {
 public:
  constexpr cuda_stream_view()                        = default;
  constexpr cuda_stream_view(cuda_stream_view const&) = default;
  constexpr cuda_stream_view(cuda_stream_view&&)      = default;
  constexpr cuda_stream_view& operator=(cuda_stream_view const&) = default;
  constexpr cuda_stream_view& operator=(cuda_stream_view&&)      = default;
  ~cuda_stream_view()                                            = default;

  cuda_stream_view(int)            = delete;  // no conversion from 0
  cuda_stream_view(std::nullptr_t) = delete;  // no conversion from nullptr

  constexpr cuda_stream_view(cudaStream_t stream) noexcept : stream_{stream} {}
  constexpr cuda_stream_view(cuda::stream_ref stream) noexcept : stream_{stream.get()} {}

  [[nodiscard]] constexpr cudaStream_t value() const noexcept { return stream_; }
  [[nodiscard]] constexpr cudaStream_t get() const noexcept { return stream_; }
  constexpr operator cudaStream_t() const noexcept { return stream_; }
  constexpr operator cuda::stream_ref() const noexcept { return cuda::stream_ref{stream_}; }

  /// True for the per-thread default stream (also when it is the default stream under
  /// --default-stream per-thread).
  [[nodiscard]] bool is_per_thread_default() const noexcept
  {
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
    return value() == cudaStreamPerThread || value() == nullptr;
#else
    return value() == cudaStreamPerThread;
#endif
  }

  /// True for the legacy default stream (0 or cudaStreamLegacy).
  [[nodiscard]] bool is_default() const noexcept
  {
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
    return value() == cudaStreamLegacy;
#else
    return value() == cudaStreamLegacy || value() == nullptr;
#endif
  }

  /// Waits for the stream; throws rmm::cuda_error on failure.
  void synchronize() const { RMM_CUDA_TRY(cudaStreamSynchronize(stream_)); }
  void sync() const { synchronize(); }
  /// Waits for the stream; reports failure only in debug builds.
  void synchronize_no_throw() const noexcept
  {
    RMM_ASSERT_CUDA_SUCCESS(cudaStreamSynchronize(stream_));
  }

 private:
  cudaStream_t stream_{};
};

/// The default stream (0). @deprecated Use cuda::stream_ref{cudaStream_t{cudaStreamDefault}}.
[[deprecated("Use cuda::stream_ref{cudaStream_t{cudaStreamDefault}} instead.")]]
static constexpr cuda::stream_ref cuda_stream_default{cudaStream_t{nullptr}};
/// The legacy default stream. @deprecated Use cuda::stream_ref{cudaStreamLegacy}.
[[deprecated("Use cuda::stream_ref{cudaStreamLegacy} instead.")]]
static const cuda::stream_ref cuda_stream_legacy{cudaStream_t{cudaStreamLegacy}};
/// The per-thread default stream. @deprecated Use cuda::stream_ref{cudaStreamPerThread}.
[[deprecated("Use cuda::stream_ref{cudaStreamPerThread} instead.")]]
static const cuda::stream_ref cuda_stream_per_thread{cudaStream_t{cudaStreamPerThread}};

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

inline bool operator==(cuda_stream_view lhs, cuda_stream_view rhs)
{
  return lhs.value() == rhs.value();
}
inline bool operator!=(cuda_stream_view lhs, cuda_stream_view rhs) { return not(lhs == rhs); }

// Mixed comparisons with cuda::stream_ref, as templates so that they win over conversions
// instead of being ambiguous with stream_ref's own operators.
template <class StreamRef, std::enable_if_t<std::is_same_v<StreamRef, cuda::stream_ref>, int> = 0>
bool operator==(cuda_stream_view lhs, StreamRef const& rhs)
{
  return lhs.value() == rhs.get();
}
template <class StreamRef, std::enable_if_t<std::is_same_v<StreamRef, cuda::stream_ref>, int> = 0>
bool operator==(StreamRef const& lhs, cuda_stream_view rhs)
{
  return lhs.get() == rhs.value();
}
template <class StreamRef, std::enable_if_t<std::is_same_v<StreamRef, cuda::stream_ref>, int> = 0>
bool operator!=(cuda_stream_view lhs, StreamRef const& rhs)
{
  return lhs.value() != rhs.get();
}
template <class StreamRef, std::enable_if_t<std::is_same_v<StreamRef, cuda::stream_ref>, int> = 0>
bool operator!=(StreamRef const& lhs, cuda_stream_view rhs)
{
  return lhs.get() != rhs.value();
}

inline std::ostream& operator<<(std::ostream& os, cuda_stream_view stream)
{
  os << stream.value();
  return os;
}

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace rmm
