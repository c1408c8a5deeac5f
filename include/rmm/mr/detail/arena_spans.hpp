/*
 * rmm-rs: the span types of RMM 26.10's arena (`byte_span`, `block`, `superblock`), its size
 * classes and free-size helpers, included by rmm/mr/detail/arena.hpp (see there).
 */
#pragma once

#include <rmm/detail/logging_assert.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <iterator>
#include <limits>
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

}  // namespace rmm::mr::detail::arena
