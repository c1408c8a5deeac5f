// Shared helpers of the scenario files: the resource factories every generic scenario runs over.
#pragma once

#include "harness.hpp"

#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/cuda_stream_view.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace oracle {

using any_dev = cuda::mr::any_resource<cuda::mr::device_accessible>;

/// The default stream, as the resources take it.
inline cuda::stream_ref default_stream() { return cuda::stream_ref{cudaStream_t{nullptr}}; }

/// A named way to build one resource (fresh each call).
struct factory {
  std::string name;
  std::function<any_dev()> make;
};

/// Every resource and adaptor configuration the generic scenarios run over.
std::vector<factory> const& factories();

/// Records an allocation of `bytes` through `ref` (pointer facts) and frees it.
void alloc_free(trace& t,
                std::string const& label,
                rmm::device_async_resource_ref ref,
                std::size_t bytes,
                std::size_t alignment = 256);

/// A random allocate/free sequence over `ref` (seeded; the same on both sides); records the
/// outcome of each step ('a' allocated, 'f' freed, 'o' out_of_memory, 'x' other exception).
void random_sequence(trace& t,
                     rmm::device_async_resource_ref ref,
                     std::uint64_t seed,
                     std::size_t max_bytes,
                     int steps);

}  // namespace oracle
