//! The free lists of one stream set: size classes, bitmaps, and the split and merge of blocks.
//! Nothing here knows about streams or CUDA; which set a block belongs to is the caller's record.
//!
//! A two-level segregated fit (TLSF: M. Masmano, I. Ripoll, A. Crespo, J. Real, "TLSF: a New
//! Dynamic Memory Allocator for Real-Time Systems", ECRTS 2004), with its block headers moved to
//! the host:
//!
//! ```text
//!  fl bitmap (one bit per power of two that has a free block)      1 0 1 1 0 ...
//!                                                                   |   | |
//!  sl bitmap per power (one bit per class with a free block)        |   | +-> 0 0 1 0 ... 1
//!                                                                   v   v
//!  heads[fl][sl]  ->  [block] <-> [block] <-> [block]      free list of one class
//!                     (prev_free / next_free links)
//!
//!  one chunk from the upstream, its blocks in address order (prev_phys / next_phys links):
//!  +----------+---------------------+--------+------------------+----------+
//!  | handed   | free, this set      | handed | free, this set   | free,    |
//!  | out      | (in a list above)   | out    | (in a list)      | other set|
//!  +----------+---------------------+--------+------------------+----------+
//!
//!  block records: a host-side table indexed by BlockId {addr, units, prev/next_phys,
//!  prev/next_free, owner: a set, handed out or cached}; record 0 is the sentinel NIL,
//!  so links are written without tests.
//! ```
//!
//! `map_floor` files a free block under the class its size rounds down to; `map_ceil` gives the
//! smallest class whose every block fits a request, so one search of the two bitmaps finds a
//! fitting block without walking a list. Freeing looks at the two physical neighbours and merges
//! with each that is free in the same set.

use super::block::{BlockId, BlockTable, NIL};
use super::size_class::{map_floor, Class, ClassBitmap, FL_COUNT, SL_COUNT};

/// How many blocks of the one class that may hold a fitting block are looked at before the pool
/// turns to other streams or the upstream. Bounded so the slow path stays O(1).
const FLOOR_CLASS_SCAN: usize = 32;

/// Segregated free lists: one doubly linked list of blocks per size class, and the bitmaps of
/// the classes that have one. Links live in the block records (`prev_free`, `next_free`).
pub(super) struct FreeLists {
    bitmap: ClassBitmap,
    /// Inline rather than boxed: one dependent load less on every free-list operation.
    heads: [[BlockId; SL_COUNT]; FL_COUNT],
}

impl FreeLists {
    pub(super) fn new() -> Self {
        FreeLists { bitmap: ClassBitmap::default(), heads: [[NIL; SL_COUNT]; FL_COUNT] }
    }

    /// The first block of class `c` (the remainders cost no more than the bounds checks they save).
    #[inline(always)]
    pub(super) fn first(&self, c: Class) -> BlockId {
        self.heads[c.fl % FL_COUNT][c.sl % SL_COUNT]
    }

    #[inline(always)]
    fn first_mut(&mut self, c: Class) -> &mut BlockId {
        &mut self.heads[c.fl % FL_COUNT][c.sl % SL_COUNT]
    }

    /// The smallest non-empty class at or above `c`: every block of it fits when `c` came from
    /// `map_ceil`.
    #[inline(always)]
    pub(super) fn class_at_or_above(&self, c: Class) -> Option<Class> {
        self.bitmap.find_at_or_above(c)
    }

    /// The class of the largest free blocks.
    #[inline]
    pub(super) fn largest_class(&self) -> Option<Class> {
        self.bitmap.highest()
    }

    /// Puts block `id` (in no list) first in the list of its size class.
    #[inline(always)]
    pub(super) fn push(&mut self, blocks: &mut BlockTable, id: BlockId) {
        let c = map_floor(blocks.get(id).units as usize);
        let old_first = self.first(c);
        *self.first_mut(c) = id;
        self.bitmap.set(c);
        blocks.get_mut(old_first).prev_free = id;
        let b = blocks.get_mut(id);
        b.prev_free = NIL;
        b.next_free = old_first;
    }

    /// Takes block `id` out of its list.
    #[inline(always)]
    pub(super) fn unlink(&mut self, blocks: &mut BlockTable, id: BlockId) {
        let (prev, next, units) = {
            let b = blocks.get(id);
            (b.prev_free, b.next_free, b.units as usize)
        };
        blocks.get_mut(next).prev_free = prev;
        if prev != NIL {
            blocks.get_mut(prev).next_free = next;
        } else {
            let c = map_floor(units);
            *self.first_mut(c) = next;
            if next == NIL {
                self.bitmap.clear(c);
            }
        }
    }

    /// Removes and returns the first block of class `c`, which must be non-empty.
    #[inline(always)]
    pub(super) fn pop(&mut self, blocks: &mut BlockTable, c: Class) -> BlockId {
        let id = self.first(c);
        let next = blocks.get(id).next_free;
        *self.first_mut(c) = next;
        if next == NIL {
            self.bitmap.clear(c);
        }
        blocks.get_mut(next).prev_free = NIL;
        id
    }

    /// Looks through class `c`, the one just below the classes that guarantee a fit, for a block
    /// of at least `search` bytes.
    #[cold]
    pub(super) fn scan_class(&self, blocks: &BlockTable, c: Class, search: usize) -> Option<BlockId> {
        let mut id = self.first(c);
        for _ in 0..FLOOR_CLASS_SCAN {
            if id == NIL {
                return None;
            }
            let b = blocks.get(id);
            if b.size() >= search {
                return Some(id);
            }
            id = b.next_free;
        }
        None
    }
}

/// Splits block `id` after `at` bytes (a multiple of the granule); returns the new record of the
/// back part, in no list and with the owner of `id`.
#[inline(always)]
pub(super) fn split(blocks: &mut BlockTable, id: BlockId, at: usize) -> BlockId {
    let b = *blocks.get(id);
    let at_units = (at >> 8) as u32;
    let mut back_block = b;
    back_block.addr = b.addr + at;
    back_block.units = b.units - at_units;
    back_block.prev_phys = id;
    back_block.prev_free = NIL;
    back_block.next_free = NIL;
    let back = blocks.insert(back_block);
    blocks.get_mut(b.next_phys).prev_phys = back;
    let front = blocks.get_mut(id);
    front.units = at_units;
    front.next_phys = back;
    back
}

/// Merges the physical successor of `id` (in no list) into `id` and drops its record.
#[inline(always)]
pub(super) fn absorb_next(blocks: &mut BlockTable, id: BlockId) {
    let next = blocks.get(id).next_phys;
    let (units, after) = {
        let n = blocks.get(next);
        (n.units, n.next_phys)
    };
    let b = blocks.get_mut(id);
    b.units += units;
    b.next_phys = after;
    blocks.get_mut(after).prev_phys = id;
    blocks.remove(next);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::{Block, Owner, SetId};

    fn block(addr: usize, units: u32) -> Block {
        Block::new(addr, units, Owner::Set(SetId::default()))
    }

    #[test]
    fn push_pop_and_unlink_keep_lists_and_bitmaps_in_step() {
        let mut blocks = BlockTable::default();
        let mut lists = FreeLists::new();
        let a = blocks.insert(block(0x1000, 4));
        let b = blocks.insert(block(0x2000, 4));
        let c = blocks.insert(block(0x3000, 100));
        for id in [a, b, c] {
            lists.push(&mut blocks, id);
        }
        let small = map_floor(4);
        assert_eq!(lists.first(small), b, "the last pushed is first");
        assert_eq!(lists.largest_class(), Some(map_floor(100)));
        lists.unlink(&mut blocks, b);
        assert_eq!(lists.first(small), a);
        assert_eq!(lists.pop(&mut blocks, small), a);
        assert_eq!(lists.class_at_or_above(small), Some(map_floor(100)), "class of 4 units is empty");
        lists.unlink(&mut blocks, c);
        assert_eq!(lists.largest_class(), None);
    }

    #[test]
    fn split_then_absorb_restores_the_block() {
        let mut blocks = BlockTable::default();
        let id = blocks.insert(Block::new(0x10000, 16, Owner::HandedOut));
        let back = split(&mut blocks, id, 4 << 8);
        assert_eq!((blocks.get(id).units, blocks.get(back).units), (4, 12));
        assert_eq!(blocks.get(back).addr, 0x10000 + (4 << 8));
        assert_eq!((blocks.get(id).next_phys, blocks.get(back).prev_phys), (back, id));
        absorb_next(&mut blocks, id);
        assert_eq!(blocks.get(id).units, 16);
        assert_eq!(blocks.get(id).next_phys, NIL);
    }
}
