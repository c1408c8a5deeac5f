/*
 * rmm-rs: the callbacks of rmm::mr::callback_memory_resource, as the Rust side calls them.
 *
 * Plain C++ (no CUDA headers), like rust_bridge.hpp: the stream crosses as an integer, and the
 * CUDA side (rmm/mr/callback_memory_resource.hpp) derives from this class to call the user's
 * std::function with a cuda::stream_ref.
 */
#pragma once

#include <cstddef>

namespace rmm_rs {

struct Outcome;  // defined by the cxx bridge

/**
 * @brief The allocate and deallocate callbacks of a callback_memory_resource.
 *
 * The public methods are what Rust calls; they never throw: an exception of `do_allocate` comes
 * back in the Outcome, one of `do_deallocate` is reported on stderr.
 */
class CppAllocationCallbacks {
 public:
  CppAllocationCallbacks()                                         = default;
  CppAllocationCallbacks(CppAllocationCallbacks const&)            = delete;
  CppAllocationCallbacks& operator=(CppAllocationCallbacks const&) = delete;
  virtual ~CppAllocationCallbacks()                                = default;

  void allocate(std::size_t bytes, std::size_t stream, Outcome& out) const noexcept;
  void deallocate(std::size_t ptr, std::size_t bytes, std::size_t stream) const noexcept;

 private:
  virtual void* do_allocate(std::size_t bytes, std::size_t stream) const                  = 0;
  virtual void do_deallocate(void* ptr, std::size_t bytes, std::size_t stream) const = 0;
};

}  // namespace rmm_rs
