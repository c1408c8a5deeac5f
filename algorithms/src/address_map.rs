//! Pointer → block lookup for the blocks currently handed out, and for those kept whole in a
//! stream's exact-size cache (their entries stay while they are cached, so a free into the cache
//! and an allocation from it touch no slot): an open-addressing table of block ids, specialised for
//! 256-aligned addresses.
//!
//! Every free does one lookup and at most one removal and every allocation at most one insertion,
//! so this table is on the hot path. A slot holds only a block id (4 bytes, sixteen to a cache line): the address it
//! is compared with is the block record's, which the caller reads next anyway. The home slot is a
//! Fibonacci hash of the address; collisions probe linearly; removal shifts the following entries
//! back, so there are no tombstones and probe sequences stay short at any age. The load factor
//! stays at or below 1/8: the probe loops' exits then rarely mispredict, and the table of 1000
//! live blocks (32 KiB) still fits a level-1 data cache, where 16-byte entries at 1/4 did not.

use super::block::{BlockId, BlockTable, NIL};

/// A vacant slot: the sentinel's id, which is never handed out.
const EMPTY: BlockId = NIL;
const MIN_CAPACITY: usize = 64;
/// The table grows before more than 1 / MAX_LOAD_INVERSE of its slots are taken.
const MAX_LOAD_INVERSE: usize = 8;

/// Maps the start address of each allocated block to its record. The addresses live in the
/// records, so every call that compares or rehashes takes the pool's [`BlockTable`].
pub(crate) struct AddressMap {
    slots: Box<[BlockId]>,
    /// 64 − log2(capacity): the shift that keeps the hash's top bits.
    shift: u32,
    len: usize,
    /// The most entries before the table grows (capacity / MAX_LOAD_INVERSE): kept, so that an
    /// insertion compares with it rather than computing it.
    max_len: usize,
}

impl Default for AddressMap {
    fn default() -> Self {
        Self::with_capacity(MIN_CAPACITY)
    }
}

/// A position in the table returned by [`AddressMap::find`].
#[derive(Clone, Copy)]
pub(crate) struct Slot(usize);

impl AddressMap {
    fn with_capacity(capacity: usize) -> Self {
        debug_assert!(capacity.is_power_of_two());
        AddressMap {
            slots: vec![EMPTY; capacity].into_boxed_slice(),
            shift: 64 - capacity.trailing_zeros(),
            len: 0,
            max_len: capacity / MAX_LOAD_INVERSE,
        }
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The id at `i`, which must be masked (`& self.mask()`) or a home slot.
    #[inline(always)]
    fn at(&self, i: usize) -> BlockId {
        debug_assert!(i < self.slots.len());
        // SAFETY: the capacity is a power of two and never shrinks, and every index is a home slot
        // (the top log2(capacity) bits of the hash), masked with capacity - 1, or a `Slot` that
        // `find` made so, so it is in bounds.
        unsafe { *self.slots.get_unchecked(i) }
    }

    #[inline(always)]
    fn at_mut(&mut self, i: usize) -> &mut BlockId {
        debug_assert!(i < self.slots.len());
        // SAFETY: as in `at`.
        unsafe { self.slots.get_unchecked_mut(i) }
    }

    #[inline]
    fn home(&self, addr: usize) -> usize {
        ((addr as u64 >> 8).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Adds block `id` (not `NIL`, not present), keyed by its address in `blocks`.
    #[inline]
    pub fn insert(&mut self, id: BlockId, blocks: &BlockTable) {
        self.insert_at(id, blocks.get(id).addr, blocks);
    }

    /// [`insert`](Self::insert) for a caller that has `id`'s address (`addr`) at hand: read
    /// again here, it would be loaded again after the caller's stores to the record.
    #[inline]
    pub fn insert_at(&mut self, id: BlockId, addr: usize, blocks: &BlockTable) {
        debug_assert!(id != EMPTY);
        debug_assert_eq!(addr, blocks.get(id).addr);
        if self.len >= self.max_len {
            self.grow(blocks);
        }
        let mask = self.mask();
        let mut i = self.home(addr);
        while self.at(i) != EMPTY {
            debug_assert!(self.at(i) != id, "block inserted twice");
            i = (i + 1) & mask;
        }
        *self.at_mut(i) = id;
        self.len += 1;
    }

    /// The slot of the block at `addr`, if present.
    #[inline]
    pub fn find(&self, addr: usize, blocks: &BlockTable) -> Option<Slot> {
        let mask = self.mask();
        let mut i = self.home(addr);
        loop {
            let id = self.at(i);
            if id == EMPTY {
                return None;
            }
            if blocks.get(id).addr == addr {
                return Some(Slot(i));
            }
            i = (i + 1) & mask;
        }
    }

    /// The block of a found slot.
    #[inline]
    pub fn id_at(&self, slot: Slot) -> BlockId {
        self.at(slot.0)
    }

    /// The block at `addr`, if present.
    pub fn get(&self, addr: usize, blocks: &BlockTable) -> Option<BlockId> {
        self.find(addr, blocks).map(|s| self.id_at(s))
    }

    /// Removes a found entry, shifting later members of its probe run back so lookups never meet a
    /// gap inside a run.
    #[inline]
    pub fn remove_at(&mut self, slot: Slot, blocks: &BlockTable) {
        let mask = self.mask();
        let mut hole = slot.0;
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let id = self.at(j);
            if id == EMPTY {
                break;
            }
            // Move the entry into the hole if its home is not cyclically within (hole, j].
            let home = self.home(blocks.get(id).addr);
            let stays = if hole < j { hole < home && home <= j } else { hole < home || home <= j };
            if !stays {
                *self.at_mut(hole) = id;
                hole = j;
            }
        }
        *self.at_mut(hole) = EMPTY;
        self.len -= 1;
    }

    #[cold]
    fn grow(&mut self, blocks: &BlockTable) {
        let old = std::mem::replace(self, Self::with_capacity(self.slots.len() * 2));
        for &id in old.slots.iter().filter(|&&id| id != EMPTY) {
            self.insert(id, blocks);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::{Block, Owner};
    use std::collections::HashMap;

    #[test]
    fn behaves_like_a_hash_map_under_random_churn() {
        let mut m = AddressMap::default();
        let mut blocks = BlockTable::default();
        // One record per possible address, so an id names its address for the whole test.
        let ids: Vec<BlockId> =
            (1..=3000usize).map(|a| blocks.insert(Block::new(a << 8, 1, Owner::HandedOut))).collect();
        let mut model: HashMap<usize, BlockId> = HashMap::new();
        let mut x = 12345u64;
        for _ in 0..200_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Few distinct addresses so inserts, hits and misses all happen often.
            let k = (x % 3000) as usize;
            let addr = (k + 1) << 8;
            match (model.contains_key(&addr), x % 3) {
                (false, 0 | 1) => {
                    m.insert(ids[k], &blocks);
                    model.insert(addr, ids[k]);
                }
                (true, 0) => {
                    let s = m.find(addr, &blocks).expect("present");
                    assert_eq!(m.id_at(s), model[&addr]);
                    m.remove_at(s, &blocks);
                    model.remove(&addr);
                }
                _ => assert_eq!(m.get(addr, &blocks), model.get(&addr).copied()),
            }
            assert_eq!(m.len(), model.len());
        }
        for (&a, &id) in &model {
            assert_eq!(m.get(a, &blocks), Some(id));
        }
        assert_eq!(m.get(0, &blocks), None);
        assert_eq!(m.get(3001 << 8, &blocks), None);
    }
}
