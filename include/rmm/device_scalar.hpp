/*
 * rmm-rs: one value in device memory (RMM's rmm/device_scalar.hpp).
 */
#pragma once

#include <rmm/detail/exec_check_disable.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/stream_ref>

#include <type_traits>
#include <utility>

namespace rmm {

/// A single `T` in device memory, read and written from the host on a stream.
template <typename T>
class device_scalar {
 public:
  static_assert(std::is_trivially_copyable_v<T>, "Scalar type must be trivially copyable");

  using value_type      = typename device_uvector<T>::value_type;
  using size_type       = typename device_uvector<T>::size_type;
  using reference       = typename device_uvector<T>::reference;
  using const_reference = typename device_uvector<T>::const_reference;
  using pointer         = typename device_uvector<T>::pointer;
  using const_pointer   = typename device_uvector<T>::const_pointer;

  RMM_EXEC_CHECK_DISABLE
  ~device_scalar() = default;
  RMM_EXEC_CHECK_DISABLE
  device_scalar(device_scalar&&) noexcept            = default;
  device_scalar& operator=(device_scalar&&) noexcept = default;
  device_scalar(device_scalar const&)                = delete;
  device_scalar& operator=(device_scalar const&)     = delete;
  device_scalar()                                    = delete;

  /// An uninitialized scalar.
  explicit device_scalar(
    cuda::stream_ref stream,
    cuda::mr::any_resource<cuda::mr::device_accessible> mr = mr::get_current_device_resource_ref())
    : _storage{1, stream, std::move(mr)}
  {
  }

  /// A scalar holding `initial_value` (copied asynchronously: keep it alive until `stream` syncs).
  explicit device_scalar(
    value_type const& initial_value,
    cuda::stream_ref stream,
    cuda::mr::any_resource<cuda::mr::device_accessible> mr = mr::get_current_device_resource_ref())
    : _storage{1, stream, std::move(mr)}
  {
    set_value_async(initial_value, stream);
  }

  // A temporary would be gone before the asynchronous copy reads it.
  device_scalar(value_type const&&,
                cuda::stream_ref,
                cuda::mr::any_resource<cuda::mr::device_accessible> = mr::get_current_device_resource_ref()) =
    delete;

  /// A copy of `other`, made on `stream`.
  device_scalar(
    device_scalar const& other,
    cuda::stream_ref stream,
    cuda::mr::any_resource<cuda::mr::device_accessible> mr = mr::get_current_device_resource_ref())
    : _storage{other._storage, stream, std::move(mr)}
  {
  }

  /// The value, copied to the host (waits for `stream`).
  [[nodiscard]] value_type value(cuda::stream_ref stream) const { return _storage.front_element(stream); }

  /// Sets the value on `stream`; `value` must live until the copy is done.
  void set_value_async(value_type const& value, cuda::stream_ref stream)
  {
    _storage.set_element_async(0, value, stream);
  }
  void set_value_async(value_type const&&, cuda::stream_ref) = delete;

  /// Zeroes the value on `stream`.
  void set_value_to_zero_async(cuda::stream_ref stream) { _storage.set_element_to_zero_async(size_type{0}, stream); }

  [[nodiscard]] pointer data() noexcept { return static_cast<pointer>(_storage.data()); }
  [[nodiscard]] const_pointer data() const noexcept { return static_cast<const_pointer>(_storage.data()); }
  [[nodiscard]] constexpr size_type size() const noexcept { return 1; }
  [[nodiscard]] cuda::stream_ref stream() const noexcept { return _storage.stream(); }
  void set_stream(cuda::stream_ref stream) noexcept { _storage.set_stream(stream); }

 private:
  rmm::device_uvector<T> _storage;
};

}  // namespace rmm
