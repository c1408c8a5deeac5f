/*
 * rmm-rs: rmm::mr::binning_memory_resource, the Rust binning resource of rmm-rs (each request
 * goes to the smallest bin that holds it, larger ones to the upstream).
 */
#pragma once

#include <rmm/error.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/mr/fixed_size_memory_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

namespace rmm::mr {

/**
 * @brief Allocates memory from upstream resources associated with bin sizes.
 *
 * Copies share one resource and its bins. Requests for an alignment above 256 bytes go to the
 * upstream whatever their size.
 */
class binning_memory_resource
  : public detail::rust_resource<binning_memory_resource,
                                 detail::shared_rust_state<rmm_rs::BlockResource>,
                                 cuda::mr::device_accessible> {
 public:
  /**
   * @brief No bins: every request goes to `upstream` until bins are added with `add_bin`.
   */
  template <class Upstream,
            std::enable_if_t<detail::is_upstream_for_v<Upstream, binning_memory_resource>, int> = 0>
  explicit binning_memory_resource(Upstream&& upstream)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)}, make, 0, 0, false}
  {
  }

  /**
   * @brief Bins backed by fixed_size_memory_resource of sizes 2^i for i in
   * [min_size_exponent, max_size_exponent].
   * @throws rmm::logic_error if an exponent is outside 0..62
   */
  template <class Upstream,
            std::enable_if_t<detail::is_upstream_for_v<Upstream, binning_memory_resource>, int> = 0>
  binning_memory_resource(Upstream&& upstream,
                          int8_t min_size_exponent,  // NOLINT(bugprone-easily-swappable-parameters)
                          int8_t max_size_exponent)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)},
                    make,
                    min_size_exponent,
                    max_size_exponent,
                    true}
  {
  }

  ~binning_memory_resource() = default;

  /// @briefreturn{device_async_resource_ref to the upstream resource}
  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    return upstream_ref();
  }

  /**
   * @brief Adds a bin for allocations of up to `allocation_size` bytes (rounded up to 256) above
   * the next smaller bin: `bin_resource` if given (it must outlive this resource), else a new
   * fixed_size_memory_resource over the upstream. Nothing changes if a bin of that size exists.
   * Not to be called while other threads allocate from this resource.
   *
   * @throws rmm::logic_error if `allocation_size` is 0
   * @throws rmm::out_of_memory if a new fixed-size bin cannot get its first chunk
   */
  void add_bin(std::size_t allocation_size,
               std::optional<device_async_resource_ref> bin_resource = std::nullopt)
  {
    if (bin_resource.has_value()) {
      detail::upstream_resource const bin{*bin_resource};
      detail::check(live_handle().add_bin_resource(allocation_size, bin.handle()));
    } else {
      detail::check(live_handle().add_bin(allocation_size));
    }
  }

 private:
  static rust::Box<rmm_rs::BlockResource> make(rmm_rs::AnyResource const& upstream,
                                              int8_t min_size_exponent,
                                              int8_t max_size_exponent,
                                              bool has_range)
  {
    return rmm_rs::new_binning_memory_resource(
      upstream, min_size_exponent, max_size_exponent, has_range);
  }
};

static_assert(cuda::mr::resource_with<binning_memory_resource, cuda::mr::device_accessible>,
              "binning_memory_resource does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
