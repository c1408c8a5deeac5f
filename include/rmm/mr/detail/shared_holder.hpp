/*
 * rmm-rs: the std::shared_ptr that stateful resource classes keep their shared state in.
 */
#pragma once

#include <rmm/detail/exec_check_disable.hpp>

#include <memory>
#include <utility>

namespace rmm::mr::detail {

/**
 * @brief A std::shared_ptr<T> that every copy of a resource shares, with copies nvcc may call
 * from __host__ __device__ code.
 *
 * CCCL's type erasure copies resources from __host__ __device__ functions, so nvcc infers the
 * implicit copies of the resource classes __host__ __device__. This holder's copy, move and
 * destruction are declared so too, with the device check off (they only ever run on the host),
 * and forward to an inner struct whose user-provided, host-only members end the inference before
 * it reaches std::shared_ptr. A class whose members are all such holders (or plain values) needs
 * no special members of its own.
 */
template <class T>
class shared_holder {
 public:
  /// Holds `p` (which may be null).
  explicit shared_holder(std::shared_ptr<T> p) noexcept : h_{std::move(p)} {}

  RMM_EXEC_CHECK_DISABLE
  RMM_HOST_DEVICE shared_holder(shared_holder const& other) noexcept : h_{other.h_} {}
  RMM_EXEC_CHECK_DISABLE
  RMM_HOST_DEVICE shared_holder(shared_holder&& other) noexcept : h_{std::move(other.h_)} {}
  RMM_EXEC_CHECK_DISABLE
  RMM_HOST_DEVICE shared_holder& operator=(shared_holder const& other) noexcept
  {
    h_ = other.h_;
    return *this;
  }
  RMM_EXEC_CHECK_DISABLE
  RMM_HOST_DEVICE shared_holder& operator=(shared_holder&& other) noexcept
  {
    h_ = std::move(other.h_);
    return *this;
  }
  RMM_EXEC_CHECK_DISABLE
  RMM_HOST_DEVICE ~shared_holder() {}

  /// The shared object (null once moved from).
  [[nodiscard]] T* get() const noexcept { return h_.ptr.get(); }
  /// The shared pointer itself: every copy of this holder holds the same one.
  [[nodiscard]] std::shared_ptr<T> const& shared() const noexcept { return h_.ptr; }

 private:
  /// Host-only copy, move and destruction (see the class comment).
  struct host_only {
    explicit host_only(std::shared_ptr<T> p) noexcept : ptr{std::move(p)} {}
    host_only(host_only const& o) noexcept : ptr{o.ptr} {}
    host_only(host_only&& o) noexcept : ptr{std::move(o.ptr)} {}
    host_only& operator=(host_only const& o) noexcept
    {
      ptr = o.ptr;
      return *this;
    }
    host_only& operator=(host_only&& o) noexcept
    {
      ptr = std::move(o.ptr);
      return *this;
    }
    ~host_only() {}

    std::shared_ptr<T> ptr;
  };
  host_only h_;
};

}  // namespace rmm::mr::detail
