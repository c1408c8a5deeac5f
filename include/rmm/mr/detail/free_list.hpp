/*
 * Here because RMM 26.10 ships this path: C++ code written against RMM's detail API includes it and
 * compiles unchanged. rmm-rs's own free lists are Rust (the crate in algorithms/) and do not use
 * it. It is RMM's base of host-side free lists, the base of coalescing_free_list.hpp and
 * fixed_size_free_list.hpp.
 */
#pragma once

#include <rmm/detail/export.hpp>

#include <cstddef>
#include <iostream>
#include <list>
#include <utility>

RMM_NAMESPACE_BEGIN
namespace mr::detail {

/// What every block of a free list has: where it starts (null: no block).
struct block_base {
  void* ptr{};  ///< Start of the block

  block_base() = default;
  block_base(void* ptr) : ptr{ptr} {}  // NOLINT(google-explicit-constructor): RMM converts implicitly

  /// Start of the block.
  [[nodiscard]] void* pointer() const { return ptr; }
  /// True for a real block (non-null start).
  [[nodiscard]] bool is_valid() const { return pointer() != nullptr; }
};

/// Prints a block's start (for `free_list::print`).
inline std::ostream& operator<<(std::ostream& out, block_base const& b) { return out << b.pointer(); }

/**
 * @brief A list of free blocks: iteration, size and removal for everyone; insertion for the
 * derived lists, which decide where a block goes (address order, coalescing, ...).
 *
 * @tparam BlockType the block (derived from block_base)
 * @tparam ListType the container holding them
 */
template <typename BlockType, typename ListType = std::list<BlockType>>
class free_list {
 public:
  using block_type     = BlockType;                        ///< The block
  using list_type      = ListType;                         ///< The container
  using size_type      = typename list_type::size_type;    ///< Counts
  using iterator       = typename list_type::iterator;     ///< Iterator
  using const_iterator = typename list_type::const_iterator;  ///< Const iterator

  free_list()          = default;
  virtual ~free_list() = default;

  free_list(free_list const&)            = delete;
  free_list& operator=(free_list const&) = delete;
  free_list(free_list&&)                 = delete;
  free_list& operator=(free_list&&)      = delete;

  [[nodiscard]] iterator begin() noexcept { return blocks_.begin(); }               ///< First block
  [[nodiscard]] const_iterator begin() const noexcept { return blocks_.begin(); }   ///< First block
  [[nodiscard]] const_iterator cbegin() const noexcept { return blocks_.cbegin(); } ///< First block
  [[nodiscard]] iterator end() noexcept { return blocks_.end(); }                   ///< Past the last
  [[nodiscard]] const_iterator end() const noexcept { return blocks_.end(); }       ///< Past the last
  [[nodiscard]] const_iterator cend() const noexcept { return blocks_.cend(); }     ///< Past the last

  /// Number of blocks.
  [[nodiscard]] size_type size() const noexcept { return blocks_.size(); }
  /// True when there is no block.
  [[nodiscard]] bool is_empty() const noexcept { return blocks_.empty(); }

  /// Removes the block at `iter`.
  void erase(const_iterator iter) { blocks_.erase(iter); }
  /// Removes every block.
  void clear() noexcept { blocks_.clear(); }

  /// Writes the number of blocks and each block to stdout.
  void print() const
  {
    std::cout << size() << '\n';
    for (auto const& b : blocks_) {
      std::cout << b << '\n';
    }
  }

 protected:
  /// Inserts `block` before `pos`.
  void insert(const_iterator pos, block_type const& block) { blocks_.insert(pos, block); }
  /// Appends `block`.
  void push_back(block_type const& block) { blocks_.push_back(block); }
  /// Moves every block of `other` in before `pos`.
  void splice(const_iterator pos, free_list&& other) { blocks_.splice(pos, std::move(other.blocks_)); }
  /// Prepends `block`.
  void push_front(block_type const& block) { blocks_.push_front(block); }
  /// Removes the first block.
  void pop_front() { blocks_.pop_front(); }
  /// The first block.
  [[nodiscard]] block_type const& front() const { return blocks_.front(); }
  /// The last block.
  [[nodiscard]] block_type const& back() const { return blocks_.back(); }

 private:
  list_type blocks_;
};

}  // namespace mr::detail
RMM_NAMESPACE_END
