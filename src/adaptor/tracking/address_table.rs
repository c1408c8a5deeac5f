//! A shard's map from block address to its record (any plain-data value type): open addressing with linear
//! probing and back-shift deletion.
//!
//! The tracking adaptor does one insert per allocation and one removal per free, under the
//! shard's lock. A `HashMap` spent about 100 instructions on each (its entry API probes twice on
//! insert, and removals leave tombstones that later probes walk over and rehashes clear); here a
//! lookup hashes with one multiplication, probes adjacent slots, and a removal moves the following
//! entries of the cluster back instead of leaving a tombstone, so probes stay short.
//!
//! A slot is its address and its record side by side, with no `Option` around them: an empty slot
//! holds the address [`EMPTY`] (`usize::MAX`, which no allocation of at least one byte can start
//! at, since it would end past the address space) and a default record. A table starts with no
//! slots at all, so the many shards of a tracking adaptor that never see a block cost no memory.

/// The address of an empty slot. [`AddressTable::insert`] refuses it.
const EMPTY: usize = usize::MAX;

/// Multiplier of the address hash (Fibonacci hashing: the top bits index the table).
const MULTIPLIER: u64 = 0xD6E8_FEB8_6659_FD93;

/// The smallest table once something is inserted; a power of two.
const MIN_SLOTS: usize = 16;

/// Addresses and their records; at most a quarter of the slots in use, so that probe runs, and
/// the run a removal walks to close its hole, stay one or two slots long.
#[derive(Debug)]
pub(super) struct AddressTable<V> {
    slots: Box<[(usize, V)]>,
    len: usize,
    /// `slots.len() - 1` (0 while there are no slots).
    mask: usize,
    /// What the hash is shifted right by so that its top bits index `slots`.
    shift: u32,
}

impl<V: Default> Default for AddressTable<V> {
    fn default() -> Self {
        AddressTable { slots: Box::new([]), len: 0, mask: 0, shift: u64::BITS - 1 }
    }
}

impl<V: Default + Copy> AddressTable<V> {
    /// The slot where `addr`'s probe starts (only meaningful while there are slots).
    #[inline]
    fn home(&self, addr: usize) -> usize {
        ((addr as u64).wrapping_mul(MULTIPLIER) >> self.shift) as usize & self.mask
    }

    /// The address in slot `i & mask`. Called only while there are slots: `find` returns early
    /// on an empty table, `insert` grows one first, and `remove` walks only after `find` found.
    #[inline]
    fn key(&self, i: usize) -> usize {
        debug_assert!(!self.slots.is_empty());
        // SAFETY: `slots` is not empty (see above) and its length is a power of two, `mask` one
        // less, so `i & mask < slots.len()`.
        unsafe { self.slots.get_unchecked(i & self.mask).0 }
    }

    /// The slot holding `addr`, if any.
    #[inline]
    fn find(&self, addr: usize) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mut i = self.home(addr);
        loop {
            let a = self.key(i);
            // Empty first, so that `EMPTY` itself is never found.
            if a == EMPTY {
                return None;
            }
            if a == addr {
                return Some(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The record of `addr`.
    #[inline]
    pub fn get(&self, addr: usize) -> Option<&V> {
        self.find(addr).map(|i| &self.slots[i].1)
    }

    /// Adds `rec` at `addr`; false (nothing changed) where `addr` is present, or is [`EMPTY`].
    #[inline]
    pub fn insert(&mut self, addr: usize, rec: V) -> bool {
        if addr == EMPTY {
            return false;
        }
        if (self.len + 1) * 4 > self.slots.len() {
            self.grow();
        }
        let mut i = self.home(addr);
        loop {
            let a = self.key(i);
            if a == addr {
                return false;
            }
            if a == EMPTY {
                break;
            }
            i = (i + 1) & self.mask;
        }
        self.slots[i] = (addr, rec);
        self.len += 1;
        true
    }

    /// Takes the record of `addr` out. The entries after it in its probe run move back where
    /// their own probe would still reach them, so no tombstone is left.
    #[inline]
    pub fn remove(&mut self, addr: usize) -> Option<V> {
        let mut hole = self.find(addr)?;
        let rec = self.slots[hole].1;
        self.slots[hole] = (EMPTY, V::default());
        self.len -= 1;
        let mut j = hole;
        loop {
            j = (j + 1) & self.mask;
            let a = self.key(j);
            if a == EMPTY {
                break;
            }
            let home = self.home(a);
            // The entry at j may fill the hole unless its home lies cyclically in (hole, j]:
            // then a probe for it starts after the hole and would never look there.
            let stays = if hole <= j { hole < home && home <= j } else { hole < home || home <= j };
            if !stays {
                // The hole moves to j.
                self.slots[hole] = self.slots[j];
                self.slots[j] = (EMPTY, V::default());
                hole = j;
            }
        }
        Some(rec)
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &V)> {
        self.slots.iter().filter(|(a, _)| *a != EMPTY).map(|(a, r)| (*a, r))
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(MIN_SLOTS);
        let bigger: Box<[(usize, V)]> = (0..n).map(|_| (EMPTY, V::default())).collect();
        let old = std::mem::replace(&mut self.slots, bigger);
        self.mask = n - 1;
        self.shift = u64::BITS - n.trailing_zeros();
        self.len = 0;
        for (addr, rec) in old.into_vec() {
            if addr != EMPTY {
                self.insert(addr, rec);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::SplitMix64;
    use std::collections::HashMap;

    /// Random inserts and removals, clustered addresses and address 0 included, against a
    /// `HashMap`.
    #[test]
    fn agrees_with_a_hash_map() {
        let mut rng = SplitMix64::new(3);
        let mut t = AddressTable::<usize>::default();
        let mut m: HashMap<usize, usize> = HashMap::new();
        for _ in 0..200_000 {
            let addr = (rng.next_u64() % 3000) as usize * if rng.next_u64().is_multiple_of(2) { 256 } else { 8 };
            if rng.next_u64().is_multiple_of(2) {
                let bytes = (rng.next_u64() % 1000) as usize;
                let fresh = !m.contains_key(&addr);
                assert_eq!(t.insert(addr, bytes), fresh);
                m.entry(addr).or_insert(bytes);
            } else {
                assert_eq!(t.remove(addr), m.remove(&addr));
            }
            assert_eq!(t.len(), m.len());
        }
        for (&addr, &bytes) in &m {
            assert_eq!(t.get(addr), Some(&bytes));
        }
        assert_eq!(t.iter().count(), m.len());
    }

    /// An empty table answers without slots, and the empty marker is never taken for an address.
    #[test]
    fn an_empty_table_has_no_slots_and_refuses_the_marker() {
        let mut t = AddressTable::<usize>::default();
        assert_eq!(t.get(0x100), None);
        assert_eq!((t.remove(0x100), t.slots.len()), (None, 0));
        assert!(!t.insert(EMPTY, 1));
        assert_eq!((t.len(), t.get(EMPTY)), (0, None));
        assert!(t.insert(0x100, 5));
        assert_eq!(t.get(EMPTY), None);
        assert_eq!(t.remove(EMPTY), None);
        assert_eq!((t.remove(0x100), t.len()), (Some(5), 0));
    }
}
