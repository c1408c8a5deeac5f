//! Which shard of a sharded pool owns which address range.
//!
//! Consulted only when a block is freed on a stream whose shard did not hand it out, and when
//! ranges move between shards; the common free never looks here.

use std::collections::BTreeMap;

/// Disjoint address ranges, each owned by one shard.
#[derive(Debug, Default)]
pub struct SegmentMap {
    /// start → (end, shard)
    ranges: BTreeMap<usize, (usize, usize)>,
}

impl SegmentMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The shard owning `addr`, if any range holds it.
    pub fn owner(&self, addr: usize) -> Option<usize> {
        let (_, &(end, shard)) = self.ranges.range(..=addr).next_back()?;
        (addr < end).then_some(shard)
    }

    /// Records that `shard` owns `[addr, addr + len)`, which may be new or part of ranges owned so
    /// far by other shards.
    pub fn assign(&mut self, addr: usize, len: usize, shard: usize) {
        self.remove(addr, len);
        self.ranges.insert(addr, (addr + len, shard));
    }

    /// Forgets `[addr, addr + len)`: no shard owns it any more (given back to the upstream).
    pub fn remove(&mut self, addr: usize, len: usize) {
        let end = addr + len;
        // Trim ranges overlapping the new one, keeping their parts outside it.
        let overlapping: Vec<usize> =
            self.ranges.range(..end).rev().take_while(|(_, &(e, _))| e > addr).map(|(&s, _)| s).collect();
        for s in overlapping {
            if let Some((e, owner)) = self.ranges.remove(&s) {
                if s < addr {
                    self.ranges.insert(s, (addr, owner));
                }
                if e > end {
                    self.ranges.insert(end, (e, owner));
                }
            }
        }
    }

    /// Number of ranges (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Total bytes owned by `shard` (for consistency checks).
    pub fn bytes_of(&self, shard: usize) -> usize {
        self.ranges.iter().filter(|(_, &(_, s))| s == shard).map(|(&a, &(e, _))| e - a).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reassigning_a_middle_part_splits_the_owner() {
        let mut m = SegmentMap::new();
        m.assign(0x1000, 0x1000, 0);
        m.assign(0x1400, 0x100, 3);
        assert_eq!(m.owner(0x1000), Some(0));
        assert_eq!(m.owner(0x13ff), Some(0));
        assert_eq!(m.owner(0x1400), Some(3));
        assert_eq!(m.owner(0x14ff), Some(3));
        assert_eq!(m.owner(0x1500), Some(0));
        assert_eq!(m.owner(0x2000), None);
        assert_eq!(m.owner(0xfff), None);
        assert_eq!(m.bytes_of(0), 0xf00);
        m.assign(0x1000, 0x1000, 1);
        assert_eq!(m.len(), 1);
        assert_eq!(m.bytes_of(1), 0x1000);
    }
}
