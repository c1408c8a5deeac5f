//! The chunks of a pool: ranges added from the upstream, and ranges cut out of this pool for
//! another (a shard short of memory adopts them with `add_chunk`).

use super::{CoalescingPool, SetId, GRANULE, GRANULE_SHIFT};
use crate::pool::block::{Block, BlockId, Owner, MAX_BLOCK_BYTES, NIL};
use crate::pool::free_list::split;
use crate::pool::size_class::map_ceil;

impl CoalescingPool {
    /// Adds a range taken from the upstream as one free block on `set`. `addr` and `size` must be
    /// multiples of 256 (the pool refuses an upstream's chunk that is not, before it gets here),
    /// `size` at most [`MAX_BLOCK_BYTES`], and the range must not overlap any chunk already added.
    pub fn add_chunk(&mut self, addr: usize, size: usize, set: SetId) {
        debug_assert!(addr % GRANULE == 0 && size % GRANULE == 0 && size > 0 && size <= MAX_BLOCK_BYTES);
        self.chunks.push((addr, size));
        self.pool_size += size;
        let id = self.blocks.insert(Block::new(addr, (size >> GRANULE_SHIFT) as u32, Owner::Set(set)));
        self.link_free(set, id);
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
        debug_assert!(min % GRANULE == 0 && want % GRANULE == 0 && min <= want);
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
        let b = *self.blocks.get(id);
        if b.prev_phys != NIL {
            self.blocks.get_mut(b.prev_phys).next_phys = NIL;
        }
        if b.next_phys != NIL {
            self.blocks.get_mut(b.next_phys).prev_phys = NIL;
        }
        self.blocks.remove(id);
        self.cut_chunk(b.addr, b.size());
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
            self.cut_chunk(addr, size);
            ranges.push((addr, size));
        }
        ranges
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
