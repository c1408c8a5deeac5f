//! The global arena: the one range taken from the upstream, carved into superblocks for the small
//! arenas and into the blocks of large requests.
//!
//! The range is one chunk of a [`CoalescingPool`] with a single set of free lists: a superblock
//! or a large block is a block of it, and returning either merges it with its free neighbours (as
//! RMM's global arena merges empty superblocks). A map of the superblocks small arenas hold, by
//! address, tells which arena owns a pointer that is freed through another.
//!
//! A large block freed on a stream the resource trusts goes to that stream's own free lists here
//! (`large_blocks.rs`), reused by that stream at once and by others only after a synchronisation.
//!
//! A defragmentation takes every superblock back, as RMM's does, also those with blocks still
//! handed out in them: such a superblock is *parked* here with those blocks, whole, and goes to
//! the next small arena that needs a block its free part can serve (RMM's first fit over its
//! superblocks), blocks and all. A block of a parked superblock is freed here; the superblock
//! merges with its free neighbours once its last block is freed.

use super::{superblock_size, Superblock, MIN_SUPERBLOCK};
use crate::error::{Misuse, PoolState};
use crate::{CoalescingPool, LiveBlock, SetId, StreamKey, GRANULE};
use std::collections::BTreeMap;

/// The global arena's state; the caller locks it.
pub struct GlobalArena {
    pub(super) core: CoalescingPool,
    /// The free lists every stream may take from: superblocks come from here.
    pub(super) set: SetId,
    base: usize,
    size: usize,
    /// Superblocks held by small arenas: start → (size, owner's number).
    pub(super) held: BTreeMap<usize, (usize, usize)>,
    /// Superblocks given back with blocks still handed out in them (handed out of `core` still):
    /// start → (size, those blocks by address).
    pub(super) parked: BTreeMap<usize, (usize, BTreeMap<usize, LiveBlock>)>,
}

/// A superblock for a small arena, with the blocks still handed out in it (by address) when it
/// comes from a defragmentation; the small arena adopts them too.
pub type Acquired = (Superblock, Vec<LiveBlock>);

/// Where a pointer lies in the global arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// In a superblock that the arena numbered `owner` holds.
    Held {
        /// The owner's number, as given to [`GlobalArena::acquire`].
        owner: usize,
    },
    /// In the arena but in no held superblock: a large block or a block of a parked superblock,
    /// if anything.
    Global,
    /// Outside the arena.
    Outside,
}

impl GlobalArena {
    /// An arena over `[base, base + size)`; `size` a multiple of 256 of at least
    /// [`MIN_SUPERBLOCK`] and at most [`crate::MAX_BLOCK_BYTES`].
    pub fn new(base: usize, size: usize) -> Self {
        let mut core = CoalescingPool::new();
        // The common free lists are no stream's: streams get sets of their own for large blocks.
        let set = core.set_of(StreamKey::FRESH);
        core.add_chunk(base, size, set);
        GlobalArena { core, set, base, size, held: BTreeMap::new(), parked: BTreeMap::new() }
    }

    /// Takes a superblock for the arena numbered `owner`, which holds `held` bytes and needs to
    /// search for `search` bytes: the size [`superblock_size`] gives, or the smallest that serves
    /// the search when that is not free, else the first parked superblock with a free range of
    /// `search` bytes, with its blocks. `None` when no free range is large enough.
    pub fn acquire(&mut self, search: usize, held: usize, owner: usize) -> Option<Acquired> {
        let smallest = search.max(MIN_SUPERBLOCK).next_multiple_of(GRANULE);
        let preferred = superblock_size(search, held);
        let fresh = match self.core.allocate(self.set, preferred, preferred, GRANULE) {
            Some(addr) => Some((addr, preferred)),
            None if preferred > smallest => {
                self.core.allocate(self.set, smallest, smallest, GRANULE).map(|a| (a, smallest))
            }
            None => None,
        };
        let (superblock, live) = match fresh {
            Some((addr, size)) => (Superblock { addr, size }, Vec::new()),
            None => self.unpark(search)?,
        };
        self.held.insert(superblock.addr, (superblock.size, owner));
        Some((superblock, live))
    }

    /// Takes the first parked superblock with a free range of `search` bytes out of the parked ones.
    #[cold]
    fn unpark(&mut self, search: usize) -> Option<Acquired> {
        let addr = self
            .parked
            .iter()
            .find(|(&addr, (size, live))| gaps(addr, *size, live).any(|(_, len)| len >= search))
            .map(|(&addr, _)| addr)?;
        let (size, live) = self.parked.remove(&addr)?;
        Some((Superblock { addr, size }, live.into_values().collect()))
    }

    /// Takes back a superblock that [`acquire`](Self::acquire) handed out, with the blocks still
    /// handed out in it (by address; none: it merges with its free neighbours now, as
    /// [`release`](Self::release)). Nothing changes on misuse.
    pub fn give_back(&mut self, superblock: Superblock, live: Vec<LiveBlock>) -> Result<(), Misuse> {
        if live.is_empty() {
            return self.release(superblock);
        }
        match self.held.get(&superblock.addr) {
            Some(&(size, _)) if size == superblock.size => {}
            _ => return Err(Misuse::UnknownPointer { ptr: superblock.addr }),
        }
        self.held.remove(&superblock.addr);
        let live = live.into_iter().map(|l| (l.addr, l)).collect();
        self.parked.insert(superblock.addr, (superblock.size, live));
        Ok(())
    }

    /// Takes back a superblock that [`acquire`](Self::acquire) handed out, all of it free.
    pub fn release(&mut self, superblock: Superblock) -> Result<(), Misuse> {
        match self.held.get(&superblock.addr) {
            Some(&(size, _)) if size == superblock.size => {}
            _ => return Err(Misuse::UnknownPointer { ptr: superblock.addr }),
        }
        self.core.deallocate(superblock.addr, superblock.size, self.set)?;
        self.held.remove(&superblock.addr);
        Ok(())
    }

    /// Frees a block [`allocate_large`](Self::allocate_large) handed out, or a block of a parked
    /// superblock, to the free lists every stream takes from (so after the freeing stream's work
    /// is done); nothing changes on misuse.
    pub fn deallocate(&mut self, addr: usize, bytes: usize) -> Result<(), Misuse> {
        if self.held.contains_key(&addr) {
            return Err(Misuse::UnknownPointer { ptr: addr });
        }
        let Some((&start, (size, live))) =
            self.parked.range_mut(..=addr).next_back().filter(|(&a, (s, _))| addr < a + *s)
        else {
            return self.core.deallocate(addr, bytes, self.set);
        };
        let Some(block) = live.get(&addr) else {
            return Err(match live.range(..addr).next_back() {
                Some((_, l)) if addr < l.addr + l.size => Misuse::InteriorPointer { ptr: addr, block_start: l.addr },
                _ => Misuse::DoubleFree { ptr: addr },
            });
        };
        if block.requested != bytes {
            return Err(Misuse::WrongSize { ptr: addr, allocated: block.requested, given: bytes });
        }
        live.remove(&addr);
        if live.is_empty() {
            let size = *size;
            self.parked.remove(&start);
            self.core.deallocate(start, size, self.set)?;
        }
        Ok(())
    }

    /// True when `addr` lies in a parked superblock.
    pub fn is_parked(&self, addr: usize) -> bool {
        self.parked.range(..=addr).next_back().is_some_and(|(&a, (s, _))| addr < a + *s)
    }

    /// Which part of the arena `addr` lies in.
    pub fn lookup(&self, addr: usize) -> Lookup {
        if let Some((&start, &(size, owner))) = self.held.range(..=addr).next_back() {
            if addr < start + size {
                return Lookup::Held { owner };
            }
        }
        if self.base <= addr && addr < self.base + self.size {
            Lookup::Global
        } else {
            Lookup::Outside
        }
    }

    /// The superblocks small arenas hold, by address, with their owners.
    pub fn held(&self) -> impl Iterator<Item = (Superblock, usize)> + '_ {
        self.held.iter().map(|(&addr, &(size, owner))| (Superblock { addr, size }, owner))
    }

    /// The arena's first byte and size.
    pub fn range(&self) -> (usize, usize) {
        (self.base, self.size)
    }

    /// Arena size, bytes neither held by small arenas nor handed out, and the largest free range.
    pub fn state(&self) -> PoolState {
        let mut state = self.core.state();
        for (&addr, (size, live)) in &self.parked {
            for (_, len) in gaps(addr, *size, live) {
                state.free_bytes += len;
                state.largest_free_block = state.largest_free_block.max(len);
            }
        }
        state
    }

    /// Large blocks handed out, superblocks held, and the blocks of parked superblocks.
    pub fn allocated_count(&self) -> usize {
        self.core.allocated_count() - self.parked.len()
            + self.parked.values().map(|(_, live)| live.len()).sum::<usize>()
    }

    /// Superblocks parked with blocks still handed out in them, and how many.
    pub fn parked(&self) -> impl Iterator<Item = (Superblock, usize)> + '_ {
        self.parked.iter().map(|(&addr, (size, live))| (Superblock { addr, size: *size }, live.len()))
    }

    /// Checks the arena's invariants; for tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.core.check_invariants()?;
        let held: usize = self.held.values().map(|&(size, _)| size).sum();
        let parked: usize = self.parked.values().map(|&(size, _)| size).sum();
        let state = self.core.state();
        if held + parked > state.pool_size - state.free_bytes {
            return Err(format!(
                "superblocks hold {} bytes, more than the {} in use",
                held + parked,
                state.pool_size - state.free_bytes
            ));
        }
        for (&addr, (size, live)) in &self.parked {
            if live.is_empty() || self.held.contains_key(&addr) {
                return Err(format!("parked superblock {addr:#x} is empty or also held"));
            }
            let mut at = addr;
            for l in live.values() {
                if l.addr < at || l.addr + l.size > addr + size || l.requested > l.size {
                    return Err(format!("block {:#x} of parked superblock {addr:#x} is out of place", l.addr));
                }
                at = l.addr + l.size;
            }
        }
        Ok(())
    }
}

/// The free ranges of a parked superblock at `addr` of `size` bytes: those between its blocks.
fn gaps<'a>(
    addr: usize,
    size: usize,
    live: &'a BTreeMap<usize, LiveBlock>,
) -> impl Iterator<Item = (usize, usize)> + 'a {
    let ends = live.values().map(|l| (l.addr, l.addr + l.size)).chain(std::iter::once((addr + size, addr + size)));
    ends.scan(addr, |at, (start, end)| {
        let gap = (*at, start - *at);
        *at = end;
        Some(gap)
    })
    .filter(|&(_, len)| len > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::{SmallArena, MAX_SUPERBLOCK};

    const BASE: usize = 1 << 32;

    #[test]
    fn superblocks_and_large_blocks_share_the_range() {
        let mut g = GlobalArena::new(BASE, 4 * MIN_SUPERBLOCK);
        let (a, _) = g.acquire(256, 0, 7).unwrap();
        assert_eq!(a.size, MIN_SUPERBLOCK);
        assert_eq!(g.lookup(a.addr + 5), Lookup::Held { owner: 7 });
        // A preferred size that does not fit falls back to the smallest.
        let (b, _) = g.acquire(256, MAX_SUPERBLOCK, 8).unwrap();
        assert_eq!(b.size, MIN_SUPERBLOCK);
        let large = g.allocate_large(MIN_SUPERBLOCK + 1, MIN_SUPERBLOCK + 256, GRANULE, None).unwrap();
        assert_eq!(g.lookup(large), Lookup::Global);
        assert_eq!(g.lookup(BASE - 1), Lookup::Outside);
        assert!(g.acquire(256, 0, 9).is_none(), "no whole megabyte is left");
        assert!(g.deallocate(a.addr, MIN_SUPERBLOCK).is_err(), "a held superblock is no large block");
        assert!(g.release(Superblock { addr: a.addr, size: 2 * MIN_SUPERBLOCK }).is_err());
        g.release(a).unwrap();
        g.release(b).unwrap();
        g.deallocate(large, MIN_SUPERBLOCK + 1).unwrap();
        let s = g.state();
        assert_eq!((s.free_bytes, s.largest_free_block), (4 * MIN_SUPERBLOCK, 4 * MIN_SUPERBLOCK), "all merged");
        g.check_invariants().unwrap();
    }

    /// The free bytes of the global arena and of small arenas together.
    fn free(g: &GlobalArena, arenas: &[&SmallArena]) -> usize {
        g.state().free_bytes + arenas.iter().map(|a| a.state().free_bytes).sum::<usize>()
    }

    #[test]
    fn a_superblock_with_a_live_block_moves_through_the_global_arena_to_another_arena() {
        const SIZE: usize = 2 * MIN_SUPERBLOCK;
        let mut g = GlobalArena::new(BASE, SIZE);
        let (mut thread, mut stream) = (SmallArena::new(), SmallArena::new());
        // The thread's arena takes a superblock and hands out a block of it.
        let (sb, live) = g.acquire(256, 0, 1).unwrap();
        assert!(live.is_empty());
        thread.adopt(sb);
        let kept = thread.allocate(300, 512, 256).unwrap();
        let freed = thread.allocate(4096, 4096, 256).unwrap();
        thread.deallocate(freed, 4096).unwrap();
        // A defragmentation takes it back with the block: parked, its free part counted.
        for (superblock, live) in thread.release_all() {
            g.give_back(superblock, live).unwrap();
        }
        g.check_invariants().unwrap();
        assert_eq!(free(&g, &[&thread, &stream]), SIZE - 512);
        assert_eq!(g.allocated_count(), 1, "the live block");
        // Fresh memory goes first; then the parked superblock, with its block, to another arena.
        let (fresh, live) = g.acquire(256, 0, 2).unwrap();
        assert!(live.is_empty() && !fresh.contains(kept));
        stream.adopt(fresh);
        let (moved, live) = g.acquire(MIN_SUPERBLOCK - 512, 0, 2).unwrap();
        assert_eq!((moved, live.as_slice()), (sb, &[LiveBlock { addr: kept, size: 512, requested: 300 }][..]));
        assert_eq!(g.lookup(kept), Lookup::Held { owner: 2 });
        stream.adopt_with_live(moved, &live);
        g.check_invariants().unwrap();
        stream.check_invariants().unwrap();
        assert_eq!(free(&g, &[&thread, &stream]), SIZE - 512);
        // Freed through the arena that holds it now: every byte comes back and merges.
        assert!(matches!(stream.deallocate(kept, 512), Err(Misuse::WrongSize { .. })));
        stream.deallocate(kept, 300).unwrap();
        assert_eq!(free(&g, &[&thread, &stream]), SIZE);
        for superblock in stream.release_empty() {
            g.release(superblock).unwrap();
        }
        let s = g.state();
        assert_eq!((s.free_bytes, s.largest_free_block, g.allocated_count()), (SIZE, SIZE, 0));
        g.check_invariants().unwrap();
    }

    #[test]
    fn a_block_of_a_parked_superblock_is_freed_in_the_global_arena() {
        let mut g = GlobalArena::new(BASE, 2 * MIN_SUPERBLOCK);
        let mut arena = SmallArena::new();
        let (sb, _) = g.acquire(256, 0, 1).unwrap();
        arena.adopt(sb);
        let a = arena.allocate(256, 256, 256).unwrap();
        let b = arena.allocate(1024, 1024, 256).unwrap();
        for (superblock, live) in arena.release_all() {
            g.give_back(superblock, live).unwrap();
        }
        assert_eq!(g.lookup(a), Lookup::Global);
        // Nothing parked serves a request larger than its free part.
        assert!(g.acquire(MIN_SUPERBLOCK, 0, 2).is_some(), "the fresh superblock");
        assert!(g.acquire(MIN_SUPERBLOCK, 0, 3).is_none());
        assert!(matches!(g.deallocate(b + 1024, 256), Err(Misuse::DoubleFree { .. })), "free part");
        assert!(matches!(g.deallocate(b + 256, 1024), Err(Misuse::InteriorPointer { .. })));
        assert!(matches!(g.deallocate(b, 1000), Err(Misuse::WrongSize { .. })));
        g.deallocate(a, 256).unwrap();
        assert!(matches!(g.deallocate(a, 256), Err(Misuse::DoubleFree { .. })));
        assert_eq!(g.state().free_bytes, MIN_SUPERBLOCK - 1024);
        g.deallocate(b, 1024).unwrap();
        // The last block freed: the superblock merges back and serves a whole one.
        assert_eq!(g.state().free_bytes, MIN_SUPERBLOCK);
        assert!(g.acquire(MIN_SUPERBLOCK, 0, 3).is_some());
        g.check_invariants().unwrap();
    }
}
