//! The global arena: the one range taken from the upstream, carved into superblocks for the small
//! arenas and into the blocks of large requests.
//!
//! The range is one chunk of a [`CoalescingPool`] with a single set of free lists: a superblock
//! or a large block is a block of it, and returning either merges it with its free neighbours (as
//! RMM's global arena merges empty superblocks). A map of the superblocks small arenas hold, by
//! address, tells which arena owns a pointer that is freed through another.

use super::{superblock_size, Superblock, MIN_SUPERBLOCK};
use crate::error::{Misuse, PoolState};
use crate::pool::{CoalescingPool, SetId, StreamKey, GRANULE};
use std::collections::BTreeMap;

/// The global arena's state; the caller locks it.
pub struct GlobalArena {
    core: CoalescingPool,
    set: SetId,
    base: usize,
    size: usize,
    /// Superblocks held by small arenas: start → (size, owner's number).
    held: BTreeMap<usize, (usize, usize)>,
}

/// Where a pointer lies in the global arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// In a superblock that the arena numbered `owner` holds.
    Held {
        /// The owner's number, as given to [`GlobalArena::acquire`].
        owner: usize,
    },
    /// In the arena but in no held superblock: a large block, if anything.
    Global,
    /// Outside the arena.
    Outside,
}

impl GlobalArena {
    /// An arena over `[base, base + size)`; `size` a multiple of 256 of at least
    /// [`MIN_SUPERBLOCK`] and at most [`crate::pool::MAX_BLOCK_BYTES`].
    pub fn new(base: usize, size: usize) -> Self {
        let mut core = CoalescingPool::new();
        let set = core.set_of(StreamKey::LEGACY_DEFAULT);
        core.add_chunk(base, size, set);
        GlobalArena { core, set, base, size, held: BTreeMap::new() }
    }

    /// Takes a superblock for the arena numbered `owner`, which holds `held` bytes and needs to
    /// search for `search` bytes: the size [`superblock_size`] gives, or the smallest that serves
    /// the search when that is not free. `None` when no free range is large enough.
    pub fn acquire(&mut self, search: usize, held: usize, owner: usize) -> Option<Superblock> {
        let smallest = search.max(MIN_SUPERBLOCK).next_multiple_of(GRANULE);
        let preferred = superblock_size(search, held);
        let (addr, size) = match self.core.allocate(self.set, preferred, preferred, GRANULE) {
            Some(addr) => (addr, preferred),
            None if preferred > smallest => (self.core.allocate(self.set, smallest, smallest, GRANULE)?, smallest),
            None => return None,
        };
        self.held.insert(addr, (size, owner));
        Some(Superblock { addr, size })
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

    /// Takes a block of `size` bytes (`requested` rounded up to 256) aligned to `align` straight
    /// from the arena; `None` when no free range fits.
    pub fn allocate_large(&mut self, requested: usize, size: usize, align: usize) -> Option<usize> {
        self.core.allocate(self.set, requested, size, align)
    }

    /// Frees a block [`allocate_large`](Self::allocate_large) handed out; nothing changes on misuse.
    pub fn deallocate_large(&mut self, addr: usize, bytes: usize) -> Result<(), Misuse> {
        if self.held.contains_key(&addr) {
            return Err(Misuse::UnknownPointer { ptr: addr });
        }
        self.core.deallocate(addr, bytes, self.set)
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
        self.core.state()
    }

    /// Large blocks handed out and superblocks held.
    pub fn allocated_count(&self) -> usize {
        self.core.allocated_count()
    }

    /// Checks the arena's invariants; for tests.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.core.check_invariants()?;
        let held: usize = self.held.values().map(|&(size, _)| size).sum();
        let state = self.core.state();
        if held > state.pool_size - state.free_bytes {
            return Err(format!(
                "superblocks hold {held} bytes, more than the {} in use",
                state.pool_size - state.free_bytes
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::MAX_SUPERBLOCK;

    const BASE: usize = 1 << 32;

    #[test]
    fn superblocks_and_large_blocks_share_the_range() {
        let mut g = GlobalArena::new(BASE, 4 * MIN_SUPERBLOCK);
        let a = g.acquire(256, 0, 7).unwrap();
        assert_eq!(a.size, MIN_SUPERBLOCK);
        assert_eq!(g.lookup(a.addr + 5), Lookup::Held { owner: 7 });
        // A preferred size that does not fit falls back to the smallest.
        let b = g.acquire(256, MAX_SUPERBLOCK, 8).unwrap();
        assert_eq!(b.size, MIN_SUPERBLOCK);
        let large = g.allocate_large(MIN_SUPERBLOCK + 1, MIN_SUPERBLOCK + 256, GRANULE).unwrap();
        assert_eq!(g.lookup(large), Lookup::Global);
        assert_eq!(g.lookup(BASE - 1), Lookup::Outside);
        assert!(g.acquire(256, 0, 9).is_none(), "no whole megabyte is left");
        assert!(g.deallocate_large(a.addr, MIN_SUPERBLOCK).is_err(), "a held superblock is no large block");
        assert!(g.release(Superblock { addr: a.addr, size: 2 * MIN_SUPERBLOCK }).is_err());
        g.release(a).unwrap();
        g.release(b).unwrap();
        g.deallocate_large(large, MIN_SUPERBLOCK + 1).unwrap();
        let s = g.state();
        assert_eq!((s.free_bytes, s.largest_free_block), (4 * MIN_SUPERBLOCK, 4 * MIN_SUPERBLOCK), "all merged");
        g.check_invariants().unwrap();
    }
}
