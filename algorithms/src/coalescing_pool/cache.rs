//! The streams' exact-size caches of small blocks, emptied back into the free lists (see the top
//! of `coalescing_pool.rs`). A cached block keeps its entry in the address map, so a free into the
//! cache and an allocation from it cost the map nothing; the entry goes when the block leaves the
//! cache for the free lists.

use super::{CoalescingPool, SetId, CACHE_CLASSES, GRANULE_SHIFT};
use crate::block::NIL;

impl CoalescingPool {
    /// A granule-aligned block of exactly `size` bytes (`requested` rounded up to the granule)
    /// from `set`'s cache, handed out: `None`, with nothing changed, when the cache holds none (or
    /// `size` is not cached).
    #[inline(always)]
    pub fn allocate_cached(&mut self, set: SetId, requested: usize, size: usize) -> Option<usize> {
        let units = size >> GRANULE_SHIFT;
        if units >= CACHE_CLASSES {
            return None;
        }
        // `get_mut`: no panic on this path, which callers take without catching one (a set that
        // is not there is declined, and the whole call reports it).
        let lists = self.sets.get_mut(set.index())?;
        let id = lists.cache[units];
        if id == NIL {
            return None;
        }
        let b = self.blocks.get_mut(id);
        lists.cache[units] = b.next_free;
        lists.cache_len[units] -= 1;
        lists.free_bytes -= size;
        self.cached_blocks -= 1;
        // A cached block kept its entry in the address map: no insertion.
        Some(self.hand_out_cached(id, requested, size))
    }

    /// Returns every cached block to its stream's free lists, merging it with free neighbours as a
    /// free would have. False when no block was cached.
    #[cold]
    #[inline(never)]
    pub fn flush_caches(&mut self) -> bool {
        if self.cached_blocks == 0 {
            return false;
        }
        for set in (0..self.sets.len()).map(SetId::at) {
            for units in 1..CACHE_CLASSES {
                let mut id = std::mem::replace(&mut self.sets[set].cache[units], NIL);
                self.sets[set].cache_len[units] = 0;
                while id != NIL {
                    let (next, addr) = {
                        let b = self.blocks.get(id);
                        (b.next_free, b.addr)
                    };
                    // Out of the address map, where it stayed while cached.
                    let slot = self.allocated.find(addr, &self.blocks);
                    debug_assert!(slot.is_some(), "cached block {addr:#x} missing from the address map");
                    if let Some(slot) = slot {
                        self.allocated.remove_at(slot, &self.blocks);
                    }
                    // `release` counts the bytes in again as it links the (merged) block.
                    self.sets[set].free_bytes -= units << GRANULE_SHIFT;
                    self.release(set, id);
                    id = next;
                }
            }
        }
        self.cached_blocks = 0;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coalescing_pool::GRANULE;
    use crate::error::Misuse;
    use crate::StreamKey;

    const KIB: usize = 1 << 10;

    /// A pool of one 1 MiB chunk on one stream, with `n` blocks of 1 KiB freed into its cache.
    fn pool_with_cached(n: usize) -> (CoalescingPool, SetId, Vec<usize>) {
        let mut p = CoalescingPool::new();
        let s = p.set_of(StreamKey::of_handle(0x1000));
        p.add_chunk(1 << 24, 1 << 20, s);
        let blocks: Vec<usize> = (0..n).map(|_| p.allocate(s, 1000, KIB, GRANULE).unwrap()).collect();
        for &a in &blocks {
            p.deallocate(a, 1000, s).unwrap();
        }
        (p, s, blocks)
    }

    #[test]
    fn cached_blocks_keep_their_entries_and_are_not_counted_as_allocated() {
        let (mut p, s, blocks) = pool_with_cached(8);
        assert_eq!((p.cached_blocks, p.allocated_count(), p.allocated.len()), (8, 0, 8));
        p.check_invariants().unwrap();
        // The cache hands the last one freed back, still in the map, with its new slack.
        let a = p.allocate(s, 700, KIB, GRANULE).unwrap();
        assert_eq!(a, blocks[7]);
        assert_eq!((p.cached_blocks, p.allocated_count(), p.allocated.len()), (7, 1, 8));
        p.check_invariants().unwrap();
        assert_eq!(p.deallocate(a, 1000, s), Err(Misuse::WrongSize { ptr: a, allocated: 700, given: 1000 }));
        p.deallocate(a, 700, s).unwrap();
        p.check_invariants().unwrap();
    }

    #[test]
    fn a_cached_block_freed_again_is_a_double_free_and_changes_nothing() {
        let (mut p, s, blocks) = pool_with_cached(4);
        let before = p.state();
        for &a in &blocks {
            assert_eq!(p.try_deallocate(a, 1000, s), None, "found as if not handed out");
            assert_eq!(p.deallocate(a, 1000, s), Err(Misuse::DoubleFree { ptr: a }));
        }
        assert_eq!((p.state(), p.cached_blocks, p.allocated.len()), (before, 4, 4));
        p.check_invariants().unwrap();
    }

    #[test]
    fn a_flush_takes_the_entries_out_of_the_map_and_merges_the_blocks() {
        let (mut p, s, blocks) = pool_with_cached(16);
        assert!(p.flush_caches());
        assert_eq!((p.cached_blocks, p.allocated.len(), p.allocated_count()), (0, 0, 0));
        assert_eq!(p.state().largest_free_block, 1 << 20, "merged into the one chunk");
        p.check_invariants().unwrap();
        assert_eq!(p.deallocate(blocks[3], 1000, s), Err(Misuse::DoubleFree { ptr: blocks[3] }));
        assert!(!p.flush_caches(), "nothing left to flush");
    }
}
