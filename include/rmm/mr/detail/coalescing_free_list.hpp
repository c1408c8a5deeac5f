/*
 * Here because RMM 26.10 ships this path: C++ code written against RMM's detail API includes it and
 * compiles unchanged. rmm-rs's own pools are Rust (algorithms/) and do not use it. It is RMM's
 * coalescing free list of address ranges, a host-side building block.
 */
#pragma once

#include <rmm/detail/export.hpp>
#include <rmm/mr/detail/free_list.hpp>

#include <cassert>
#include <cstddef>
#include <iterator>

RMM_NAMESPACE_BEGIN
namespace mr::detail {

/// A range of memory: its start, its size, and whether it starts an upstream allocation (a head
/// block, which never merges with the block before it).
struct block : public block_base {
  block() = default;
  /// The block [ptr, ptr + size); `is_head` when ptr starts an upstream allocation.
  block(char* ptr, std::size_t size, bool is_head) : block_base{ptr}, size_bytes{size}, head{is_head}
  {
  }

  [[nodiscard]] char* pointer() const { return static_cast<char*>(ptr); }  ///< Start
  [[nodiscard]] std::size_t size() const { return size_bytes; }            ///< Size in bytes
  [[nodiscard]] bool is_head() const { return head; }                      ///< Starts an upstream allocation

  /// Orders blocks by address.
  bool operator<(block const& rhs) const noexcept { return pointer() < rhs.pointer(); }

  /// This block followed by `blk`, which must come right after it.
  [[nodiscard]] block merge(block const& blk) const noexcept
  {
    assert(is_contiguous_before(blk));
    return {pointer(), size() + blk.size(), is_head()};
  }

  /// True when `blk` starts where this block ends and is not a head block.
  [[nodiscard]] bool is_contiguous_before(block const& blk) const noexcept
  {
    return pointer() + size() == blk.pointer() && !blk.is_head();
  }

  /// True when `bytes` fit in this block.
  [[nodiscard]] bool fits(std::size_t bytes) const noexcept { return size() >= bytes; }

  /// True when this block fits `bytes` and is smaller than `blk`, or `blk` does not fit them.
  [[nodiscard]] bool is_better_fit(std::size_t bytes, block const& blk) const noexcept
  {
    return fits(bytes) && (size() < blk.size() || blk.size() < bytes);
  }

 private:
  std::size_t size_bytes{};
  bool head{};
};

/// Orders blocks, and blocks against addresses, by address (for ordered sets of blocks).
template <typename block_type>
struct compare_blocks {
  using is_transparent = void;  ///< Allows lookups by address

  bool operator()(block_type const& lhs, block_type const& rhs) const { return lhs < rhs; }
  bool operator()(char const* ptr, block_type const& rhs) const { return ptr < rhs.pointer(); }
  bool operator()(block_type const& lhs, char const* ptr) const { return lhs.pointer() < ptr; }
};

/// Free blocks kept in address order; a block inserted next to free neighbours merges with them.
struct coalescing_free_list : free_list<block> {
  coalescing_free_list()           = default;
  ~coalescing_free_list() override = default;

  coalescing_free_list(coalescing_free_list const&)            = delete;
  coalescing_free_list& operator=(coalescing_free_list const&) = delete;
  coalescing_free_list(coalescing_free_list&&)                 = delete;
  coalescing_free_list& operator=(coalescing_free_list&&)      = delete;

  /// Inserts `blk` in address order, merging it with the blocks right before and after it.
  void insert(block_type const& blk)
  {
    auto next = begin();
    while (next != end() && !(blk < *next)) {
      ++next;
    }
    bool const merge_prev = next != begin() && std::prev(next)->is_contiguous_before(blk);
    bool const merge_next = next != end() && blk.is_contiguous_before(*next);
    if (merge_prev) {
      auto prev = std::prev(next);
      *prev     = prev->merge(blk);
      if (merge_next) {
        *prev = prev->merge(*next);
        erase(next);
      }
    } else if (merge_next) {
      *next = blk.merge(*next);
    } else {
      free_list::insert(next, blk);
    }
  }

  /// Moves every block of `other` in, merging as insert() does.
  void insert(free_list&& other)
  {
    for (auto const& blk : other) {
      insert(blk);
    }
    other.clear();
  }

  /// Removes and returns the smallest block that fits `size` bytes; an invalid (null) block when
  /// none does.
  block_type get_block(std::size_t size)
  {
    auto best = end();
    for (auto it = begin(); it != end(); ++it) {
      if (it->fits(size) && (best == end() || it->size() < best->size())) { best = it; }
    }
    if (best == end()) { return block_type{}; }
    block_type const found = *best;
    erase(best);
    return found;
  }
};

}  // namespace mr::detail
RMM_NAMESPACE_END
