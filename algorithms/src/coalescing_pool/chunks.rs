//! The chunks of a pool: ranges added from the upstream, and ranges cut out of this pool for
//! another (a shard short of memory adopts them with `add_chunk`; an arena's superblock moves
//! with the blocks still handed out in it through `detach_all_chunks` and `add_chunk_with_live`).

use super::{CoalescingPool, SetId, GRANULE, GRANULE_SHIFT};
use crate::block::{Block, BlockId, Owner, MAX_BLOCK_BYTES, NIL};
use crate::free_list::split;
use crate::size_class::map_ceil;

/// A block handed out, as it moves with its chunk from one pool to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveBlock {
    /// First byte.
    pub addr: usize,
    /// Bytes the block occupies (a multiple of 256).
    pub size: usize,
    /// Bytes the caller asked for: what its free must give.
    pub requested: usize,
}

impl CoalescingPool {
    /// Adds a range taken from the upstream as one free block on `set`. `addr` and `size` must be
    /// multiples of 256 (the pool refuses an upstream's chunk that is not, before it gets here),
    /// `size` at most [`MAX_BLOCK_BYTES`], and the range must not overlap any chunk already added.
    pub fn add_chunk(&mut self, addr: usize, size: usize, set: SetId) {
        debug_assert!(
            addr.is_multiple_of(GRANULE) && size.is_multiple_of(GRANULE) && size > 0 && size <= MAX_BLOCK_BYTES
        );
        self.chunks.push((addr, size));
        self.pool_size += size;
        let id = self.blocks.insert(Block::new(addr, (size >> GRANULE_SHIFT) as u32, Owner::Set(set)));
        self.link_free(set, id);
    }

    /// Adds a range that another pool gave up with [`detach_all_chunks`](Self::detach_all_chunks): the blocks
    /// of `live` (sorted by address, disjoint, each inside the range, on granules) stay handed out
    /// and are freed here later; the ranges between them are free on `set`.
    pub fn add_chunk_with_live(&mut self, addr: usize, size: usize, set: SetId, live: &[LiveBlock]) {
        debug_assert!(
            addr.is_multiple_of(GRANULE) && size.is_multiple_of(GRANULE) && size > 0 && size <= MAX_BLOCK_BYTES
        );
        debug_assert!(live.windows(2).all(|w| w[0].addr + w[0].size <= w[1].addr), "live blocks sorted, disjoint");
        debug_assert!(live.iter().all(|l| addr <= l.addr && l.addr + l.size <= addr + size && l.requested <= l.size));
        self.chunks.push((addr, size));
        self.pool_size += size;
        let end = addr + size;
        let (mut at, mut prev) = (addr, NIL);
        let pieces = live.iter().map(|l| Some(*l)).chain(std::iter::once(None));
        for piece in pieces {
            let gap_end = piece.map_or(end, |l| l.addr);
            if gap_end > at {
                let id = self.new_block_after(prev, at, gap_end - at, Owner::Set(set));
                self.link_free(set, id);
                prev = id;
            }
            let Some(l) = piece else { break };
            let id = self.new_block_after(prev, l.addr, l.size, Owner::HandedOut);
            self.blocks.get_mut(id).set_slack((l.size - l.requested) as u32);
            self.allocated.insert_at(id, l.addr, &self.blocks);
            (at, prev) = (l.addr + l.size, id);
        }
    }

    /// A record for `[addr, addr + size)` held by `owner`, linked after `prev` (NIL: first of its
    /// chunk); in no free list yet.
    fn new_block_after(&mut self, prev: BlockId, addr: usize, size: usize, owner: Owner) -> BlockId {
        let id = self.blocks.insert(Block::new(addr, (size >> GRANULE_SHIFT) as u32, owner));
        if prev != NIL {
            self.blocks.get_mut(prev).next_phys = id;
            self.blocks.get_mut(id).prev_phys = prev;
        }
        id
    }

    /// Takes every chunk out of the pool with every block in it, free or handed out: returns each
    /// chunk's range, by address, with the blocks still handed out in it, by address, for the pool
    /// that adopts it with [`add_chunk_with_live`](Self::add_chunk_with_live). Cold: one pass over
    /// the block records.
    pub fn detach_all_chunks(&mut self) -> Vec<((usize, usize), Vec<LiveBlock>)> {
        self.flush_caches();
        self.chunks.sort_unstable();
        let mut out: Vec<((usize, usize), Vec<LiveBlock>)> = self.chunks.iter().map(|&c| (c, Vec::new())).collect();
        let records: Vec<BlockId> = self.blocks.iter_live().map(|(id, _)| id).collect();
        for id in records {
            let b = *self.blocks.get(id);
            if b.is_free() {
                self.unlink_free(id);
            } else {
                if let Some(slot) = self.allocated.find(b.addr, &self.blocks) {
                    self.allocated.remove_at(slot, &self.blocks);
                }
                // The chunk that holds it: the last one starting at or below it.
                let i = out.partition_point(|((start, _), _)| *start <= b.addr);
                debug_assert!(i > 0, "block {:#x} in no chunk", b.addr);
                if let Some((_, live)) = out.get_mut(i.wrapping_sub(1)) {
                    live.push(LiveBlock { addr: b.addr, size: b.size(), requested: b.size() - b.slack() as usize });
                }
            }
            self.blocks.remove(id);
        }
        for (_, live) in &mut out {
            live.sort_unstable_by_key(|l| l.addr);
        }
        self.chunks.clear();
        self.pool_size = 0;
        out
    }

    /// The chunks taken from the upstream, to give back when the pool goes away.
    pub fn chunks(&self) -> &[(usize, usize)] {
        &self.chunks
    }

    /// Takes a free block of at least `min` bytes from set `donor` out of this pool altogether: up to
    /// `want` bytes of the largest class's first block (the rest stays free in `donor`), cut out of
    /// its chunk. Another pool adopts the range with [`add_chunk`](Self::add_chunk); blocks never
    /// span the cut again (until [`detach_whole_free_chunks`](Self::detach_whole_free_chunks)).
    pub fn detach(&mut self, donor: SetId, min: usize, want: usize) -> Option<(usize, usize)> {
        debug_assert!(min.is_multiple_of(GRANULE) && want.is_multiple_of(GRANULE) && min <= want);
        self.flush_caches();
        let free = &self.sets[donor].free;
        free.class_at_or_above(map_ceil(min >> GRANULE_SHIFT))?;
        let top = free.largest_class()?;
        let id = self.pop_head(donor, top);
        let size = self.blocks.get(id).size();
        // Leave no sliver behind: a remainder under a granule cannot exist, and a small one is
        // worth more to the taker than to this pool.
        let take = if size >= want + want / 4 { want } else { size };
        if take < size {
            let rest = split(&mut self.blocks, id, take);
            self.link_free(donor, rest);
        }
        Some(self.cut_out(id))
    }

    /// Takes block `id` (in no list) out of the pool altogether: its neighbours stop linking to it,
    /// its record goes, and its chunk is cut around it. Returns its range.
    pub(super) fn cut_out(&mut self, id: BlockId) -> (usize, usize) {
        let (addr, size) = self.unlink_physically(id);
        self.cut_chunk(addr, size);
        (addr, size)
    }

    /// Takes block `id` (in no list) out of the physical chains and the block records, leaving
    /// the chunks as they are: the caller cuts them, one range or many at once with
    /// [`cut_chunks`](Self::cut_chunks). Returns its range.
    pub(super) fn unlink_physically(&mut self, id: BlockId) -> (usize, usize) {
        let b = *self.blocks.get(id);
        if b.prev_phys != NIL {
            self.blocks.get_mut(b.prev_phys).next_phys = NIL;
        }
        if b.next_phys != NIL {
            self.blocks.get_mut(b.next_phys).prev_phys = NIL;
        }
        self.blocks.remove(id);
        (b.addr, b.size())
    }

    /// The range of every free block, in any set or cache, in no particular order.
    pub fn free_ranges(&self) -> Vec<(usize, usize)> {
        self.blocks
            .iter_live()
            .filter(|(_, b)| b.owner() != Owner::HandedOut)
            .map(|(_, b)| (b.addr, b.size()))
            .collect()
    }

    /// Removes every chunk that is a single free block of `set` and returns the ranges.
    pub fn detach_whole_free_chunks(&mut self, set: SetId) -> Vec<(usize, usize)> {
        self.flush_caches();
        let whole: Vec<BlockId> = self
            .blocks
            .iter_live()
            .filter(|(_, b)| b.prev_phys == NIL && b.next_phys == NIL && b.owner() == Owner::Set(set))
            .map(|(id, _)| id)
            .collect();
        let mut ranges = Vec::with_capacity(whole.len());
        for id in whole {
            let (addr, size) = {
                let b = self.blocks.get(id);
                (b.addr, b.size())
            };
            self.unlink_free(id);
            self.blocks.remove(id);
            ranges.push((addr, size));
        }
        // A block with no neighbours is its chunk entire: cutting each range leaves nothing of it.
        ranges.sort_unstable();
        self.cut_chunks(&ranges);
        ranges
    }

    /// Removes every range of `cuts` (sorted, disjoint, each within one chunk) from the chunks,
    /// leaving the parts between them as chunks of their own: one pass over both lists, where a
    /// cut at a time would be quadratic in a pool of many chunks. Leaves the chunks sorted.
    pub(super) fn cut_chunks(&mut self, cuts: &[(usize, usize)]) {
        debug_assert!(cuts.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0), "cuts sorted and disjoint");
        if cuts.is_empty() {
            return;
        }
        self.chunks.sort_unstable();
        let mut kept = Vec::with_capacity(self.chunks.len() + cuts.len());
        let mut next = cuts.iter().peekable();
        for &(start, size) in &self.chunks {
            let end = start + size;
            let mut at = start;
            while let Some(&&(addr, len)) = next.peek() {
                if addr >= end {
                    break;
                }
                debug_assert!(addr >= at && addr + len <= end, "cut {addr:#x}+{len} crosses a chunk's edge");
                if addr > at {
                    kept.push((at, addr - at));
                }
                at = addr + len;
                next.next();
            }
            if at < end {
                kept.push((at, end - at));
            }
        }
        debug_assert!(next.peek().is_none(), "a cut in no chunk");
        self.chunks = kept;
        self.pool_size -= cuts.iter().map(|&(_, len)| len).sum::<usize>();
    }

    /// Removes `[addr, addr + len)` from the chunk that holds it, leaving the parts before and
    /// after it as chunks of their own.
    pub(super) fn cut_chunk(&mut self, addr: usize, len: usize) {
        let Some(i) = self.chunks.iter().position(|&(a, s)| a <= addr && addr + len <= a + s) else {
            debug_assert!(false, "range {addr:#x}+{len} is in no chunk");
            return;
        };
        let (a, s) = self.chunks.swap_remove(i);
        if addr > a {
            self.chunks.push((a, addr - a));
        }
        if addr + len < a + s {
            self.chunks.push((addr + len, a + s - addr - len));
        }
        self.pool_size -= len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coalescing_pool::GRANULE;
    use crate::StreamKey;

    const KIB: usize = 1 << 10;

    #[test]
    fn many_cuts_in_many_chunks_leave_the_pieces_between_them() {
        let mut p = CoalescingPool::new();
        let fresh = p.set_of(StreamKey::FRESH);
        // 64 chunks of 64 KiB with gaps between them, added in no particular order.
        for i in (0..64).rev() {
            p.add_chunk((1 << 24) + i * 128 * KIB, 64 * KIB, fresh);
        }
        // Fill every chunk with 4 KiB blocks, then free all but the one at 8 KiB into each chunk
        // after the first: that chunk's free memory is two blocks around it.
        let blocks: Vec<usize> = (0..64 * 16).map(|_| p.allocate(fresh, 4 * KIB, 4 * KIB, GRANULE).unwrap()).collect();
        let kept = |a: usize| a - (1 << 24) >= 128 * KIB && (a - (1 << 24)) % (128 * KIB) == 8 * KIB;
        let used: Vec<usize> = blocks.iter().copied().filter(|&a| kept(a)).collect();
        assert_eq!(used.len(), 63);
        for &a in blocks.iter().filter(|&&a| !kept(a)) {
            p.deallocate(a, 4 * KIB, fresh).unwrap();
        }
        p.check_invariants().unwrap();
        let out = p.detach_free_granules(16 * KIB, usize::MAX, |_| true);
        p.check_invariants().unwrap();
        let taken: usize = out.iter().map(|&(_, len)| len).sum();
        // The first chunk leaves whole; the others keep their first 16 KiB (the used block is in
        // it) and give the other 48.
        assert_eq!(taken, 64 * KIB + 63 * 48 * KIB);
        assert_eq!(p.pool_size(), 63 * 16 * KIB);
        assert_eq!(p.chunks().len(), 63);
        for a in used {
            p.deallocate(a, 4 * KIB, fresh).unwrap();
        }
        p.check_invariants().unwrap();
        assert_eq!(p.detach_whole_free_chunks(fresh).len(), 63);
        assert_eq!((p.pool_size(), p.chunks().len()), (0, 0));
    }
}
