/*
 * rmm-rs: rmm::mr::arena_memory_resource, the Rust arena allocator of rmm-rs (a global arena
 * taken from an upstream at construction, per-thread and per-stream arenas, thread-safe).
 */
#pragma once

#include <rmm/mr/detail/arena_memory_resource_impl.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstddef>
#include <optional>
#include <utility>

namespace rmm::mr {

/**
 * @brief An arena allocator: one range of `arena_size` bytes taken from the upstream at
 * construction, split into superblocks that each thread holds per stream, so threads on their
 * own streams allocate without meeting on a lock. Requests over 1 MiB come from the global
 * arena directly.
 *
 * The upstream is taken by value as by `pool_memory_resource`. Copies share the arena; its memory
 * returns to the upstream when the last copy goes.
 */
class arena_memory_resource final
  : public detail::rust_resource<arena_memory_resource,
                                 detail::shared_rust_state<rmm_rs::ArenaResource>,
                                 cuda::mr::device_accessible> {
 public:
  /**
   * @param upstream where the global arena is taken from
   * @param arena_size bytes of the global arena (rounded down to 256); by default half of the
   * current device's free memory
   * @param dump_log_on_failure if true, a failed allocation appends the arenas' state to
   * `rmm_arena_memory_dump.log`
   * @throws rmm::logic_error if the arena is smaller than one superblock (1 MiB)
   * @throws rmm::out_of_memory if the upstream cannot provide the arena
   */
  template <class Upstream, std::enable_if_t<detail::is_upstream_for_v<Upstream, arena_memory_resource>, int> = 0>
  explicit arena_memory_resource(Upstream&& upstream,
                                 std::optional<std::size_t> arena_size = std::nullopt,
                                 bool dump_log_on_failure              = false)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)},
                    make,
                    arena_size,
                    dump_log_on_failure}
  {
  }

 private:
  static rust::Box<rmm_rs::ArenaResource> make(rmm_rs::AnyResource const& upstream,
                                              std::optional<std::size_t> arena_size,
                                              bool dump_log_on_failure)
  {
    return rmm_rs::new_arena_memory_resource(
      upstream, arena_size.value_or(0), arena_size.has_value(), dump_log_on_failure);
  }
};

static_assert(cuda::mr::resource_with<arena_memory_resource, cuda::mr::device_accessible>,
              "arena_memory_resource does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
