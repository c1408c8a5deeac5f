//! The pool's segments for snapshots and memory maps (see
//! [`MemoryResource::memory_segments`](crate::resource::MemoryResource::memory_segments)): the
//! chunks taken from the upstream, each tiled by the blocks of whichever shard or capture holds
//! its ranges now. A cold, read-only walk: it takes each shard's lock in turn, as `state` does.

use super::PoolMemoryResource;
use crate::resource::segments::tile_segments;
use crate::resource::{BlockState, MemoryResource, MemorySegment, SegmentBlock};
use rmm_algorithms::BlockView;

/// A block of the pool's walk as a segment block.
pub(super) fn segment_block(b: BlockView) -> SegmentBlock {
    match b.requested {
        Some(requested_size) => {
            SegmentBlock { address: b.addr, size: b.size, requested_size, state: BlockState::Allocated }
        }
        None => SegmentBlock { address: b.addr, size: b.size, requested_size: 0, state: BlockState::Free },
    }
}

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// Every range taken from the upstream, lowest first, with the blocks that tile it; memory
    /// private to a CUDA graph capture comes after, marked with the capture's id. The picture
    /// is exact while no other thread allocates or frees (shards are read one after another).
    pub fn segments(&self) -> Vec<MemorySegment> {
        let mut blocks = Vec::new();
        for shard in self.shards.real() {
            let core = shard.lock();
            for (_, _, chunk) in core.walk_chunks() {
                blocks.extend(chunk.into_iter().map(segment_block));
            }
        }
        let mut ranges: Vec<(usize, usize, u64)> = Vec::new();
        for (id, chunks, chunk_blocks) in self.captures.walk() {
            ranges.extend(chunks.into_iter().map(|(start, size)| (start, size, id)));
            blocks.extend(chunk_blocks.into_iter().map(segment_block));
        }
        ranges.extend(self.growth.chunks().into_iter().map(|(start, size)| (start, size, 0)));
        let mut segments = tile_segments(ranges, blocks, self.in_place.is_some());
        // The pool's own memory first, then each capture's.
        segments.sort_by_key(|s| (s.capture, s.address));
        segments
    }
}
