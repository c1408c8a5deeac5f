/*
 * rmm-rs: RMM 26.10's detail types of the arena allocator, `rmm::mr::detail::arena::{byte_span,
 * block, superblock, global_arena, arena, arena_cleaner}` with their free functions, so that code
 * written against them compiles and behaves as with RMM. They are plain C++ over address ranges
 * taken from any `cuda::mr` resource, written for this project; `rmm::mr::arena_memory_resource`
 * does not use them (its algorithm lives in Rust, algorithms/src/arena/).
 *
 * Vocabulary: a byte_span is an address range; a block is a span handed out or free inside a
 * superblock; a superblock is a span of at least 1 MiB with its own address-ordered free list; the
 * global_arena owns the one upstream allocation and hands superblocks to per-thread `arena`s,
 * taking them back (merged with free neighbours) when they empty. Requests above 1 MiB go to the
 * global arena directly.
 */
#pragma once

#include <rmm/aligned.hpp>
#include <rmm/cuda_device.hpp>
#include <rmm/detail/error.hpp>
#include <rmm/detail/format.hpp>
#include <rmm/detail/logging_assert.hpp>
#include <rmm/error.hpp>
#include <rmm/logger.hpp>
#include <rmm/mr/detail/arena_spans.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

namespace rmm::mr::detail::arena {

/**
 * @brief Owns one allocation from the upstream, cut into superblocks that per-thread arenas take
 * and give back; serves requests above the superblock minimum itself. Thread-safe.
 */
class global_arena final {
 public:
  /**
   * @param upstream_mr where the arena's memory comes from
   * @param arena_size its size (rounded down to 256 bytes); default half the free device memory
   * @throws rmm::logic_error if the size is below the superblock minimum (1 MiB)
   */
  global_arena(cuda::mr::any_resource<cuda::mr::device_accessible> upstream_mr,
               std::optional<std::size_t> arena_size)
    : upstream_mr_{std::move(upstream_mr)}
  {
    auto const size = rmm::align_down(arena_size.has_value() ? *arena_size : default_size(),
                                      rmm::CUDA_ALLOCATION_ALIGNMENT);
    RMM_EXPECTS(size >= superblock::minimum_size, "Arena size smaller than minimum superblock size.");
    void* const p   = upstream_mr_.allocate_sync(size, rmm::CUDA_ALLOCATION_ALIGNMENT);
    upstream_block_ = block{p, size};
    superblocks_.insert(superblock{p, size});
  }

  global_arena(global_arena const&)                = delete;
  global_arena& operator=(global_arena const&)     = delete;
  global_arena(global_arena&&) noexcept            = delete;
  global_arena& operator=(global_arena&&) noexcept = delete;

  /// Gives the whole allocation back to the upstream.
  ~global_arena()
  {
    std::lock_guard<std::mutex> const lock{mtx_};
    upstream_mr_.deallocate_sync(
      upstream_block_.pointer(), upstream_block_.size(), rmm::CUDA_ALLOCATION_ALIGNMENT);
  }

  /// @briefreturn{true for sizes the global arena serves itself (above the superblock minimum)}
  static bool handles(std::size_t size) { return size > superblock::minimum_size; }

  /// A superblock holding `size` bytes (at most the minimum), cut from a larger empty one when it
  /// can be; an invalid superblock when none fits.
  superblock acquire(std::size_t size)
  {
    RMM_LOGGING_ASSERT(!handles(size));
    std::lock_guard<std::mutex> const lock{mtx_};
    return take_fitting(size);
  }

  /// Takes back `sblk`, merging it with empty neighbours.
  void release(superblock&& sblk)
  {
    RMM_LOGGING_ASSERT(sblk.is_valid());
    std::lock_guard<std::mutex> const lock{mtx_};
    give_back(std::move(sblk));
  }

  /// Takes back every one of `superblocks`, which is left empty.
  void release(std::set<superblock>& superblocks)
  {
    std::lock_guard<std::mutex> const lock{mtx_};
    while (!superblocks.empty()) {
      give_back(std::move(superblocks.extract(superblocks.begin()).value()));
    }
  }

  /// `size` bytes (above the superblock minimum) from a superblock kept here; null when none fits.
  [[nodiscard]] void* allocate_sync(std::size_t size)
  {
    RMM_LOGGING_ASSERT(handles(size));
    std::lock_guard<std::mutex> const lock{mtx_};
    superblock sblk = take_fitting(size);
    if (!sblk.is_valid()) { return nullptr; }
    block const blk = sblk.first_fit(size);
    superblocks_.insert(std::move(sblk));
    return blk.pointer();
  }

  /// Frees a block of `size` bytes after `stream`'s work; false when it is not in this arena.
  bool deallocate(cuda::stream_ref stream, void* ptr, std::size_t size)
  {
    RMM_LOGGING_ASSERT(handles(size));
    RMM_ASSERT_CUDA_SUCCESS_SAFE_SHUTDOWN(cudaStreamSynchronize(stream.get()));
    return deallocate_sync(ptr, size);
  }

  /// Frees a block of `bytes` bytes at once; false when it is not in a superblock kept here.
  bool deallocate_sync(void* ptr, std::size_t bytes)
  {
    std::lock_guard<std::mutex> const lock{mtx_};
    block const blk{ptr, bytes};
    auto const it = std::find_if(
      superblocks_.begin(), superblocks_.end(), [&](superblock const& s) { return s.contains(blk); });
    if (it == superblocks_.end()) { return false; }
    superblock sblk = std::move(superblocks_.extract(it).value());
    sblk.coalesce(blk);
    if (sblk.empty()) {
      give_back(std::move(sblk));
    } else {
      superblocks_.insert(std::move(sblk));
    }
    return true;
  }

  /// Writes the arena's size, its superblocks and their fragmentation to `logger` (RMM's lines).
  void dump_memory_log(std::shared_ptr<rapids_logger::logger> const& logger) const
  {
    std::lock_guard<std::mutex> const lock{mtx_};
    logger->info("  Arena size: %s", rmm::detail::format_bytes(upstream_block_.size()).c_str());
    logger->info("  # superblocks: %zu", superblocks_.size());
    if (superblocks_.empty()) { return; }
    logger->debug("  Total size of superblocks: %s",
                  rmm::detail::format_bytes(total_memory_size(superblocks_)).c_str());
    auto const total_free = total_free_size(superblocks_);
    auto const max_free   = max_free_size(superblocks_);
    logger->info("  Total free memory: %s", rmm::detail::format_bytes(total_free).c_str());
    logger->info("  Largest block of free memory: %s", rmm::detail::format_bytes(max_free).c_str());
    logger->info("  Fragmentation: %0.2f", (1 - max_free / static_cast<double>(total_free)) * 100);
    std::size_t index{};
    char const* previous_end = superblocks_.begin()->pointer();
    for (auto const& s : superblocks_) {
      logger->debug(
        "    Superblock %zu: start=%p, end=%p, size=%s, empty=%s, # free blocks=%zu, max free=%s, "
        "gap=%s",
        index++,
        static_cast<void*>(s.pointer()),
        static_cast<void*>(s.end()),
        rmm::detail::format_bytes(s.size()).c_str(),
        s.empty() ? "T" : "F",
        s.free_blocks(),
        rmm::detail::format_bytes(s.max_free_size()).c_str(),
        rmm::detail::format_bytes(static_cast<std::size_t>(s.pointer() - previous_end)).c_str());
      previous_end = s.end();
    }
  }

 private:
  static std::size_t default_size() { return rmm::available_device_memory().first / 2; }

  /// Takes out the first superblock of address order that holds `size`, cutting an empty one so
  /// that the rest (at least the minimum) stays here. Invalid when none holds it.
  superblock take_fitting(std::size_t size)
  {
    auto const it = std::find_if(
      superblocks_.begin(), superblocks_.end(), [&](superblock const& s) { return s.fits(size); });
    if (it == superblocks_.end()) { return {}; }
    superblock sblk     = std::move(superblocks_.extract(it).value());
    auto const head_len = std::max(superblock::minimum_size, size);
    if (!sblk.empty() || sblk.size() < head_len + superblock::minimum_size) { return sblk; }
    auto parts = sblk.split(head_len);
    superblocks_.insert(std::move(parts.second));
    return std::move(parts.first);
  }

  /// Keeps `sblk`, merged with the empty superblocks on either side of it.
  void give_back(superblock&& sblk)
  {
    RMM_LOGGING_ASSERT(sblk.is_valid());
    superblock merged = std::move(sblk);
    auto after        = superblocks_.lower_bound(merged);
    if (after != superblocks_.end() && merged.is_contiguous_before(*after)) {
      auto next = superblocks_.extract(after++);
      merged    = merged.merge(next.value());
    }
    if (after != superblocks_.begin()) {
      auto const before = std::prev(after);
      if (before->is_contiguous_before(merged)) {
        auto prev = superblocks_.extract(before);
        merged    = prev.value().merge(merged);
      }
    }
    superblocks_.insert(std::move(merged));
  }

  cuda::mr::any_resource<cuda::mr::device_accessible> upstream_mr_;
  block upstream_block_;
  std::set<superblock> superblocks_;
  mutable std::mutex mtx_;
};

/**
 * @brief A thread's (or stream's) arena: superblocks taken from the global arena, carved into
 * blocks; requests above the superblock minimum go to the global arena. Thread-safe.
 */
class arena {
 public:
  /// An arena drawing on `global_arena`, which must outlive it.
  explicit arena(global_arena& global_arena) : global_arena_{global_arena} {}

  arena(arena const&)                = delete;
  arena& operator=(arena const&)     = delete;
  arena(arena&&) noexcept            = delete;
  arena& operator=(arena&&) noexcept = delete;
  ~arena()                           = default;

  /// `size` bytes; null when neither this arena nor the global one has room.
  [[nodiscard]] void* allocate_sync(std::size_t size)
  {
    if (global_arena::handles(size)) { return global_arena_.allocate_sync(size); }
    std::lock_guard<std::mutex> const lock{mtx_};
    block blk = take_from_own(size);
    if (!blk.is_valid()) {
      superblock sblk = global_arena_.acquire(size);
      if (sblk.is_valid()) {
        blk = sblk.first_fit(size);
        superblocks_.insert(std::move(sblk));
      }
    }
    return blk.pointer();
  }

  /// Frees a block after `stream`'s work; false when it is in neither arena.
  bool deallocate(cuda::stream_ref stream, void* ptr, std::size_t size)
  {
    if (global_arena::handles(size) && global_arena_.deallocate(stream, ptr, size)) { return true; }
    return deallocate_sync(ptr, size);
  }

  /// Frees a block of this arena at once; false when it is not in one of its superblocks.
  bool deallocate_sync(void* ptr, std::size_t size)
  {
    std::lock_guard<std::mutex> const lock{mtx_};
    block const blk{ptr, size};
    auto const it = std::find_if(
      superblocks_.begin(), superblocks_.end(), [&](superblock const& s) { return s.contains(blk); });
    if (it == superblocks_.end()) { return false; }
    superblock sblk = std::move(superblocks_.extract(it).value());
    sblk.coalesce(blk);
    superblocks_.insert(std::move(sblk));
    return true;
  }

  /// Gives every superblock back to the global arena.
  void clean()
  {
    std::lock_guard<std::mutex> const lock{mtx_};
    global_arena_.release(superblocks_);
    superblocks_.clear();
  }

  /// Gives the empty superblocks back to the global arena.
  void defragment()
  {
    std::lock_guard<std::mutex> const lock{mtx_};
    for (auto it = superblocks_.begin(); it != superblocks_.end();) {
      if (it->empty()) {
        auto next = std::next(it);
        global_arena_.release(std::move(superblocks_.extract(it).value()));
        it = next;
      } else {
        ++it;
      }
    }
  }

 private:
  /// A block from the first of this arena's superblocks that holds `size`; invalid when none.
  block take_from_own(std::size_t size)
  {
    auto const it = std::find_if(
      superblocks_.begin(), superblocks_.end(), [&](superblock const& s) { return s.fits(size); });
    if (it == superblocks_.end()) { return {}; }
    superblock sblk = std::move(superblocks_.extract(it).value());
    block const blk = sblk.first_fit(size);
    superblocks_.insert(std::move(sblk));
    return blk;
  }

  global_arena& global_arena_;
  std::set<superblock> superblocks_;
  mutable std::mutex mtx_;
};

/// @brief Cleans the arena it watches (if still alive) when destroyed: a thread's arena goes back
/// to the global arena when the thread ends.
class arena_cleaner {
 public:
  /// Watches `arena` without keeping it alive.
  explicit arena_cleaner(std::shared_ptr<arena> const& arena) : arena_(arena) {}

  arena_cleaner(arena_cleaner const&)            = delete;
  arena_cleaner& operator=(arena_cleaner const&) = delete;
  arena_cleaner(arena_cleaner&&) noexcept        = delete;
  arena_cleaner& operator=(arena_cleaner&&)      = delete;

  ~arena_cleaner()
  {
    if (auto const a = arena_.lock()) { a->clean(); }
  }

 private:
  std::weak_ptr<arena> arena_;
};

}  // namespace rmm::mr::detail::arena
