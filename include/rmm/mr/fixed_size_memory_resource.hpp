/*
 * rmm-rs: rmm::mr::fixed_size_memory_resource, the Rust fixed-size resource of rmm-rs (blocks of
 * one size from upstream chunks, stream-ordered, thread-safe).
 */
#pragma once

#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>
#include <utility>

namespace rmm::mr {

/**
 * @brief Hands out blocks of one size, taken from the upstream `blocks_to_preallocate` at a time.
 *
 * Requests larger than the block size throw rmm::out_of_memory. Blocks are 256-byte aligned;
 * larger alignments throw rmm::bad_alloc. Copies share one resource; its chunks return to the
 * upstream when the last copy goes.
 */
class fixed_size_memory_resource
  : public detail::rust_resource<fixed_size_memory_resource,
                                 detail::shared_rust_state<rmm_rs::BlockResource>,
                                 cuda::mr::device_accessible> {
 public:
  static constexpr std::size_t default_block_size = 1 << 20;  ///< Default allocation block size

  /// Default number of blocks to allocate from the upstream at once (and when growing)
  static constexpr std::size_t default_blocks_to_preallocate = 128;

  /**
   * @param upstream where the blocks come from
   * @param block_size the size of every block (rounded up to 256)
   * @param blocks_to_preallocate blocks taken at once, at construction and at each growth
   * @throws rmm::logic_error if a size is 0 or the chunk size overflows
   * @throws rmm::out_of_memory if the first chunk cannot be allocated
   */
  template <class Upstream,
            std::enable_if_t<detail::is_upstream_for_v<Upstream, fixed_size_memory_resource>, int> = 0>
  explicit fixed_size_memory_resource(Upstream&& upstream,
                                      std::size_t block_size            = default_block_size,
                                      std::size_t blocks_to_preallocate = default_blocks_to_preallocate)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)},
                    make,
                    block_size,
                    blocks_to_preallocate}
  {
  }

  ~fixed_size_memory_resource() = default;

  /// @briefreturn{device_async_resource_ref to the upstream resource}
  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    return upstream_ref();
  }

  /// @briefreturn{the size in bytes of every block (the block size asked for, rounded up to 256)}
  [[nodiscard]] std::size_t get_block_size() const noexcept
  {
    return detail::query_or_zero(handle().block_size());
  }

 private:
  static rust::Box<rmm_rs::BlockResource> make(rmm_rs::AnyResource const& upstream,
                                              std::size_t block_size,
                                              std::size_t blocks_to_preallocate)
  {
    return rmm_rs::new_fixed_size_memory_resource(upstream, block_size, blocks_to_preallocate);
  }
};

static_assert(cuda::mr::resource_with<fixed_size_memory_resource, cuda::mr::device_accessible>,
              "fixed_size_memory_resource does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
