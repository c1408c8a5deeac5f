//! Pointer → block lookup for the blocks currently handed out: an open-addressing table specialised
//! for 256-aligned addresses.
//!
//! Every free does one lookup and one removal and every allocation one insertion, so this table is
//! on the hot path. Entries are 16 bytes (four to a cache line); the home slot is a Fibonacci hash of
//! the address; collisions probe linearly; removal shifts the following entries back, so there are
//! no tombstones and probe sequences stay short at any age. The load factor stays at or below 1/4:
//! at 1/2 the probe loops' exits mispredicted often enough to cost more than the larger table's
//! cache footprint (16 bytes × 4 per live block).

use super::block::BlockId;

#[derive(Clone, Copy)]
struct Entry {
    /// The block's start address; `EMPTY` marks a vacant slot (no block starts at address 0).
    addr: usize,
    id: BlockId,
    /// The block's size less the bytes the user asked for (0..=255: sizes are rounded up to 256),
    /// so a free's size is checked without another memory access.
    slack: u32,
}

const EMPTY: usize = 0;
const VACANT: Entry = Entry { addr: EMPTY, id: 0, slack: 0 };
const MIN_CAPACITY: usize = 64;
/// The table grows before more than 1 / MAX_LOAD_INVERSE of its slots are taken.
const MAX_LOAD_INVERSE: usize = 4;

/// Maps the start address of each allocated block to its record.
pub(crate) struct AddressMap {
    slots: Box<[Entry]>,
    /// 64 − log2(capacity): the shift that keeps the hash's top bits.
    shift: u32,
    len: usize,
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
        AddressMap { slots: vec![VACANT; capacity].into_boxed_slice(), shift: 64 - capacity.trailing_zeros(), len: 0 }
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The entry at `i`, which must be masked (`& self.mask()`) or a home slot.
    #[inline(always)]
    fn at(&self, i: usize) -> &Entry {
        debug_assert!(i < self.slots.len());
        // SAFETY: the capacity is a power of two and never shrinks, and every index is a home slot
        // (the top log2(capacity) bits of the hash), masked with capacity - 1, or a `Slot` that
        // `find` made so, so it is in bounds.
        unsafe { self.slots.get_unchecked(i) }
    }

    #[inline(always)]
    fn at_mut(&mut self, i: usize) -> &mut Entry {
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

    /// Adds `addr` (which must not be present and must not be 0).
    #[inline]
    pub fn insert(&mut self, addr: usize, id: BlockId, slack: u32) {
        debug_assert!(addr != EMPTY);
        if (self.len + 1) * MAX_LOAD_INVERSE > self.slots.len() {
            self.grow();
        }
        let mask = self.mask();
        let mut i = self.home(addr);
        while self.at(i).addr != EMPTY {
            debug_assert!(self.at(i).addr != addr, "address inserted twice");
            i = (i + 1) & mask;
        }
        *self.at_mut(i) = Entry { addr, id, slack };
        self.len += 1;
    }

    /// The slot holding `addr`, if present.
    #[inline]
    pub fn find(&self, addr: usize) -> Option<Slot> {
        let mask = self.mask();
        let mut i = self.home(addr);
        loop {
            let e = self.at(i).addr;
            if e == addr {
                return (addr != EMPTY).then_some(Slot(i));
            }
            if e == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// The block of a found slot.
    #[inline]
    pub fn id_at(&self, slot: Slot) -> BlockId {
        self.at(slot.0).id
    }

    /// The slack of a found slot (block size − requested bytes).
    #[inline]
    pub fn slack_at(&self, slot: Slot) -> u32 {
        self.at(slot.0).slack
    }

    /// The block at `addr`, if present.
    pub fn get(&self, addr: usize) -> Option<BlockId> {
        self.find(addr).map(|s| self.id_at(s))
    }

    /// Removes a found entry, shifting later members of its probe run back so lookups never meet a
    /// gap inside a run.
    #[inline]
    pub fn remove_at(&mut self, slot: Slot) {
        let mask = self.mask();
        let mut hole = slot.0;
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let e = *self.at(j);
            if e.addr == EMPTY {
                break;
            }
            // Move `e` into the hole if its home is not cyclically within (hole, j].
            let home = self.home(e.addr);
            let stays = if hole < j { hole < home && home <= j } else { hole < home || home <= j };
            if !stays {
                *self.at_mut(hole) = e;
                hole = j;
            }
        }
        *self.at_mut(hole) = VACANT;
        self.len -= 1;
    }

    #[cold]
    fn grow(&mut self) {
        let old = std::mem::replace(self, Self::with_capacity(self.slots.len() * 2));
        for e in old.slots.iter().filter(|e| e.addr != EMPTY) {
            self.insert(e.addr, e.id, e.slack);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn behaves_like_a_hash_map_under_random_churn() {
        let mut m = AddressMap::default();
        let mut model: HashMap<usize, BlockId> = HashMap::new();
        let mut x = 12345u64;
        for step in 0..200_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Few distinct addresses so inserts, hits and misses all happen often.
            let addr = ((x % 3000) as usize + 1) << 8;
            match (model.contains_key(&addr), x % 3) {
                (false, 0 | 1) => {
                    m.insert(addr, step, step % 256);
                    model.insert(addr, step);
                }
                (true, 0) => {
                    let s = m.find(addr).expect("present");
                    assert_eq!(m.id_at(s), model[&addr]);
                    m.remove_at(s);
                    model.remove(&addr);
                }
                _ => assert_eq!(m.get(addr), model.get(&addr).copied()),
            }
            assert_eq!(m.len(), model.len());
        }
        for (&a, &id) in &model {
            assert_eq!(m.get(a), Some(id));
        }
        assert_eq!(m.get(0), None);
    }
}
