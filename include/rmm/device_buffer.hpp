/*
 * rmm-rs: untyped, uninitialized, stream-ordered device memory (RMM's rmm/device_buffer.hpp),
 * header-only.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream_view.hpp>
#include <rmm/detail/cuda_memcpy.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

/// rmm-rs: checks a copy's source address (librmm_cpp.a, cpp/src/bridge/pointer_check.rs): 0 when
/// the driver can copy from it, else the length of the reason written into `message`.
extern "C" std::size_t rmm_rs_check_copy_source(std::uintptr_t addr,
                                                std::size_t bytes,
                                                char* message,
                                                std::size_t capacity) noexcept;

namespace rmm {

/**
 * @brief A block of device memory allocated from a resource on a stream.
 *
 * Allocation, copies and the free happen on the buffer's stream (the one given last). The device
 * current at construction is made current again for each of them. Move-only; copying needs a
 * stream: `device_buffer copy{other, stream}`.
 */
class device_buffer {
  using any_resource = cuda::mr::any_resource<cuda::mr::device_accessible>;

 public:
  device_buffer(device_buffer const& other)            = delete;
  device_buffer& operator=(device_buffer const& other) = delete;

  /// An empty buffer using the current device resource.
  device_buffer() : _mr{mr::get_current_device_resource_ref()} {}

  /// `size` uninitialized bytes.
  explicit device_buffer(std::size_t size,
                         cuda::stream_ref stream,
                         any_resource mr = mr::get_current_device_resource_ref())
    : device_buffer{size, rmm::CUDA_ALLOCATION_ALIGNMENT, stream, std::move(mr)}
  {
  }

  /// `size` uninitialized bytes aligned to `alignment` (a power of two).
  explicit device_buffer(std::size_t size,
                         std::size_t alignment,
                         cuda::stream_ref stream,
                         any_resource mr = mr::get_current_device_resource_ref())
    : _alignment{alignment}, _stream{stream}, _mr{std::move(mr)}
  {
    RMM_EXPECTS(rmm::is_supported_alignment(alignment), "Unsupported alignment", rmm::invalid_argument);
    cuda_set_device_raii dev{_device};
    allocate_async(size);
  }

  /// A copy of `size` bytes at `source_data` (host or device memory).
  device_buffer(void const* source_data,
                std::size_t size,
                cuda::stream_ref stream,
                any_resource mr = mr::get_current_device_resource_ref())
    : device_buffer{source_data, size, rmm::CUDA_ALLOCATION_ALIGNMENT, stream, std::move(mr)}
  {
  }

  /// A copy of `size` bytes at `source_data`, aligned to `alignment`.
  explicit device_buffer(void const* source_data,
                         std::size_t size,
                         std::size_t alignment,
                         cuda::stream_ref stream,
                         any_resource mr = mr::get_current_device_resource_ref())
    : device_buffer{size, alignment, stream, std::move(mr)}
  {
    cuda_set_device_raii dev{_device};
    copy_async(source_data, size);
  }

  /// A deep copy of `other` (its size, not its capacity), made on `stream`.
  device_buffer(device_buffer const& other,
                cuda::stream_ref stream,
                any_resource mr = mr::get_current_device_resource_ref())
    : device_buffer{other.data(), other.size(), other.alignment(), stream, std::move(mr)}
  {
  }

  /// Takes `other`'s memory, stream, resource and device; `other` is left empty, with alignment 1
  /// and no device (as in RMM: a later allocation of it records the device then current).
  device_buffer(device_buffer&& other) noexcept
    : _data{other._data},
      _size{other._size},
      _alignment{other._alignment},
      _capacity{other._capacity},
      _stream{other._stream},
      _mr{other._mr},
      _device{other._device}
  {
    other._data      = nullptr;
    other._size      = 0;
    other._alignment = 1;
    other._capacity  = 0;
    other.set_stream(cuda::stream_ref{cudaStream_t{nullptr}});
    other._device = cuda_device_id{-1};  // owns nothing: its destructor switches no device
  }

  /// Frees this buffer's memory (on its stream, with its device current), then takes `other`'s
  /// memory, stream, resource and device; `other` is left empty.
  device_buffer& operator=(device_buffer&& other) noexcept
  {
    if (&other != this) {
      cuda_set_device_raii dev{_device};
      deallocate_async();
      _data      = other._data;
      _size      = other._size;
      _alignment = other._alignment;
      _capacity  = other._capacity;
      set_stream(other.stream());
      _mr     = other._mr;
      _device = other._device;

      other._data      = nullptr;
      other._size      = 0;
      other._alignment = 1;
      other._capacity  = 0;
      other.set_stream(cuda::stream_ref{cudaStream_t{nullptr}});
      other._device = cuda_device_id{-1};
    }
    return *this;
  }

  /// Frees the memory on the buffer's stream.
  ~device_buffer() noexcept
  {
    cuda_set_device_raii dev{_device};
    deallocate_async();
  }

  /// Makes room for `new_capacity` bytes (contents kept); never shrinks. Uses `stream` from now on.
  void reserve(std::size_t new_capacity, cuda::stream_ref stream)
  {
    set_stream(stream);
    if (new_capacity > capacity()) {
      auto const old_size = size();
      reallocate(new_capacity);
      _size = old_size;
    }
  }

  /// Sets the size to `new_size`, keeping the contents up to the smaller size. Growing past the
  /// capacity reallocates to exactly `new_size`; shrinking keeps the memory. Uses `stream`.
  void resize(std::size_t new_size, cuda::stream_ref stream)
  {
    set_stream(stream);
    if (new_size <= capacity()) {
      _size = new_size;
    } else {
      reallocate(new_size);
    }
  }

  /// Makes the capacity equal to the size (reallocating and copying). Uses `stream`.
  void shrink_to_fit(cuda::stream_ref stream)
  {
    set_stream(stream);
    if (size() != capacity()) {
      // The copy is made with this buffer's device current, so it records that device too.
      cuda_set_device_raii dev{_device};
      auto tmp = device_buffer{*this, stream, _mr};
      std::swap(tmp, *this);
    }
  }

  [[nodiscard]] void const* data() const noexcept { return _data; }
  void* data() noexcept { return _data; }
  [[nodiscard]] std::size_t size() const noexcept { return _size; }
  [[nodiscard]] std::int64_t ssize() const noexcept
  {
    assert(size() < static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()) &&
           "Size overflows signed integer");
    return static_cast<std::int64_t>(size());
  }
  [[nodiscard]] bool is_empty() const noexcept { return 0 == size(); }
  [[nodiscard]] std::size_t capacity() const noexcept { return _capacity; }
  [[nodiscard]] std::size_t alignment() const noexcept { return _alignment; }
  [[nodiscard]] cuda::stream_ref stream() const noexcept { return _stream; }
  /// Sets the stream later operations (and the free) use.
  void set_stream(cuda::stream_ref stream) noexcept { _stream = stream; }
  /// The resource the memory comes from.
  [[nodiscard]] rmm::device_async_resource_ref memory_resource() noexcept
  {
    return rmm::device_async_resource_ref{_mr};
  }

 private:
  void* _data{nullptr};
  std::size_t _size{};
  std::size_t _alignment{rmm::CUDA_ALLOCATION_ALIGNMENT};
  std::size_t _capacity{};
  cuda::stream_ref _stream{cudaStream_t{nullptr}};
  any_resource _mr;
  cuda_device_id _device{get_current_cuda_device()};

  void allocate_async(std::size_t bytes)
  {
    _size     = bytes;
    _capacity = bytes;
    _data     = (bytes > 0) ? _mr.allocate(stream(), bytes, _alignment) : nullptr;
  }

  void deallocate_async() noexcept
  {
    if (capacity() > 0) { _mr.deallocate(stream(), data(), capacity(), _alignment); }
    _size      = 0;
    _alignment = 1;
    _capacity  = 0;
    _data      = nullptr;
  }

  void copy_async(void const* source, std::size_t bytes)
  {
    if (bytes > 0) {
      RMM_EXPECTS(nullptr != source, "Invalid copy from nullptr.");
      RMM_EXPECTS(nullptr != _data, "Invalid copy to nullptr.");
      check_copy_source(source, bytes);
      RMM_CUDA_TRY(rmm::detail::memcpy_async(_data, source, bytes, stream()));
    }
  }

  /// rmm-rs: the driver would read an address that is neither device, managed nor pinned memory
  /// as host memory, and crash on one that is not mapped; such a source is refused first with
  /// rmm::logic_error (the bytes are asked of the driver and of the kernel, not read).
  static void check_copy_source(void const* source, std::size_t bytes)
  {
    char reason[256];
    auto const n = rmm_rs_check_copy_source(reinterpret_cast<std::uintptr_t>(source), bytes, reason, sizeof reason);
    if (n != 0) { throw rmm::logic_error{"device_buffer: " + std::string{reason, n}}; }
  }

  /// Replaces the memory by `new_capacity` bytes holding the current contents (size
  /// `new_capacity` afterwards): allocated, copied and the old memory freed with this buffer's
  /// device current; the new buffer takes over by move assignment, device included.
  void reallocate(std::size_t new_capacity)
  {
    cuda_set_device_raii dev{_device};
    auto tmp = device_buffer{new_capacity, _alignment, stream(), _mr};
    if (size() > 0) { RMM_CUDA_TRY(rmm::detail::memcpy_async(tmp.data(), data(), size(), stream())); }
    *this = std::move(tmp);
  }
};

}  // namespace rmm
