/*
 * rmm-rs: rmm::mr::virtual_pool_memory_resource, the Rust virtual-memory pool of rmm-rs (a
 * coalescing pool over one reserved range of device addresses, backed by physical memory mapped
 * in granules on demand). Not in RMM 26.10: an addition of rmm-rs.
 */
#pragma once

#include <rmm/cuda_device.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/detail/capture_members.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace rmm::mr {

/**
 * @brief A pool of device memory that grows in one reserved address range and gives memory back
 * without moving an address.
 *
 * One range of `maximum_pool_size` bytes of device addresses is reserved at construction
 * (`cuMemAddressReserve`); physical memory is created and mapped in granules (the device's
 * recommended granularity) right after the pool's free tail as the pool grows, so the tail and the
 * new memory are one block. release() and release_above() unmap whole free granules and keep
 * their addresses: the next growth maps the same addresses again. On top sits the same
 * stream-ordered pool as pool_memory_resource's. Copies share the pool; its memory and its
 * reservation go back to the device when the last copy goes.
 *
 * @code
 * rmm::mr::virtual_pool_memory_resource mr{std::size_t{64} << 30};  // 64 GiB of addresses
 * rmm::mr::set_current_device_resource_ref(mr);
 * @endcode
 */
class virtual_pool_memory_resource final
  : public detail::rust_resource<virtual_pool_memory_resource,
                                 detail::shared_rust_state<rmm_rs::PoolResource>,
                                 cuda::mr::device_accessible> {
 public:
  /// The less common settings of a virtual pool.
  struct options {
    options() noexcept {}  // user-provided: braces never pick this over a list of peers
    /// The device whose memory is mapped (the current device when not given).
    std::optional<cuda_device_id> device{};
    /// Other devices given read and write access to the memory (each must be able to access the
    /// device's memory: cudaDeviceCanAccessPeer).
    std::vector<cuda_device_id> peer_devices{};
    /// Bytes of one granule, the unit of every map and unmap: a power of two and a multiple of the
    /// device's recommended granularity; 0 for that granularity.
    std::size_t granularity{0};
    /// Create the memory exportable as POSIX file descriptors (export_posix_fd()), where the
    /// device supports it.
    bool export_posix_fd{false};
  };

  /**
   * @param maximum_pool_size bytes of addresses reserved: the most the pool may grow to (rounded up
   * to whole granules)
   * @param initial_pool_size bytes mapped at once (rounded up to whole granules; default none)
   * @param peer_devices other devices given access to the memory
   * @throws rmm::logic_error if the device does not support virtual memory management, a peer
   * cannot access the device's memory, or the initial size exceeds the maximum
   * @throws rmm::cuda_error if there is no CUDA driver or a driver call fails
   * @throws rmm::out_of_memory if the initial pool cannot be mapped
   */
  explicit virtual_pool_memory_resource(std::size_t maximum_pool_size,
                                        std::optional<std::size_t> initial_pool_size = std::nullopt,
                                        std::vector<cuda_device_id> const& peer_devices = {})
    : virtual_pool_memory_resource{maximum_pool_size, initial_pool_size, with_peers(peer_devices)}
  {
  }

  /**
   * @param maximum_pool_size bytes of addresses reserved (see above)
   * @param initial_pool_size bytes mapped at once (see above)
   * @param opts the device, the peers, the granularity and the export of the memory
   * @throws as the constructor above; rmm::logic_error also for a granularity the device refuses
   */
  virtual_pool_memory_resource(std::size_t maximum_pool_size,
                               std::optional<std::size_t> initial_pool_size,
                               options const& opts)
    : rust_resource{make(maximum_pool_size, initial_pool_size, opts)}
  {
  }

  /**
   * @brief Unmaps the physical memory of every whole free granule; the addresses stay reserved.
   *
   * Every stream is synchronised first; only memory free before that is unmapped.
   * @return the bytes unmapped
   * @throws rmm::cuda_error if a driver call fails
   */
  std::size_t release() { return release_above(0); }

  /**
   * @brief Unmaps whole free granules, lowest addresses first, until the pool holds at most
   * `bytes_to_keep` bytes or no whole free granule is left (see release()).
   *
   * For a program that lends its memory to another library or process and takes it back later:
   * every pointer it kept stays valid once the pool grows again.
   * @return the bytes unmapped
   * @throws rmm::cuda_error if a driver call fails
   */
  std::size_t release_above(std::size_t bytes_to_keep)
  {
    return detail::query(this->live_handle().release_above(bytes_to_keep));
  }

  /// Bytes of physical memory mapped into the reservation.
  [[nodiscard]] std::size_t mapped_bytes() const noexcept
  {
    return detail::query_or_zero(handle().mapped_bytes());
  }

  /// Bytes of addresses reserved: the most the pool may grow to.
  [[nodiscard]] std::size_t reserved_bytes() const noexcept
  {
    return detail::query_or_zero(handle().reserved_bytes());
  }

  /// Bytes of one granule: the unit of every map and unmap.
  [[nodiscard]] std::size_t granularity() const noexcept
  {
    return detail::query_or_zero(handle().granularity());
  }

  /// Bytes the pool holds (handed out and free).
  [[nodiscard]] std::size_t pool_size() const noexcept
  {
    return detail::query_or_zero(handle().pool_size());
  }

  /**
   * @brief A POSIX file descriptor for the physical memory of the granule holding `ptr`, for
   * another process to import (cuMemImportFromShareableHandle) and map; the caller closes it.
   * @throws rmm::logic_error if the memory was not made exportable (options::export_posix_fd) or
   * `ptr` is not in a mapped granule of this pool
   * @throws rmm::cuda_error if the driver call fails
   */
  [[nodiscard]] int export_posix_fd(void const* ptr) const
  {
    return static_cast<int>(detail::query(
      this->live_handle().export_posix_fd(reinterpret_cast<std::uintptr_t>(ptr))));
  }

  /**
   * @name Allocation during CUDA stream capture (an addition of rmm-rs, not in RMM 26.10)
   *
   * While a stream is captured into a CUDA graph, the graph keeps the addresses it was captured
   * with and uses them at every replay. After begin_capture(stream), the stream's allocations
   * come from memory private to that capture, which no other stream, no eager work and no other
   * capture gets until release_capture(); nothing the pool does for the stream is illegal during
   * capture (no event, no synchronisation; new memory is taken with the thread's capture mode
   * relaxed). Blocks handed out before the capture and freed during it are kept out of use until
   * the release as well.
   *
   * @code
   * cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
   * auto id = pool.begin_capture(s);
   * void* p = pool.allocate(s, bytes);  // ... kernels on s ...
   * pool.deallocate(s, p, bytes);
   * cudaStreamEndCapture(s, &graph);
   * pool.end_capture(s);
   * // instantiate, replay ...; once every graph and executable graph of it is destroyed:
   * pool.release_capture(id);
   * @endcode
   * @{
   */

  /**
   * @brief Announces that `stream`, whose capture has begun, allocates from memory private to
   * its capture (call it once per stream of the capture that allocates or frees).
   * @return the capture's id (CUDA's unique id of the capture), the key of release_capture()
   * @throws rmm::logic_error if the stream is not being captured
   * @throws rmm::cuda_error if there is no CUDA driver or the driver call fails
   */
  [[nodiscard]] std::uint64_t begin_capture(cuda::stream_ref stream)
  {
    return detail::capture_begin(this->live_handle(), stream);
  }

  /// @brief The capture on `stream` ended: its calls go back to the shared memory (the capture's
  /// private memory is kept until release_capture()). A stream never marked is left alone.
  void end_capture(cuda::stream_ref stream) { detail::capture_end(this->live_handle(), stream); }

  /**
   * @brief Gives capture `id`'s private memory back to the pool, once every graph captured with
   * it and every executable graph made from those is destroyed; work queued before is waited for
   * before the memory serves another stream.
   * @throws rmm::logic_error, with nothing changed, for an unknown id, while a stream is still
   * marked for the capture (end_capture() first) or while blocks it allocated are live
   */
  void release_capture(std::uint64_t id) { detail::capture_release(this->live_handle(), id); }

  /// @brief The ids of the captures whose private memory the pool keeps.
  [[nodiscard]] std::vector<std::uint64_t> captures() const { return detail::capture_ids(this->live_handle()); }

  /// @brief Bytes of private memory the pool keeps for capture `id` (0 for an unknown one).
  [[nodiscard]] std::size_t capture_pool_size(std::uint64_t id) const
  {
    return detail::capture_pool_bytes(this->live_handle(), id);
  }

  /** @} */

 private:
  static options with_peers(std::vector<cuda_device_id> const& peers)
  {
    options opts;
    opts.peer_devices = peers;
    return opts;
  }

  static rust::Box<rmm_rs::PoolResource> make(std::size_t maximum_pool_size,
                                              std::optional<std::size_t> initial_pool_size,
                                              options const& opts)
  {
    RMM_EXPECTS(maximum_pool_size > 0, "Error, maximum pool size of a virtual pool must be positive");
    RMM_EXPECTS(initial_pool_size.value_or(0) <= maximum_pool_size,
                "Initial pool size exceeds the maximum pool size!");
    std::vector<std::int32_t> peers;
    peers.reserve(opts.peer_devices.size());
    for (auto const& p : opts.peer_devices) { peers.push_back(p.value()); }
    return rmm_rs::new_virtual_pool_memory_resource(
      maximum_pool_size,
      initial_pool_size.value_or(0),
      opts.device.value_or(cuda_device_id{0}).value(),
      opts.device.has_value(),
      rust::Slice<std::int32_t const>{peers.data(), peers.size()},
      opts.granularity,
      opts.export_posix_fd);
  }
};

static_assert(cuda::mr::resource_with<virtual_pool_memory_resource, cuda::mr::device_accessible>,
              "virtual_pool_memory_resource does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
