/*
 * rmm-rs: whether a stream is one of CUDA's default streams.
 */
#pragma once

#include <rmm/detail/export.hpp>

#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

RMM_NAMESPACE_BEGIN
namespace detail {

/// True for the null stream and for the default stream the build uses (per-thread under
/// CUDA_API_PER_THREAD_DEFAULT_STREAM, else legacy).
[[nodiscard, maybe_unused]] static bool is_default_stream(cuda::stream_ref stream) noexcept
{
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
  cudaStream_t const per_build = cudaStreamPerThread;
#else
  cudaStream_t const per_build = cudaStreamLegacy;
#endif
  return stream.get() == cudaStream_t{} || stream.get() == per_build;
}

}  // namespace detail
RMM_NAMESPACE_END
