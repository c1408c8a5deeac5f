//! The allocation algorithm behind `rmm::resource::ArenaMemoryResource`, after RMM's arena
//! allocator. It knows nothing about CUDA.
//!
//! A [`GlobalArena`] holds one range taken from the upstream at construction and carves it into
//! [`Superblock`]s (at least [`MIN_SUPERBLOCK`] bytes) and into the blocks of large requests. Each
//! thread and stream has a [`SmallArena`] that takes superblocks from the global arena and serves
//! small requests from them under its own lock, so threads on their own streams never meet on a
//! lock once their arenas hold enough superblocks. Superblocks go back to the global arena when
//! empty, where neighbouring ones merge again, and in a defragmentation all of them do, as in RMM:
//! one with blocks still handed out is parked there with them until another small arena adopts
//! it for its free part ([`LiveBlock`]s move with it).
//!
//! Which stream may reuse a block is the resource's concern: a small arena only ever serves one
//! stream, a stream's own large free blocks in the global arena serve only that stream, and the
//! resource synchronises before a block crosses from one stream to another.

mod global_arena;
mod large_blocks;
mod small_arena;
mod superblock;

pub use crate::LiveBlock;
pub use global_arena::{Acquired, GlobalArena, Lookup};
pub use small_arena::SmallArena;
pub use superblock::{superblock_size, Superblock, MAX_SUPERBLOCK, MIN_SUPERBLOCK};

/// The bytes to search for so that an `align`-aligned block of `size` bytes fits (both multiples
/// of 256, `align` a power of two of at least 256); `None` on overflow.
#[inline]
pub fn search_size(size: usize, align: usize) -> Option<usize> {
    size.checked_add(align - crate::GRANULE)
}

/// True when a request searching for `search` bytes goes to the global arena directly (RMM's
/// `global_arena::handles`): it would not fit a minimum superblock.
#[inline]
pub fn is_large(search: usize) -> bool {
    search > MIN_SUPERBLOCK
}
