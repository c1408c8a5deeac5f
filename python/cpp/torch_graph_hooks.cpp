// The CUDA graph hooks of the PyTorch allocator (src/torch_capture.rs): PyTorch's
// CUDAPluggableAllocator calls them around each torch.cuda.graph capture, with C++ arguments
// (a std::pair pool id and a std::function stream filter), so they are written in C++; what
// they decide is done in Rust. No CUDA header is needed: a stream is an opaque pointer.
//
//   begin(device, pool, filter)  before the capture begins: keep the filter, which tells whether
//                                a stream is being captured into `pool`
//   end(device, pool)            after the capture ended: drop the filter (it refers to the
//                                capturing graph), end the pool marks of the capture's streams
//   release(device, pool)        the graph is reset or destroyed: its private memory may go back
//
// None of them lets an exception out: PyTorch calls them from code that does not expect one.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

struct CUstream_st;
using cudaStream_t = CUstream_st*;
/// PyTorch's c10::cuda::MempoolId_t.
using MempoolId = std::pair<unsigned long long, unsigned long long>;
using StreamFilter = std::function<bool(cudaStream_t)>;

extern "C" {
// Defined in Rust (src/torch_capture.rs); none of them unwinds.
void rmm_rs_torch_pool_begun(int device, std::uint64_t first, std::uint64_t second, std::size_t active);
void rmm_rs_torch_pool_ended(int device, std::uint64_t first, std::uint64_t second, std::size_t active);
void rmm_rs_torch_pool_released(int device, std::uint64_t first, std::uint64_t second);
}

namespace {

struct Active {
  int device;
  MempoolId pool;
  StreamFilter filter;
};

std::mutex& registry_mutex()
{
  static std::mutex m;
  return m;
}

/// The pools PyTorch is allocating to now (between begin and end), with their filters.
std::vector<Active>& registry()
{
  static std::vector<Active> r;
  return r;
}

}  // namespace

extern "C" {

/// PyTorch's beginAllocateToPool.
void rmm_rs_torch_begin_allocate_to_pool(int device, MempoolId pool, StreamFilter filter)
{
  try {
    std::lock_guard<std::mutex> lock{registry_mutex()};
    registry().push_back(Active{device, pool, std::move(filter)});
    rmm_rs_torch_pool_begun(device, pool.first, pool.second, registry().size());
  } catch (...) {
  }
}

/// PyTorch's endAllocateToPool.
void rmm_rs_torch_end_allocate_to_pool(int device, MempoolId pool)
{
  try {
    std::lock_guard<std::mutex> lock{registry_mutex()};
    auto& r = registry();
    for (auto it = r.begin(); it != r.end();) {
      it = (it->device == device && it->pool == pool) ? r.erase(it) : it + 1;
    }
    rmm_rs_torch_pool_ended(device, pool.first, pool.second, r.size());
  } catch (...) {
  }
}

/// PyTorch's releasePool.
void rmm_rs_torch_release_pool(int device, MempoolId pool)
{
  rmm_rs_torch_pool_released(device, pool.first, pool.second);
}

/// Whether `stream` is being captured into a pool PyTorch allocates to on `device`; its id in
/// `first`/`second`. A filter that throws answers no.
bool rmm_rs_torch_pool_of_stream(int device, void* stream, std::uint64_t* first, std::uint64_t* second)
{
  try {
    std::lock_guard<std::mutex> lock{registry_mutex()};
    for (auto const& a : registry()) {
      if (a.device == device && a.filter && a.filter(static_cast<cudaStream_t>(stream))) {
        *first  = a.pool.first;
        *second = a.pool.second;
        return true;
      }
    }
  } catch (...) {
  }
  return false;
}

/// The addresses of the three hooks, for PyTorch's setters (which take them as integers).
void rmm_rs_torch_graph_hook_addresses(std::uintptr_t* out)
{
  out[0] = reinterpret_cast<std::uintptr_t>(&rmm_rs_torch_begin_allocate_to_pool);
  out[1] = reinterpret_cast<std::uintptr_t>(&rmm_rs_torch_end_allocate_to_pool);
  out[2] = reinterpret_cast<std::uintptr_t>(&rmm_rs_torch_release_pool);
}

}  // extern "C"
