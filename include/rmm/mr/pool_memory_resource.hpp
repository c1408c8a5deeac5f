/*
 * rmm-rs: rmm::mr::pool_memory_resource, the Rust pool of rmm-rs (a coalescing sub-allocator
 * over an upstream resource, stream-ordered, thread-safe). release() and its allocation during
 * CUDA stream capture (begin_capture() and the members after it) are additions of rmm-rs, not in
 * RMM 26.10.
 */
#pragma once

#include <rmm/aligned.hpp>
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
 * @brief A pool of device memory taken from an upstream resource in large chunks.
 *
 * The upstream is taken by value: any device-accessible cuda::mr resource, one of ours (then the
 * Rust pool uses the Rust upstream directly; another pool makes a pool over that pool), a user's
 * resource, a resource_ref or an any_resource; a pointer is taken as a reference to a resource that must outlive the pool.
 * Copies of a pool share it; its memory returns to the upstream when the last copy goes.
 */
class pool_memory_resource final
  : public detail::rust_resource<pool_memory_resource,
                                 detail::shared_rust_state<rmm_rs::PoolResource>,
                                 cuda::mr::device_accessible> {
 public:
  /**
   * @param upstream where the pool takes its chunks from
   * @param initial_pool_size bytes taken at once (a multiple of 256)
   * @param maximum_pool_size the most the pool may grow to (a multiple of 256; default unlimited)
   * @throws rmm::logic_error if a size is not a multiple of 256 or initial exceeds maximum
   * @throws rmm::out_of_memory if the initial pool cannot be allocated
   */
  template <class Upstream, std::enable_if_t<detail::is_upstream_v<Upstream>, int> = 0>
  explicit pool_memory_resource(Upstream&& upstream,
                                std::size_t initial_pool_size,
                                std::optional<std::size_t> maximum_pool_size = std::nullopt)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)},
                    make,
                    initial_pool_size,
                    maximum_pool_size}
  {
  }

  /// The upstream given at construction.
  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    return upstream_ref();
  }

  /// Bytes taken from the upstream (handed out and free).
  [[nodiscard]] std::size_t pool_size() const noexcept { return detail::query_or_zero(handle().pool_size()); }

  /**
   * @brief Gives every chunk whose blocks are all free back to the upstream (an addition of
   * rmm-rs, not in RMM 26.10; what PyTorch's `torch.cuda.empty_cache()` does for its cache).
   *
   * Every stream is synchronised first (only where some chunk is wholly free), and only blocks
   * freed before that go back: work queued on a stream may still use the blocks freed on it.
   * Chunks holding a live block stay whole; the pool grows again as it needs. Where the
   * synchronisation fails (while a stream is being captured, or without a CUDA driver for an
   * upstream declared device accessible) nothing goes back.
   * @return the bytes given back (pool_size() drops by as much)
   * @throws rmm::logic_error for a moved-from pool; the upstream's error if it refuses a free
   * (that chunk and those after it stay in the pool)
   */
  std::size_t release() { return detail::query(this->live_handle().release()); }

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
   * before the memory serves another stream. Destroying those graphs first is the caller's duty:
   * the pool cannot see graphs, and a graph launched after the release would write memory that
   * other streams are handed.
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
  static rust::Box<rmm_rs::PoolResource> make(rmm_rs::AnyResource const& upstream,
                                              std::size_t initial_pool_size,
                                              std::optional<std::size_t> maximum_pool_size)
  {
    RMM_EXPECTS(rmm::is_aligned(initial_pool_size, rmm::CUDA_ALLOCATION_ALIGNMENT),
                "Error, Initial pool size required to be a multiple of 256 bytes");
    RMM_EXPECTS(rmm::is_aligned(maximum_pool_size.value_or(0), rmm::CUDA_ALLOCATION_ALIGNMENT),
                "Error, Maximum pool size required to be a multiple of 256 bytes");
    RMM_EXPECTS(initial_pool_size <= maximum_pool_size.value_or(~std::size_t{0}),
                "Initial pool size exceeds the maximum pool size!");
    return rmm_rs::new_pool_memory_resource(upstream,
                                            initial_pool_size,
                                            maximum_pool_size.value_or(0),
                                            maximum_pool_size.has_value());
  }
};

static_assert(cuda::mr::resource_with<pool_memory_resource, cuda::mr::device_accessible>,
              "pool_memory_resource does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
