/*
 * rmm-rs: RMM 26.10's detail types of the arena allocator, `rmm::mr::detail::arena::{byte_span,
 * block, superblock, global_arena, arena, arena_cleaner}` with their free functions, so that code
 * written against them compiles and behaves as with RMM. They are plain C++ over address ranges
 * taken from any `cuda::mr` resource, written for this project; `rmm::mr::arena_memory_resource`
 * does not use them (its algorithm lives in Rust, src/arena/).
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
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

namespace rmm::mr::detail::arena {

/// Bytes of the smallest superblock; larger requests go to the global arena directly.
inline constexpr std::size_t superblock_minimum_size{std::size_t{1} << 20};

/// Bytes of the largest superblock (a sanity bound).
inline constexpr std::size_t superblock_maximum_size{std::size_t{1} << 40};

namespace size_class_detail {

/// RMM's 117 size classes: every 256 bytes up to 2 KiB, then four classes per doubling (at 5/4,
/// 6/4, 7/4 and 8/4 of the last power of two) up to 256 GiB, then SIZE_MAX. RMM's table has
/// 54 KiB where the rule gives 56 KiB; kept, since sizes are rounded to the table's values.
inline std::array<std::size_t, 117> make_size_classes() noexcept
{
  std::array<std::size_t, 117> classes{};
  std::size_t n = 0;
  for (std::size_t s = 256; s <= 2048; s += 256) {
    classes[n++] = s;
  }
  for (std::size_t base = 2048; base < (std::size_t{256} << 30); base *= 2) {
    for (std::size_t quarter = 5; quarter <= 8; ++quarter) {
      classes[n++] = base / 4 * quarter;
    }
  }
  classes[n] = std::numeric_limits<std::size_t>::max();
  for (auto& c : classes) {
    if (c == (std::size_t{56} << 10)) { c = std::size_t{54} << 10; }
  }
  return classes;
}

}  // namespace size_class_detail

/**
 * @brief Rounds `value` up to the arena's size class that holds it (the smallest class of at
 * least `value` bytes; SIZE_MAX beyond 256 GiB).
 */
inline std::size_t align_to_size_class(std::size_t value) noexcept
{
  static auto const classes = size_class_detail::make_size_classes();
  auto const* const at      = std::lower_bound(classes.begin(), classes.end(), value);
  RMM_LOGGING_ASSERT(at != classes.end());
  return *at;
}

/// @brief A range of memory: a start pointer and a size in bytes. Ordered by address.
class byte_span {
 public:
  /// An empty (invalid) span.
  byte_span() = default;

  /// The `size` bytes at `pointer` (both non-zero).
  byte_span(void* pointer, std::size_t size) : pointer_{static_cast<char*>(pointer)}, size_{size}
  {
    RMM_LOGGING_ASSERT(pointer != nullptr);
    RMM_LOGGING_ASSERT(size > 0);
  }

  /// @briefreturn{the first byte}
  [[nodiscard]] char* pointer() const { return pointer_; }
  /// @briefreturn{the size in bytes}
  [[nodiscard]] std::size_t size() const { return size_; }
  /// @briefreturn{one past the last byte}
  [[nodiscard]] char* end() const { return pointer_ + size_; }
  /// @briefreturn{true for a non-null span of non-zero size}
  [[nodiscard]] bool is_valid() const { return pointer_ != nullptr && size_ != 0; }

  /// Address order.
  bool operator<(byte_span const& span) const
  {
    RMM_LOGGING_ASSERT(span.is_valid());
    return pointer_ < span.pointer_;
  }

 private:
  char* pointer_{};
  std::size_t size_{};
};

/// @brief The sum of the sizes of `spans`.
template <typename T>
inline auto total_memory_size(std::set<T> const& spans)
{
  std::size_t sum{};
  for (auto const& s : spans) {
    sum += s.size();
  }
  return sum;
}

/// @brief A span inside a superblock: allocated, or free in the superblock's free list.
class block final : public byte_span {
 public:
  using byte_span::byte_span;

  /// @briefreturn{true when `bytes` (non-zero) fit in this block}
  [[nodiscard]] bool fits(std::size_t bytes) const
  {
    RMM_LOGGING_ASSERT(is_valid());
    RMM_LOGGING_ASSERT(bytes > 0);
    return bytes <= size();
  }

  /// @briefreturn{true when `blk` starts where this block ends}
  [[nodiscard]] bool is_contiguous_before(block const& blk) const
  {
    RMM_LOGGING_ASSERT(is_valid());
    RMM_LOGGING_ASSERT(blk.is_valid());
    return end() == blk.pointer();
  }

  /// The first `bytes` of this block and the rest (`bytes` below the size).
  [[nodiscard]] std::pair<block, block> split(std::size_t bytes) const
  {
    RMM_LOGGING_ASSERT(is_valid());
    RMM_LOGGING_ASSERT(bytes < size());
    return {block{pointer(), bytes}, block{pointer() + bytes, size() - bytes}};
  }

  /// This block and `blk`, which must follow it, as one.
  [[nodiscard]] block merge(block const& blk) const
  {
    RMM_LOGGING_ASSERT(is_contiguous_before(blk));
    return block{pointer(), size() + blk.size()};
  }
};

/// @brief Orders blocks by size.
inline bool block_size_compare(block const& lhs, block const& rhs)
{
  RMM_LOGGING_ASSERT(lhs.is_valid());
  RMM_LOGGING_ASSERT(rhs.is_valid());
  return lhs.size() < rhs.size();
}

/// @brief A span of 1 MiB to 1 TiB with an address-ordered list of its free blocks. Move-only.
class superblock final : public byte_span {
 public:
  /// The smallest superblock.
  static constexpr std::size_t minimum_size{superblock_minimum_size};
  /// The largest superblock.
  static constexpr std::size_t maximum_size{superblock_maximum_size};

  /// An empty (invalid) superblock.
  superblock() = default;

  /// The `size` bytes at `pointer`, all free.
  superblock(void* pointer, std::size_t size) : byte_span{pointer, size}
  {
    RMM_LOGGING_ASSERT(size >= minimum_size);
    RMM_LOGGING_ASSERT(size <= maximum_size);
    free_.insert(block{pointer, size});
  }

  superblock(superblock const&)                = delete;
  superblock& operator=(superblock const&)     = delete;
  superblock(superblock&&) noexcept            = default;
  superblock& operator=(superblock&&) noexcept = default;
  ~superblock()                                = default;

  /// @briefreturn{true when the whole superblock is one free block}
  [[nodiscard]] bool empty() const
  {
    RMM_LOGGING_ASSERT(is_valid());
    return free_.size() == 1 && free_.begin()->size() == size();
  }

  /// @briefreturn{the number of free blocks}
  [[nodiscard]] std::size_t free_blocks() const
  {
    RMM_LOGGING_ASSERT(is_valid());
    return free_.size();
  }

  /// @briefreturn{true when `blk` lies inside this superblock}
  [[nodiscard]] bool contains(block const& blk) const
  {
    RMM_LOGGING_ASSERT(is_valid());
    RMM_LOGGING_ASSERT(blk.is_valid());
    return blk.pointer() >= pointer() && blk.end() <= end();
  }

  /// @briefreturn{true when some free block holds `bytes`}
  [[nodiscard]] bool fits(std::size_t bytes) const
  {
    RMM_LOGGING_ASSERT(is_valid());
    for (auto const& b : free_) {
      if (b.fits(bytes)) { return true; }
    }
    return false;
  }

  /// @briefreturn{true when both are empty and `sblk` starts where this one ends}
  [[nodiscard]] bool is_contiguous_before(superblock const& sblk) const
  {
    RMM_LOGGING_ASSERT(is_valid());
    RMM_LOGGING_ASSERT(sblk.is_valid());
    return empty() && sblk.empty() && end() == sblk.pointer();
  }

  /// An empty superblock cut in two: its first `bytes` and the rest (each at least the minimum).
  [[nodiscard]] std::pair<superblock, superblock> split(std::size_t bytes) const
  {
    RMM_LOGGING_ASSERT(is_valid());
    RMM_LOGGING_ASSERT(empty() && bytes >= minimum_size && size() >= bytes + minimum_size);
    return {superblock{pointer(), bytes}, superblock{pointer() + bytes, size() - bytes}};
  }

  /// This empty superblock and the empty `sblk` that follows it, as one.
  [[nodiscard]] superblock merge(superblock const& sblk) const
  {
    RMM_LOGGING_ASSERT(is_contiguous_before(sblk));
    return superblock{pointer(), size() + sblk.size()};
  }

  /// Takes `size` bytes from the free block of lowest address that holds them; an invalid block
  /// when none does.
  block first_fit(std::size_t size)
  {
    RMM_LOGGING_ASSERT(is_valid());
    RMM_LOGGING_ASSERT(size > 0);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (!it->fits(size)) { continue; }
      block const found = *it;
      auto const hint   = free_.erase(it);
      if (found.size() == size) { return found; }
      auto const [taken, rest] = found.split(size);
      free_.insert(hint, rest);
      return taken;
    }
    return {};
  }

  /// Returns `blk` (inside this superblock) to the free list, merged with free neighbours.
  void coalesce(block const& blk)
  {
    RMM_LOGGING_ASSERT(is_valid());
    RMM_LOGGING_ASSERT(blk.is_valid());
    RMM_LOGGING_ASSERT(contains(blk));
    block merged = blk;
    auto after   = free_.lower_bound(blk);
    if (after != free_.end() && merged.is_contiguous_before(*after)) {
      merged = merged.merge(*after);
      after  = free_.erase(after);
    }
    if (after != free_.begin()) {
      auto const before = std::prev(after);
      if (before->is_contiguous_before(merged)) {
        merged = before->merge(merged);
        after  = free_.erase(before);
      }
    }
    free_.insert(after, merged);
  }

  /// @briefreturn{the free bytes}
  [[nodiscard]] std::size_t total_free_size() const { return total_memory_size(free_); }

  /// @briefreturn{the largest free block's size (0 when none)}
  [[nodiscard]] std::size_t max_free_size() const
  {
    std::size_t largest{};
    for (auto const& b : free_) {
      largest = std::max(largest, b.size());
    }
    return largest;
  }

 private:
  std::set<block> free_{};
};

/// @brief The free bytes of all `superblocks`.
inline auto total_free_size(std::set<superblock> const& superblocks)
{
  std::size_t sum{};
  for (auto const& s : superblocks) {
    sum += s.total_free_size();
  }
  return sum;
}

/// @brief The largest free block among all `superblocks`.
inline auto max_free_size(std::set<superblock> const& superblocks)
{
  std::size_t largest{};
  for (auto const& s : superblocks) {
    largest = std::max(largest, s.max_free_size());
  }
  return largest;
}

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
