/*
 * rmm-rs: stream-ordered copies between any two addresses (host, device or managed).
 */
#pragma once

#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace rmm::detail {

/// cudaMemcpyAsync with the direction inferred from the pointers.
inline cudaError_t memcpy_async(void* dst, void const* src, std::size_t count, cuda::stream_ref stream)
{
  return cudaMemcpyAsync(dst, src, count, cudaMemcpyDefault, stream.get());
}

}  // namespace rmm::detail
