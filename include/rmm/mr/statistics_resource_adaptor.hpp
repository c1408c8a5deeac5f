/*
 * rmm-rs: rmm::mr::statistics_resource_adaptor, the Rust statistics adaptor of rmm-rs.
 */
#pragma once

#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <utility>

namespace rmm::mr {

/**
 * @brief Counts bytes and allocations (current, peak, total) of what passes through to the
 * upstream. Counters can be pushed and popped to measure a region of code. Copies share counters.
 */
class statistics_resource_adaptor final
  : public detail::rust_resource<statistics_resource_adaptor,
                                 detail::shared_rust_state<rmm_rs::AdaptorResource>,
                                 cuda::mr::device_accessible> {
 public:
  /// Current value, peak value and running total of a quantity.
  struct counter {
    std::int64_t value{0};  ///< Current value
    std::int64_t peak{0};   ///< Largest value seen
    std::int64_t total{0};  ///< Sum of all increments

    /// Adds `val` (may be negative) and updates peak and total.
    counter& operator+=(std::int64_t val)
    {
      value += val;
      total += val;
      peak = std::max(value, peak);
      return *this;
    }
    /// Subtracts `val`.
    counter& operator-=(std::int64_t val)
    {
      value -= val;
      return *this;
    }
    /// Folds in the counter of a nested (pushed) region, as RMM does on pop.
    void add_counters_from_tracked_sub_block(counter const& val)
    {
      peak = std::max(value + val.peak, peak);
      value += val.value;
      total += val.total;
    }
  };

  /// Shared-reader lock type of the counter stack (RMM's; the stack itself lives in Rust).
  using read_lock_t = std::shared_lock<std::shared_mutex>;
  /// Exclusive-writer lock type of the counter stack (RMM's).
  using write_lock_t = std::unique_lock<std::shared_mutex>;

  template <class Upstream, std::enable_if_t<detail::is_upstream_for_v<Upstream, statistics_resource_adaptor>, int> = 0>
  explicit statistics_resource_adaptor(Upstream&& upstream)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)},
                    rmm_rs::new_statistics_adaptor}
  {
  }

  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    return upstream_ref();
  }

  /// Bytes allocated: current, peak and total.
  [[nodiscard]] counter get_bytes_counter() const noexcept { return convert(counters().bytes); }
  /// Number of allocations: current, peak and total.
  [[nodiscard]] counter get_allocations_counter() const noexcept { return convert(counters().allocations); }

  /// Starts a new region: counters restart from zero; returns the (bytes, allocations) counters
  /// of the enclosing region as they were.
  std::pair<counter, counter> push_counters()
  {
    rmm_rs::CounterPair enclosing{};
    detail::check(live_handle().statistics_push_counters(enclosing));
    return convert(enclosing);
  }

  /// Ends the innermost region, folding it into the enclosing one; returns its counters.
  /// @throws rmm::out_of_range when there is no pushed region
  std::pair<counter, counter> pop_counters()
  {
    rmm_rs::CounterPair popped{};
    detail::check(live_handle().statistics_pop_counters(popped));
    return convert(popped);
  }

 private:
  /// The counters of the current region (zero on a moved-from adaptor).
  [[nodiscard]] rmm_rs::CounterPair counters() const noexcept
  {
    rmm_rs::CounterPair c{};
    if (handle().statistics_counters(c).kind != rmm_rs::ErrorKind::Ok) { c = {}; }
    return c;
  }
  static counter convert(rmm_rs::Counter const& c) noexcept { return counter{c.value, c.peak, c.total}; }
  static std::pair<counter, counter> convert(rmm_rs::CounterPair const& p) noexcept
  {
    return {convert(p.bytes), convert(p.allocations)};
  }
};

static_assert(cuda::mr::resource_with<statistics_resource_adaptor, cuda::mr::device_accessible>,
              "statistics_resource_adaptor does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
