//! A small arena: the superblocks one thread holds for one stream, and the free blocks in them.
//!
//! Each superblock is a chunk of a [`CoalescingPool`] with a single set of free lists, so a small
//! arena allocates and frees in O(1) (size classes with bitmaps, immediate coalescing, a cache of
//! recently freed small blocks) and detects a free of a pointer it did not hand out. Blocks never
//! span two superblocks, so a superblock whose blocks are all free is one free block again and can
//! go back to the global arena whole; a defragmentation takes superblocks back with the blocks
//! still handed out in them too, and another small arena adopts them so.

use super::Superblock;
use crate::error::{Misuse, PoolState};
use crate::{CoalescingPool, LiveBlock, SetId, StreamKey};

/// The superblocks of one arena and their blocks.
pub struct SmallArena {
    core: CoalescingPool,
    set: SetId,
}

impl Default for SmallArena {
    fn default() -> Self {
        Self::new()
    }
}

impl SmallArena {
    /// An arena holding no superblock.
    pub fn new() -> Self {
        let mut core = CoalescingPool::new();
        // One set of free lists: an arena serves one stream, which the resource tracks.
        let set = core.set_of(StreamKey::LEGACY_DEFAULT);
        SmallArena { core, set }
    }

    /// Takes a block of `size` bytes (`requested` rounded up to 256) aligned to `align` from the
    /// superblocks held; `None` when none has a fitting free block.
    #[inline]
    pub fn allocate(&mut self, requested: usize, size: usize, align: usize) -> Option<usize> {
        self.core.allocate(self.set, requested, size, align)
    }

    /// Adds a superblock taken from the global arena, all of it free.
    pub fn adopt(&mut self, superblock: Superblock) {
        self.core.add_chunk(superblock.addr, superblock.size, self.set);
    }

    /// Adds a superblock taken from the global arena with the blocks still handed out in it (by
    /// address); the rest of it is free.
    pub fn adopt_with_live(&mut self, superblock: Superblock, live: &[LiveBlock]) {
        self.core.add_chunk_with_live(superblock.addr, superblock.size, self.set, live);
    }

    /// Frees the block at `addr` of `bytes` requested bytes; `None` (nothing changed) when no
    /// block handed out here starts at `addr`.
    #[inline]
    pub fn try_deallocate(&mut self, addr: usize, bytes: usize) -> Option<Result<(), Misuse>> {
        self.core.try_deallocate(addr, bytes, self.set)
    }

    /// Frees the block at `addr`, or says how the call misuses this arena (nothing changed then).
    pub fn deallocate(&mut self, addr: usize, bytes: usize) -> Result<(), Misuse> {
        self.core.deallocate(addr, bytes, self.set)
    }

    /// Takes every superblock whose blocks are all free out of this arena, for the global arena.
    pub fn release_empty(&mut self) -> Vec<Superblock> {
        self.core.detach_whole_free_chunks(self.set).into_iter().map(|(addr, size)| Superblock { addr, size }).collect()
    }

    /// Takes every superblock out of this arena, each with the blocks still handed out in it (by
    /// address), for the global arena. Cold: one pass over the block records.
    pub fn release_all(&mut self) -> Vec<(Superblock, Vec<LiveBlock>)> {
        let chunks = self.core.detach_all_chunks();
        chunks.into_iter().map(|((addr, size), live)| (Superblock { addr, size }, live)).collect()
    }

    /// Bytes of the superblocks held.
    pub fn held_bytes(&self) -> usize {
        self.core.pool_size()
    }

    /// The superblocks held, in no particular order.
    pub fn superblocks(&self) -> impl Iterator<Item = Superblock> + '_ {
        self.core.chunks().iter().map(|&(addr, size)| Superblock { addr, size })
    }

    /// Held bytes, free bytes and the largest free block.
    pub fn state(&self) -> PoolState {
        self.core.state()
    }

    /// Blocks handed out and not yet freed.
    pub fn allocated_count(&self) -> usize {
        self.core.allocated_count()
    }

    /// Checks the arena's invariants (those of [`CoalescingPool`]); for tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.core.check_invariants()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::MIN_SUPERBLOCK;

    #[test]
    fn serves_from_adopted_superblocks_and_releases_empty_ones() {
        let mut arena = SmallArena::new();
        assert_eq!(arena.allocate(256, 256, 256), None);
        arena.adopt(Superblock { addr: 1 << 30, size: MIN_SUPERBLOCK });
        arena.adopt(Superblock { addr: (1 << 30) + MIN_SUPERBLOCK, size: MIN_SUPERBLOCK });
        let a = arena.allocate(1000, 1024, 256).unwrap();
        assert!(arena.superblocks().any(|s| s.contains(a)));
        assert_eq!(arena.held_bytes(), 2 * MIN_SUPERBLOCK);
        // One superblock is still in use: only the other goes back.
        assert_eq!(arena.release_empty().len(), 1);
        assert_eq!(arena.try_deallocate(a + 256, 1000), None);
        assert!(matches!(arena.try_deallocate(a, 999), Some(Err(Misuse::WrongSize { .. }))));
        assert_eq!(arena.try_deallocate(a, 1000), Some(Ok(())));
        assert!(matches!(arena.deallocate(a, 1000), Err(Misuse::DoubleFree { .. })));
        assert_eq!(arena.release_empty(), vec![Superblock { addr: arena_start(a), size: MIN_SUPERBLOCK }]);
        assert_eq!(arena.held_bytes(), 0);
        arena.check_invariants().unwrap();
    }

    #[test]
    fn a_superblock_moves_to_another_arena_with_its_live_blocks() {
        let mut from = SmallArena::new();
        let sb = Superblock { addr: 1 << 30, size: MIN_SUPERBLOCK };
        from.adopt(sb);
        let a = from.allocate(1000, 1024, 256).unwrap();
        let b = from.allocate(300, 512, 4096).unwrap();
        let c = from.allocate(256, 256, 256).unwrap();
        from.deallocate(c, 256).unwrap();
        let moved = from.release_all();
        assert_eq!((from.held_bytes(), from.allocated_count()), (0, 0));
        let want =
            vec![LiveBlock { addr: a, size: 1024, requested: 1000 }, LiveBlock { addr: b, size: 512, requested: 300 }];
        assert_eq!(moved, vec![(sb, want.clone())]);
        from.check_invariants().unwrap();
        let mut to = SmallArena::new();
        to.adopt_with_live(sb, &want);
        to.check_invariants().unwrap();
        assert_eq!(to.state().free_bytes, MIN_SUPERBLOCK - 1024 - 512);
        assert!(matches!(to.deallocate(b, 512), Err(Misuse::WrongSize { .. })));
        assert!(matches!(to.deallocate(a + 256, 1000), Err(Misuse::InteriorPointer { .. })));
        to.deallocate(b, 300).unwrap();
        to.deallocate(a, 1000).unwrap();
        to.check_invariants().unwrap();
        assert_eq!(to.release_empty(), vec![sb], "the superblock is one free block again");
    }

    #[test]
    fn every_superblock_leaves_with_its_own_live_blocks() {
        let mut arena = SmallArena::new();
        let (one, two) = (
            Superblock { addr: 1 << 30, size: MIN_SUPERBLOCK },
            Superblock { addr: (1 << 30) + 4 * MIN_SUPERBLOCK, size: 2 * MIN_SUPERBLOCK },
        );
        arena.adopt(two);
        arena.adopt(one);
        let blocks: Vec<usize> =
            (0..6).map(|_| arena.allocate(MIN_SUPERBLOCK / 2, MIN_SUPERBLOCK / 2, 256).unwrap()).collect();
        assert!(arena.allocate(256, 256, 256).is_none(), "both full");
        for &b in blocks.iter().step_by(2) {
            arena.deallocate(b, MIN_SUPERBLOCK / 2).unwrap();
        }
        let out = arena.release_all();
        assert_eq!(out.iter().map(|(s, _)| *s).collect::<Vec<_>>(), vec![one, two], "by address");
        for (superblock, live) in &out {
            assert!(live.iter().all(|l| superblock.contains(l.addr) && l.size == MIN_SUPERBLOCK / 2));
            assert!(live.windows(2).all(|w| w[0].addr < w[1].addr));
        }
        let mut kept: Vec<usize> = out.iter().flat_map(|(_, live)| live.iter().map(|l| l.addr)).collect();
        kept.sort_unstable();
        let mut want: Vec<usize> = blocks.iter().skip(1).step_by(2).copied().collect();
        want.sort_unstable();
        assert_eq!(kept, want);
        assert_eq!((arena.held_bytes(), arena.allocated_count(), arena.state().free_bytes), (0, 0, 0));
        arena.check_invariants().unwrap();
    }

    fn arena_start(a: usize) -> usize {
        a & !(MIN_SUPERBLOCK - 1)
    }
}
