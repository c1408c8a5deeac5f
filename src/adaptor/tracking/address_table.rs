//! A shard's map from block address to its record (any value type): open addressing with linear probing and
//! back-shift deletion.
//!
//! The tracking adaptor does one insert per allocation and one removal per free, under the
//! shard's lock. A `HashMap` spent about 100 instructions on each (its entry API probes twice on
//! insert, and removals leave tombstones that later probes walk over and rehashes clear); here a
//! lookup hashes with one multiplication, probes adjacent slots, and a removal moves the following
//! entries of the cluster back instead of leaving a tombstone, so probes stay short.

/// Multiplier of the address hash (Fibonacci hashing: the top bits index the table). It differs
/// from the shard selector's, whose top bits are the same for every address of one shard.
const MULTIPLIER: u64 = 0xD6E8_FEB8_6659_FD93;

/// The smallest table; a power of two.
const MIN_SLOTS: usize = 16;

/// Addresses and their records; at most half the slots in use, so probe runs stay short.
#[derive(Debug)]
pub(super) struct AddressTable<V> {
    slots: Box<[Option<(usize, V)>]>,
    len: usize,
}

impl<V> Default for AddressTable<V> {
    fn default() -> Self {
        AddressTable { slots: Self::empty(MIN_SLOTS), len: 0 }
    }
}

impl<V> AddressTable<V> {
    fn empty(n: usize) -> Box<[Option<(usize, V)>]> {
        (0..n).map(|_| None).collect()
    }

    /// The slot where `addr`'s probe starts.
    #[inline]
    fn home(&self, addr: usize) -> usize {
        let bits = self.slots.len().trailing_zeros();
        ((addr as u64).wrapping_mul(MULTIPLIER) >> (u64::BITS - bits)) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The slot holding `addr`, if any.
    #[inline]
    fn find(&self, addr: usize) -> Option<usize> {
        let mut i = self.home(addr);
        loop {
            match &self.slots[i] {
                None => return None,
                Some((a, _)) if *a == addr => return Some(i),
                Some(_) => i = (i + 1) & self.mask(),
            }
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The record of `addr`.
    #[inline]
    pub fn get(&self, addr: usize) -> Option<&V> {
        self.find(addr).and_then(|i| self.slots[i].as_ref()).map(|(_, r)| r)
    }

    /// Adds `rec` at `addr`; false (nothing changed) where `addr` is present.
    #[inline]
    pub fn insert(&mut self, addr: usize, rec: V) -> bool {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mut i = self.home(addr);
        loop {
            match &self.slots[i] {
                None => break,
                Some((a, _)) if *a == addr => return false,
                Some(_) => i = (i + 1) & self.mask(),
            }
        }
        self.slots[i] = Some((addr, rec));
        self.len += 1;
        true
    }

    /// Takes the record of `addr` out. The entries after it in its probe run move back where
    /// their own probe would still reach them, so no tombstone is left.
    #[inline]
    pub fn remove(&mut self, addr: usize) -> Option<V> {
        let mut hole = self.find(addr)?;
        let (_, rec) = self.slots[hole].take()?;
        self.len -= 1;
        let mut j = hole;
        loop {
            j = (j + 1) & self.mask();
            let Some((a, _)) = &self.slots[j] else { break };
            let home = self.home(*a);
            // The entry at j may fill the hole unless its home lies cyclically in (hole, j]:
            // then a probe for it starts after the hole and would never look there.
            let stays = if hole <= j { hole < home && home <= j } else { hole < home || home <= j };
            if !stays {
                self.slots[hole] = self.slots[j].take();
                hole = j;
            }
        }
        Some(rec)
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &V)> {
        self.slots.iter().filter_map(|s| s.as_ref().map(|(a, r)| (*a, r)))
    }

    #[cold]
    fn grow(&mut self) {
        let bigger = Self::empty(self.slots.len() * 2);
        let old = std::mem::replace(&mut self.slots, bigger);
        self.len = 0;
        for (addr, rec) in old.into_vec().into_iter().flatten() {
            self.insert(addr, rec);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::SplitMix64;
    use std::collections::HashMap;

    /// Random inserts and removals, clustered addresses included, against a `HashMap`.
    #[test]
    fn agrees_with_a_hash_map() {
        let mut rng = SplitMix64::new(3);
        let mut t = AddressTable::<usize>::default();
        let mut m: HashMap<usize, usize> = HashMap::new();
        for _ in 0..200_000 {
            let addr = (rng.next_u64() % 3000) as usize * if rng.next_u64() % 2 == 0 { 256 } else { 8 };
            if rng.next_u64() % 2 == 0 {
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
}
