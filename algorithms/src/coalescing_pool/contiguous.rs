//! Ranges that join the chunks around them. A pool over one reserved range of addresses, whose
//! memory is mapped and unmapped in place, grows by a range that starts where a chunk ends, and
//! gives back whole granules of its free blocks without moving any address: then a free tail and
//! the memory added after it are one block, and a range mapped again joins both of its neighbours.

use super::{CoalescingPool, SetId, GRANULE, GRANULE_SHIFT};
use crate::block::{Block, BlockId, Owner, MAX_BLOCK_BYTES, NIL};
use crate::free_list::split;

impl CoalescingPool {
    /// Adds `[addr, addr + size)` as free memory of `set`, joined to the chunk that ends at `addr`
    /// and to the one that starts at `addr + size`, where the pool has them: free blocks of `set`
    /// at the joins merge with it, so one block may span what were separate ranges. Without such
    /// neighbours it is [`add_chunk`](Self::add_chunk). `addr` and `size` must be multiples of
    /// 256, the range must overlap no chunk, and the joined chunk must stay within
    /// [`MAX_BLOCK_BYTES`].
    pub fn attach(&mut self, addr: usize, size: usize, set: SetId) {
        debug_assert!(addr.is_multiple_of(GRANULE) && size.is_multiple_of(GRANULE) && size > 0);
        let end = addr + size;
        let before = self.chunks.iter().position(|&(a, s)| a + s == addr);
        let after = self.chunks.iter().position(|&(a, _)| a == end);
        let joined_start = before.map_or(addr, |i| self.chunks[i].0);
        let joined_end = after.map_or(end, |i| self.chunks[i].0 + self.chunks[i].1);
        debug_assert!(joined_end - joined_start <= MAX_BLOCK_BYTES, "a chunk past the largest block");
        let id = self.blocks.insert(Block::new(addr, (size >> GRANULE_SHIFT) as u32, Owner::HandedOut));
        if before.is_some() {
            let last = self.block_ending_at(addr);
            self.blocks.get_mut(last).next_phys = id;
            self.blocks.get_mut(id).prev_phys = last;
        }
        if after.is_some() {
            let first = self.block_starting_chunk_at(end);
            self.blocks.get_mut(first).prev_phys = id;
            self.blocks.get_mut(id).next_phys = first;
        }
        // Both neighbours, if free on `set`, merge with the new block.
        self.release(set, id);
        self.chunks.retain(|&(a, s)| a + s != addr && a != end);
        self.chunks.push((joined_start, joined_end - joined_start));
        self.pool_size += size;
    }

    /// Takes out of the pool every whole `granule` (a power of two, at least 256 bytes) of the
    /// free blocks of the sets that `take` accepts, lowest address first, until `max` bytes are
    /// out; returns the ranges, each a run of whole granules. What is left of each block stays
    /// free in its set; chunks are cut around the ranges, whose addresses stay reserved for
    /// [`attach`](Self::attach). Cached blocks go back to their sets first.
    pub fn detach_free_granules(
        &mut self,
        granule: usize,
        max: usize,
        take: impl Fn(SetId) -> bool,
    ) -> Vec<(usize, usize)> {
        debug_assert!(granule.is_power_of_two() && granule >= GRANULE);
        let free = self.free_blocks_by_address(take);
        let mut out = Vec::new();
        let mut left = max & !(granule - 1);
        for (_, id) in free {
            let b = *self.blocks.get(id);
            let start = (b.addr + granule - 1) & !(granule - 1);
            let end = (b.end() & !(granule - 1)).min(start.saturating_add(left));
            if end <= start {
                continue;
            }
            out.push(self.cut_free_range(id, start, end).0);
            left -= end - start;
            if left == 0 {
                break;
            }
        }
        self.cut_chunks(&out);
        out
    }

    /// Takes `[start, end)` (multiples of 256 within it) out of the free block `id` and out of the
    /// pool: what is left before and after stays free in the block's set. Returns the range taken
    /// and the free block left after it, if any. The caller cuts the chunks around the ranges
    /// taken, all at once.
    fn cut_free_range(&mut self, id: BlockId, start: usize, end: usize) -> ((usize, usize), Option<BlockId>) {
        let b = *self.blocks.get(id);
        let set = b.set_id();
        self.unlink_free(id);
        let mut middle = id;
        if start > b.addr {
            middle = split(&mut self.blocks, id, start - b.addr);
            self.link_free(set, id);
        }
        let back = (end < b.end()).then(|| split(&mut self.blocks, middle, end - start));
        if let Some(back) = back {
            self.link_free(set, back);
        }
        (self.unlink_physically(middle), back)
    }

    /// The free blocks of the sets that `take` accepts, as `(addr, id)`, lowest address first.
    /// Cached blocks go back to their sets first.
    fn free_blocks_by_address(&mut self, take: impl Fn(SetId) -> bool) -> Vec<(usize, BlockId)> {
        self.flush_caches();
        let mut free: Vec<(usize, BlockId)> = self
            .blocks
            .iter_live()
            .filter(|(_, b)| b.is_free() && take(b.set_id()))
            .map(|(id, b)| (b.addr, id))
            .collect();
        free.sort_unstable();
        free
    }

    /// The free blocks of the sets that `take` accepts, as `(addr, size)`, lowest address first.
    /// Cached blocks go back to their sets first.
    pub fn free_blocks(&mut self, take: impl Fn(SetId) -> bool) -> Vec<(usize, usize)> {
        let free = self.free_blocks_by_address(take);
        free.into_iter().map(|(addr, id)| (addr, self.blocks.get(id).size())).collect()
    }

    /// Takes out of the pool the parts of the free blocks of the sets that `take` accepts that lie
    /// in `ranges` (sorted, disjoint, multiples of 256); returns them, lowest first. What is left of
    /// each block stays free in its set; chunks are cut around what leaves, as by
    /// [`detach_free_granules`](Self::detach_free_granules). For ranges that span the blocks of
    /// several pools (the shards of one reservation), each pool gives its part.
    pub fn detach_free_within(
        &mut self,
        ranges: &[(usize, usize)],
        take: impl Fn(SetId) -> bool,
    ) -> Vec<(usize, usize)> {
        let free = self.free_blocks_by_address(take);
        let mut out = Vec::new();
        for (addr, id) in free {
            let mut rest = id;
            let first = ranges.partition_point(|&(a, l)| a + l <= addr);
            for &(a, l) in &ranges[first..] {
                let b = *self.blocks.get(rest);
                if a >= b.end() {
                    break;
                }
                let (start, end) = (a.max(b.addr), (a + l).min(b.end()));
                debug_assert!(start % GRANULE == 0 && end % GRANULE == 0 && start < end);
                let (range, back) = self.cut_free_range(rest, start, end);
                out.push(range);
                match back {
                    Some(back) => rest = back,
                    None => break,
                }
            }
        }
        out.sort_unstable();
        self.cut_chunks(&out);
        out
    }

    /// The free block that ends the chunk ending at `addr`, if the pool has such a chunk and its
    /// last block is free: its set and size. Where a range is attached at `addr`, that block and
    /// the range become one. Cached blocks go back to their sets first.
    pub fn free_block_ending_at(&mut self, addr: usize) -> Option<(SetId, usize)> {
        if !self.chunks.iter().any(|&(a, s)| a + s == addr) {
            return None;
        }
        self.flush_caches();
        let b = *self.blocks.get(self.block_ending_at(addr));
        b.is_free().then(|| (b.set_id(), b.size()))
    }

    /// The free block that starts the chunk starting at `addr`, if the pool has such a chunk and
    /// its first block is free: its set and size. Where a range is attached ending at `addr`, that
    /// block and the range become one. Cached blocks go back to their sets first.
    pub fn free_block_starting_at(&mut self, addr: usize) -> Option<(SetId, usize)> {
        if !self.chunks.iter().any(|&(a, _)| a == addr) {
            return None;
        }
        self.flush_caches();
        let b = *self.blocks.get(self.block_starting_chunk_at(addr));
        b.is_free().then(|| (b.set_id(), b.size()))
    }

    /// The block whose end is `addr`: the last block of the chunk that ends there (a scan, for
    /// growth and release, which are rare).
    fn block_ending_at(&self, addr: usize) -> BlockId {
        let found = self.blocks.iter_live().find(|(_, b)| b.end() == addr && b.next_phys == NIL);
        found.map_or_else(|| unreachable!("a chunk ends at {addr:#x} but no block does"), |(id, _)| id)
    }

    /// The first block of the chunk that starts at `addr`.
    fn block_starting_chunk_at(&self, addr: usize) -> BlockId {
        let found = self.blocks.iter_live().find(|(_, b)| b.addr == addr && b.prev_phys == NIL);
        found.map_or_else(|| unreachable!("a chunk starts at {addr:#x} but no block does"), |(id, _)| id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StreamKey;

    const MIB: usize = 1 << 20;

    fn pool_with(chunks: &[(usize, usize)]) -> (CoalescingPool, SetId) {
        let mut p = CoalescingPool::new();
        let fresh = p.set_of(StreamKey::FRESH);
        for &(a, s) in chunks {
            p.add_chunk(a, s, fresh);
        }
        (p, fresh)
    }

    #[test]
    fn a_range_after_a_free_tail_is_one_block_with_it() {
        let (mut p, fresh) = pool_with(&[(64 * MIB, 4 * MIB)]);
        p.attach(68 * MIB, 4 * MIB, fresh);
        p.check_invariants().unwrap();
        assert_eq!(p.chunks(), &[(64 * MIB, 8 * MIB)]);
        // 6 MiB fit only across the join.
        assert_eq!(p.allocate(fresh, 6 * MIB, 6 * MIB, GRANULE), Some(64 * MIB));
        p.check_invariants().unwrap();
    }

    #[test]
    fn a_range_between_two_chunks_joins_both() {
        let (mut p, fresh) = pool_with(&[(64 * MIB, 2 * MIB), (70 * MIB, 2 * MIB)]);
        p.attach(66 * MIB, 4 * MIB, fresh);
        p.check_invariants().unwrap();
        assert_eq!(p.chunks(), &[(64 * MIB, 8 * MIB)]);
        assert_eq!(p.allocate(fresh, 8 * MIB, 8 * MIB, GRANULE), Some(64 * MIB));
        assert_eq!(p.pool_size(), 8 * MIB);
    }

    #[test]
    fn a_handed_out_tail_merges_with_the_new_range_once_freed() {
        let (mut p, fresh) = pool_with(&[(64 * MIB, 4 * MIB)]);
        let a = p.allocate(fresh, 4 * MIB, 4 * MIB, GRANULE).unwrap();
        p.attach(68 * MIB, 4 * MIB, fresh);
        p.check_invariants().unwrap();
        p.deallocate(a, 4 * MIB, fresh).unwrap();
        p.check_invariants().unwrap();
        assert_eq!(p.allocate(fresh, 8 * MIB, 8 * MIB, GRANULE), Some(64 * MIB));
    }

    #[test]
    fn whole_granules_of_free_blocks_leave_and_come_back_at_the_same_addresses() {
        let (mut p, fresh) = pool_with(&[(64 * MIB, 16 * MIB)]);
        // 1 MiB in use at the start: the first granule (2 MiB) is not whole-free.
        let a = p.allocate(fresh, MIB, MIB, GRANULE).unwrap();
        assert_eq!(a, 64 * MIB);
        let out = p.detach_free_granules(2 * MIB, usize::MAX, |_| true);
        assert_eq!(out, vec![(66 * MIB, 14 * MIB)]);
        p.check_invariants().unwrap();
        assert_eq!(p.pool_size(), 2 * MIB);
        assert_eq!(p.allocate(fresh, 2 * MIB, 2 * MIB, GRANULE), None, "only 1 MiB is left free");
        p.attach(66 * MIB, 14 * MIB, fresh);
        p.deallocate(a, MIB, fresh).unwrap();
        p.check_invariants().unwrap();
        assert_eq!(p.chunks(), &[(64 * MIB, 16 * MIB)]);
        assert_eq!(p.allocate(fresh, 16 * MIB, 16 * MIB, GRANULE), Some(64 * MIB));
    }

    #[test]
    fn detach_stops_at_max_and_keeps_the_sets_it_is_told_to() {
        let (mut p, fresh) = pool_with(&[(64 * MIB, 8 * MIB)]);
        let s = p.set_of(StreamKey::of_handle(0x5000));
        let a = p.allocate(fresh, 4 * MIB, 4 * MIB, GRANULE).unwrap();
        p.deallocate(a, 4 * MIB, s).unwrap();
        // The stream's free 4 MiB stay; 3 MiB asked of fresh memory gives one whole granule of 2.
        let out = p.detach_free_granules(2 * MIB, 3 * MIB, |set| set == fresh);
        assert_eq!(out, vec![(68 * MIB, 2 * MIB)]);
        p.check_invariants().unwrap();
        assert_eq!(p.pool_size(), 6 * MIB);
    }

    #[test]
    fn a_range_free_in_pieces_of_two_pools_leaves_both() {
        // [64, 68) MiB free in one pool, [68, 72) in another: a granule of 4 MiB at 66..70 spans both.
        let (mut p, _) = pool_with(&[(64 * MIB, 4 * MIB)]);
        let (mut q, q_fresh) = pool_with(&[(68 * MIB, 4 * MIB)]);
        let s = q.set_of(StreamKey::of_handle(0x5000));
        let range = [(66 * MIB, 4 * MIB)];
        assert_eq!(p.detach_free_within(&range, |_| true), vec![(66 * MIB, 2 * MIB)]);
        // Only the sets asked for give their part.
        assert_eq!(q.detach_free_within(&range, |set| set == s), vec![]);
        assert_eq!(q.detach_free_within(&range, |set| set == q_fresh), vec![(68 * MIB, 2 * MIB)]);
        p.check_invariants().unwrap();
        q.check_invariants().unwrap();
        assert_eq!((p.pool_size(), q.pool_size()), (2 * MIB, 2 * MIB));
        let mut free = p.free_blocks(|_| true);
        free.extend(q.free_blocks(|_| true));
        free.sort_unstable();
        assert_eq!(free, vec![(64 * MIB, 2 * MIB), (70 * MIB, 2 * MIB)]);
    }

    #[test]
    fn detach_within_cuts_several_ranges_out_of_one_block() {
        let (mut p, fresh) = pool_with(&[(64 * MIB, 16 * MIB)]);
        let a = p.allocate(fresh, MIB, MIB, GRANULE).unwrap();
        let ranges = [(62 * MIB, 4 * MIB), (68 * MIB, 2 * MIB), (72 * MIB, 2 * MIB), (78 * MIB, 4 * MIB)];
        let out = p.detach_free_within(&ranges, |_| true);
        // The first range starts in the handed-out block: only its free part leaves.
        assert_eq!(out, vec![(65 * MIB, MIB), (68 * MIB, 2 * MIB), (72 * MIB, 2 * MIB), (78 * MIB, 2 * MIB)]);
        p.check_invariants().unwrap();
        assert_eq!(p.pool_size(), 9 * MIB);
        p.deallocate(a, MIB, fresh).unwrap();
        p.check_invariants().unwrap();
    }

    /// Random allocations, frees, releases of whole granules and mappings back, against a model
    /// of which addresses are mapped: no block handed out ever touches an unmapped address, the
    /// pool's size is what is mapped, and the invariants hold after every step.
    #[test]
    fn random_detach_and_attach_keep_every_block_in_mapped_memory() {
        const BASE: usize = 1 << 40;
        const SPAN: usize = 64 * MIB;
        const G: usize = 2 * MIB;
        for seed in 1..=20 {
            let mut rng = crate::testing::SplitMix64::new(seed);
            let (mut p, fresh) = pool_with(&[(BASE, SPAN)]);
            let mut mapped = [true; SPAN / G];
            let mut live: Vec<(usize, usize)> = Vec::new();
            let (mut detached, mut attached) = (0, 0);
            for step in 0..2000 {
                match rng.below(10) {
                    0..=4 => {
                        let size = (1 + rng.below(3 * MIB / GRANULE)) * GRANULE;
                        if let Some(a) = p.allocate(fresh, size, size, GRANULE) {
                            let granules = (a - BASE) / G..=(a + size - 1 - BASE) / G;
                            assert!(
                                mapped[granules].iter().all(|m| *m),
                                "seed {seed} step {step}: block {a:#x}+{size} in an unmapped granule"
                            );
                            live.push((a, size));
                        }
                    }
                    5..=7 if !live.is_empty() => {
                        let (a, size) = live.swap_remove(rng.below(live.len()));
                        p.deallocate(a, size, fresh).unwrap();
                    }
                    8 => {
                        for (a, len) in p.detach_free_granules(G, (1 + rng.below(8)) * G, |_| true) {
                            assert_eq!((a - BASE) % G + len % G, 0);
                            for m in &mut mapped[(a - BASE) / G..(a + len - BASE) / G] {
                                assert!(*m, "a granule detached twice");
                                *m = false;
                            }
                            detached += len;
                        }
                    }
                    _ => {
                        // Map back one run of unmapped granules, as a growth would.
                        if let Some(first) = mapped.iter().position(|m| !m) {
                            let n = mapped[first..].iter().take_while(|m| !**m).count().min(1 + rng.below(4));
                            mapped[first..first + n].iter_mut().for_each(|m| *m = true);
                            p.attach(BASE + first * G, n * G, fresh);
                            attached += n * G;
                        }
                    }
                }
                p.check_invariants().unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
                assert_eq!(p.pool_size(), mapped.iter().filter(|m| **m).count() * G);
            }
            assert!(
                detached > 0 && attached > 0,
                "seed {seed}: the run detached {detached} and attached {attached} bytes"
            );
        }
    }
}
