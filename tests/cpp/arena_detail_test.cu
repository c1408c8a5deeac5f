// RMM 26.10's arena detail types (rmm/mr/detail/arena.hpp) used as RMM's own arena tests use them:
// spans, blocks and superblocks over made-up addresses (never touched), and a global arena with a
// per-thread arena over host memory standing in for the device. No GPU needed.

#include "test_utils.hpp"

#include <rmm/error.hpp>
#include <rmm/logger.hpp>
#include <rmm/mr/detail/arena.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>

namespace {

namespace arena = rmm::mr::detail::arena;
using arena::block;
using arena::byte_span;
using arena::global_arena;
using arena::superblock;
using rmm::test::default_stream;
using rmm::test::new_delete_resource;


/// An address nothing is at: these tests only compute with it.
void* address(std::size_t offset) { return reinterpret_cast<void*>(std::uintptr_t{1} << 40 | offset); }
char* at(std::size_t offset) { return static_cast<char*>(address(offset)); }

static_assert(!std::is_copy_constructible_v<superblock> && std::is_nothrow_move_constructible_v<superblock>);
static_assert(!std::is_copy_constructible_v<global_arena> && !std::is_move_constructible_v<global_arena>);
static_assert(!std::is_copy_constructible_v<arena::arena>);
static_assert(superblock::minimum_size == MiB && superblock::maximum_size == (std::size_t{1} << 40));

TEST(ArenaDetail, SizeClasses)
{
  EXPECT_EQ(arena::align_to_size_class(1), 256u);
  EXPECT_EQ(arena::align_to_size_class(256), 256u);
  EXPECT_EQ(arena::align_to_size_class(257), 512u);
  EXPECT_EQ(arena::align_to_size_class(2049), 2560u);
  EXPECT_EQ(arena::align_to_size_class(50 << 10), std::size_t{54} << 10);  // RMM's table
  EXPECT_EQ(arena::align_to_size_class((54 << 10) + 1), std::size_t{64} << 10);
  EXPECT_EQ(arena::align_to_size_class(MiB + 1), 1280u << 10);
  EXPECT_EQ(arena::align_to_size_class((std::size_t{256} << 30) + 1), SIZE_MAX);
}

TEST(ArenaDetail, ByteSpan)
{
  byte_span const none{};
  EXPECT_FALSE(none.is_valid());
  EXPECT_EQ(none.pointer(), nullptr);
  byte_span const span{address(0), 256};
  EXPECT_TRUE(span.is_valid());
  EXPECT_EQ(span.pointer(), at(0));
  EXPECT_EQ(span.size(), 256u);
  EXPECT_EQ(span.end(), at(256));
  EXPECT_TRUE(span < byte_span(address(256), 1));
  std::set<block> const blocks{{address(0), 256}, {address(1024), 512}};
  EXPECT_EQ(arena::total_memory_size(blocks), 768u);
}

TEST(ArenaDetail, Block)
{
  block const b{address(0), 1024};
  EXPECT_TRUE(b.fits(1024));
  EXPECT_FALSE(b.fits(1025));
  block const next{address(1024), 256};
  EXPECT_TRUE(b.is_contiguous_before(next));
  EXPECT_FALSE(next.is_contiguous_before(b));
  auto const [head, tail] = b.split(256);
  EXPECT_EQ(head.pointer(), at(0));
  EXPECT_EQ(head.size(), 256u);
  EXPECT_EQ(tail.pointer(), at(256));
  EXPECT_EQ(tail.size(), 768u);
  block const whole = head.merge(tail);
  EXPECT_EQ(whole.pointer(), b.pointer());
  EXPECT_EQ(whole.size(), b.size());
  EXPECT_TRUE(arena::block_size_compare(head, tail));
}

TEST(ArenaDetail, Superblock)
{
  superblock const none{};
  EXPECT_FALSE(none.is_valid());

  superblock s{address(0), 2 * MiB};
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.free_blocks(), 1u);
  EXPECT_TRUE(s.fits(2 * MiB));
  EXPECT_FALSE(s.fits(2 * MiB + 1));
  EXPECT_TRUE(s.contains(block{address(MiB), MiB}));
  EXPECT_FALSE(s.contains(block{address(MiB), MiB + 1}));

  block const a = s.first_fit(256);
  block const b = s.first_fit(512);
  block const c = s.first_fit(256);
  EXPECT_EQ(a.pointer(), at(0));
  EXPECT_EQ(b.pointer(), at(256));
  EXPECT_EQ(c.pointer(), at(768));
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(s.total_free_size(), 2 * MiB - 1024);
  EXPECT_FALSE(s.first_fit(2 * MiB).is_valid());

  s.coalesce(a);  // no free neighbour
  EXPECT_EQ(s.free_blocks(), 2u);
  s.coalesce(c);  // merges with the free tail
  EXPECT_EQ(s.free_blocks(), 2u);
  EXPECT_EQ(s.max_free_size(), 2 * MiB - 768);
  s.coalesce(b);  // merges with both
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.max_free_size(), 2 * MiB);

  superblock big{address(0), 3 * MiB};
  auto [head, tail] = big.split(MiB);
  EXPECT_EQ(head.size(), MiB);
  EXPECT_EQ(tail.pointer(), at(MiB));
  EXPECT_TRUE(head.is_contiguous_before(tail));
  superblock const merged = head.merge(tail);
  EXPECT_EQ(merged.size(), 3 * MiB);
  EXPECT_TRUE(merged.empty());

  std::set<superblock> set;
  set.insert(superblock{address(0), MiB});
  set.insert(superblock{address(4 * MiB), 2 * MiB});
  EXPECT_EQ(arena::total_free_size(set), 3 * MiB);
  EXPECT_EQ(arena::max_free_size(set), 2 * MiB);
}

TEST(ArenaDetail, GlobalArena)
{
  new_delete_resource up;
  {
    global_arena ga{cuda::mr::any_resource<cuda::mr::device_accessible>{up}, 8 * MiB + 100};
    EXPECT_EQ(up.s->outstanding, 1);
    EXPECT_FALSE(global_arena::handles(MiB));
    EXPECT_TRUE(global_arena::handles(MiB + 1));

    superblock s = ga.acquire(256);
    ASSERT_TRUE(s.is_valid());
    EXPECT_EQ(s.size(), MiB) << "cut to the minimum from the empty arena";
    ga.release(std::move(s));

    void* big = ga.allocate_sync(3 * MiB);
    ASSERT_NE(big, nullptr);
    EXPECT_EQ(ga.allocate_sync(6 * MiB), nullptr) << "8 MiB less 3";
    EXPECT_FALSE(ga.deallocate_sync(address(0), 3 * MiB)) << "not in this arena";
    EXPECT_TRUE(ga.deallocate_sync(big, 3 * MiB));
    void* all = ga.allocate_sync(8 * MiB);
    EXPECT_NE(all, nullptr) << "everything merged back into one superblock";
    EXPECT_TRUE(ga.deallocate_sync(all, 8 * MiB));

    std::set<superblock> taken;
    taken.insert(ga.acquire(MiB));
    taken.insert(ga.acquire(MiB));
    ga.release(taken);
    EXPECT_TRUE(taken.empty());

    std::ostringstream out;
    auto logger = std::make_shared<rapids_logger::logger>("arena", out);
    logger->set_pattern("%v");
    ga.dump_memory_log(logger);
    EXPECT_NE(out.str().find("  Arena size: " + rmm::detail::format_bytes(8 * MiB)), std::string::npos)
      << out.str();
    EXPECT_NE(out.str().find("  # superblocks: 1"), std::string::npos) << out.str();
  }
  EXPECT_EQ(up.s->outstanding, 0) << "the arena's memory went back to the upstream";
}

TEST(ArenaDetail, GlobalArenaBelowTheMinimumIsRefused)
{
  new_delete_resource up;
  EXPECT_THROW((global_arena{cuda::mr::any_resource<cuda::mr::device_accessible>{up}, MiB - 1}),
               rmm::logic_error);
  EXPECT_EQ(up.s->allocations, 0);
}

TEST(ArenaDetail, PerThreadArena)
{
  new_delete_resource up;
  global_arena ga{cuda::mr::any_resource<cuda::mr::device_accessible>{up}, 4 * MiB};
  auto a = std::make_shared<arena::arena>(ga);
  void* p = a->allocate_sync(1000);
  void* q = a->allocate_sync(1000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(static_cast<char*>(q), static_cast<char*>(p) + 1000);
  void* huge = a->allocate_sync(2 * MiB);  // from the global arena directly
  ASSERT_NE(huge, nullptr);
  EXPECT_EQ(a->allocate_sync(2 * MiB), nullptr) << "4 MiB: 1 in the arena's superblock, 2 taken";
  EXPECT_FALSE(a->deallocate_sync(huge, 2 * MiB)) << "the global arena's block";
  EXPECT_TRUE(ga.deallocate_sync(huge, 2 * MiB));
  EXPECT_TRUE(a->deallocate_sync(p, 1000));
  EXPECT_TRUE(a->deallocate(default_stream(), q, 1000));
  EXPECT_FALSE(a->deallocate_sync(address(0), 1000));
  a->defragment();  // its one superblock is empty again: back to the global arena
  EXPECT_NE(ga.allocate_sync(4 * MiB), nullptr) << "the global arena is whole again";
  {
    arena::arena_cleaner const cleaner{a};
  }
  a->clean();
}

/// The stream-ordered frees synchronise the stream first (a CUDA call), as RMM's do.
TEST(ArenaDetail, StreamOrderedFreesOnTheGpu)
{
  RMM_SKIP_WITHOUT_GPU();
  new_delete_resource up;
  global_arena ga{cuda::mr::any_resource<cuda::mr::device_accessible>{up}, 4 * MiB};
  arena::arena a{ga};
  void* huge = a.allocate_sync(2 * MiB);
  void* small = a.allocate_sync(1000);
  ASSERT_NE(huge, nullptr);
  ASSERT_NE(small, nullptr);
  EXPECT_TRUE(a.deallocate(default_stream(), huge, 2 * MiB));
  EXPECT_TRUE(a.deallocate(default_stream(), small, 1000));
  void* again = ga.allocate_sync(2 * MiB);
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(ga.deallocate(default_stream(), again, 2 * MiB));
  a.clean();
}

}  // namespace
