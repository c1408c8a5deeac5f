// A resource written by the user in C++: forwards to an upstream and records, for each call, the
// kind, the size and the CUDA device current at that moment (as a user's device-checking adaptor
// would), and the device the memory is on.
#pragma once

#include "common.hpp"

#include <memory>
#include <mutex>

namespace oracle {

struct event_log {
  std::mutex mu;
  std::vector<std::string> events;  ///< "alloc <bytes> dev<current> mem<device of memory>"
  void push(std::string e)
  {
    std::lock_guard<std::mutex> g{mu};
    events.push_back(std::move(e));
  }
};

inline int current_device()
{
  int d = -1;
  if (cudaGetDevice(&d) != cudaSuccess) { cudaGetLastError(); }
  return d;
}

/// The device a pointer's memory is on (-1 for none/unknown).
inline int memory_device(void const* p)
{
  if (p == nullptr) { return -1; }
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return a.device;
}

class recording_resource {
 public:
  recording_resource(any_dev upstream, std::shared_ptr<event_log> log)
    : up_{std::make_shared<any_dev>(std::move(upstream))}, log_{std::move(log)}
  {
  }
  void* allocate(cuda::stream_ref s, std::size_t n, std::size_t a)
  {
    int dev = current_device();
    void* p = up_->allocate(s, n, a);
    log_->push("alloc " + std::to_string(n) + " dev" + std::to_string(dev) + " mem" +
               std::to_string(memory_device(p)));
    return p;
  }
  void deallocate(cuda::stream_ref s, void* p, std::size_t n, std::size_t a) noexcept
  {
    log_->push("free " + std::to_string(n) + " dev" + std::to_string(current_device()) + " mem" +
               std::to_string(memory_device(p)));
    up_->deallocate(s, p, n, a);
  }
  void* allocate_sync(std::size_t n, std::size_t a)
  {
    return allocate(cuda::stream_ref{cudaStream_t{nullptr}}, n, a);
  }
  void deallocate_sync(void* p, std::size_t n, std::size_t a) noexcept
  {
    deallocate(cuda::stream_ref{cudaStream_t{nullptr}}, p, n, a);
    cudaStreamSynchronize(nullptr);
  }
  bool operator==(recording_resource const& o) const noexcept { return log_ == o.log_; }
  bool operator!=(recording_resource const& o) const noexcept { return !(*this == o); }
  friend void get_property(recording_resource const&, cuda::mr::device_accessible) noexcept {}

 private:
  std::shared_ptr<any_dev> up_;
  std::shared_ptr<event_log> log_;
};

}  // namespace oracle
