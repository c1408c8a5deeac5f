/*
 * rmm-rs: rmm::mr::history_resource_adaptor, the Rust allocation-history adaptor of rmm-rs.
 * Not in RMM 26.10: an addition of rmm-rs. It records the allocations and frees that pass through
 * and writes snapshots in the pickle layout of PyTorch's memory viewer
 * (torch.cuda.memory._snapshot(); open the file at pytorch.org/memory_viz).
 */
#pragma once

#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rmm::mr {

/**
 * @brief Records every allocate and free of its upstream (address, size, stream, device and time)
 * once record_history() is called, and takes snapshots of the pool below it.
 *
 * A snapshot holds the pool's segments (the chunks it took from its upstream, each tiled by its
 * blocks, handed out or free) and the recorded trace, written as a Python pickle that
 * `torch.cuda._memory_viz` and pytorch.org/memory_viz read. Until recording starts an allocation
 * costs one relaxed atomic load more than the upstream's. With dump_on_oom(), an allocation that
 * runs out of memory writes the snapshot and an SVG memory map of the pool into a folder, and the
 * rmm::out_of_memory's message names both files. Copies share the recorder.
 *
 * @code
 * rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, std::size_t{1} << 30};
 * rmm::mr::history_resource_adaptor history{pool};
 * history.record_history();
 * // ... allocate through history ...
 * history.dump_snapshot("snapshot.pickle");
 * @endcode
 */
class history_resource_adaptor final
  : public detail::rust_resource<history_resource_adaptor,
                                 detail::shared_rust_state<rmm_rs::AdaptorResource>,
                                 cuda::mr::device_accessible> {
 public:
  /// The events kept when record_history() is given no bound.
  static constexpr std::size_t default_max_entries = std::size_t{1} << 20;

  template <class Upstream, std::enable_if_t<detail::is_upstream_for_v<Upstream, history_resource_adaptor>, int> = 0>
  explicit history_resource_adaptor(Upstream&& upstream)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)}, rmm_rs::new_history_adaptor}
  {
  }

  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept { return upstream_ref(); }

  /**
   * @brief Starts (`enabled`) or stops recording.
   * @param max_entries the most events kept; the oldest are dropped first
   * @param clear_history forget the events recorded so far
   * @param stacks record each event's native call stack (resolved at once: about a millisecond
   * per event; C++ names as the symbol table has them)
   * @throws rmm::logic_error for `max_entries` 0
   */
  void record_history(bool enabled            = true,
                      std::size_t max_entries = default_max_entries,
                      bool clear_history      = false,
                      bool stacks             = false)
  {
    detail::check(live_handle().history_record(enabled, max_entries, clear_history, stacks));
  }

  /// True while events are recorded.
  [[nodiscard]] bool is_recording() const noexcept
  {
    return detail::query_or_zero(handle().history_is_recording()) != 0;
  }

  /// The number of events kept.
  [[nodiscard]] std::size_t history_length() const noexcept
  {
    return detail::query_or_zero(handle().history_length());
  }

  /// The snapshot as pickle bytes (what dump_snapshot() writes).
  [[nodiscard]] std::vector<std::uint8_t> snapshot() const
  {
    ::rust::Vec<std::uint8_t> bytes;
    detail::check(live_handle().history_snapshot(bytes));
    return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
  }

  /**
   * @brief Writes the snapshot's pickle to `path`.
   * @throws rmm::logic_error if the file cannot be written
   */
  void dump_snapshot(std::string const& path) const
  {
    detail::check(live_handle().history_dump_snapshot(path));
  }

  /// Writes the snapshot and the memory map into the folder `dir` whenever an allocation runs out
  /// of memory; std::nullopt stops it.
  void dump_on_oom(std::optional<std::string> const& dir)
  {
    detail::check(live_handle().history_dump_on_oom(dir.value_or(std::string{})));
  }
};

static_assert(cuda::mr::resource_with<history_resource_adaptor, cuda::mr::device_accessible>,
              "history_resource_adaptor does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
