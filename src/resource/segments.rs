//! What a pool's memory looks like inside: its segments (the ranges it took from its upstream)
//! and the blocks that tile each one, handed out or free. Read by
//! [`MemoryResource::memory_segments`](crate::resource::MemoryResource::memory_segments), a cold
//! walk under the pool's locks that no allocation or free pays for; snapshots
//! ([`crate::history`]) and memory maps are drawn from it.

/// Whether a block of a segment is handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockState {
    /// Handed out and not yet freed (PyTorch's `active_allocated`).
    Allocated,
    /// Free for reuse (PyTorch's `inactive`).
    Free,
}

/// One block of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentBlock {
    /// Where the block starts.
    pub address: usize,
    /// Its size, rounded as the pool rounds.
    pub size: usize,
    /// The bytes the caller asked for (0 for a free block).
    pub requested_size: usize,
    /// Handed out or free.
    pub state: BlockState,
}

/// One range a pool took from its upstream, with the blocks that tile it in address order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemorySegment {
    /// Where the range starts.
    pub address: usize,
    /// Its size.
    pub total_size: usize,
    /// The blocks, in address order; their sizes add up to `total_size`.
    pub blocks: Vec<SegmentBlock>,
    /// True for a range that grows in place (a virtual pool's mapped range).
    pub expandable: bool,
    /// 0 for the pool's own memory; a capture's id for memory private to a CUDA graph capture.
    pub capture: u64,
}

impl MemorySegment {
    /// Bytes of the blocks handed out, as the pool rounded them.
    pub fn allocated_size(&self) -> usize {
        self.blocks.iter().filter(|b| b.state == BlockState::Allocated).map(|b| b.size).sum()
    }

    /// Bytes the callers asked for in the blocks handed out.
    pub fn requested_size(&self) -> usize {
        self.blocks.iter().filter(|b| b.state == BlockState::Allocated).map(|b| b.requested_size).sum()
    }

    /// Blocks handed out.
    pub fn allocated_blocks(&self) -> usize {
        self.blocks.iter().filter(|b| b.state == BlockState::Allocated).count()
    }
}

/// Segments from `ranges` (each `(start, size, capture)`, in any order) and the blocks seen in
/// them (in any order, none straddling two ranges): each range gets the blocks that start in it,
/// and any bytes no block covers (a chunk's tail past its last 256-byte multiple) become a free
/// block, so that the blocks always tile the segment. With `merge_adjacent` (a pool that grows in
/// place), ranges of one capture that touch are one segment.
pub(crate) fn tile_segments(
    mut ranges: Vec<(usize, usize, u64)>,
    mut blocks: Vec<SegmentBlock>,
    merge_adjacent: bool,
) -> Vec<MemorySegment> {
    ranges.sort_unstable();
    if merge_adjacent {
        let mut merged: Vec<(usize, usize, u64)> = Vec::with_capacity(ranges.len());
        for (start, size, capture) in ranges {
            match merged.last_mut() {
                Some(last) if last.0 + last.1 == start && last.2 == capture => last.1 += size,
                _ => merged.push((start, size, capture)),
            }
        }
        ranges = merged;
    }
    blocks.sort_unstable_by_key(|b| b.address);
    let mut next = blocks.into_iter().peekable();
    let mut out = Vec::with_capacity(ranges.len());
    for (start, size, capture) in ranges {
        let end = start + size;
        let mut tiles = Vec::new();
        let mut at = start;
        // Blocks below this range belong to no range: skip them.
        while next.peek().is_some_and(|b| b.address < start) {
            next.next();
        }
        while let Some(b) = next.next_if(|b| b.address < end) {
            if b.address > at {
                tiles.push(free_block(at, b.address - at));
            }
            let size = b.size.min(end - b.address);
            tiles.push(SegmentBlock { size, ..b });
            at = b.address + size;
        }
        if at < end {
            tiles.push(free_block(at, end - at));
        }
        out.push(MemorySegment {
            address: start,
            total_size: size,
            blocks: tiles,
            expandable: merge_adjacent,
            capture,
        });
    }
    out
}

fn free_block(address: usize, size: usize) -> SegmentBlock {
    SegmentBlock { address, size, requested_size: 0, state: BlockState::Free }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(address: usize, size: usize, requested_size: usize) -> SegmentBlock {
        SegmentBlock { address, size, requested_size, state: BlockState::Allocated }
    }

    #[test]
    fn tiles_with_free_gaps_and_tails() {
        let segs = tile_segments(vec![(0x2000, 0x1000, 0), (0x1000, 0x1000, 0)], vec![held(0x2100, 0x100, 10)], false);
        assert_eq!(segs.len(), 2);
        assert_eq!(segs[0].blocks, vec![free_block(0x1000, 0x1000)]);
        assert_eq!(segs[1].blocks, vec![free_block(0x2000, 0x100), held(0x2100, 0x100, 10), free_block(0x2200, 0xe00)]);
        assert_eq!(segs[1].allocated_size(), 0x100);
        assert_eq!(segs[1].requested_size(), 10);
    }

    #[test]
    fn merges_touching_ranges_when_asked() {
        let segs =
            tile_segments(vec![(0x1000, 0x1000, 0), (0x2000, 0x1000, 0)], vec![held(0x1f00, 0x200, 0x200)], true);
        assert_eq!(segs.len(), 1);
        assert_eq!(segs[0].total_size, 0x2000);
        assert_eq!(segs[0].blocks.iter().map(|b| b.size).sum::<usize>(), 0x2000);
    }
}
