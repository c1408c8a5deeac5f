//! The chunks a fixed-size resource took from its upstream, and which of their blocks are handed
//! out: what lets a free be checked (a pointer of this resource, at a block's start, not freed
//! already) before it is accepted.
//!
//! The table is read and marked without a lock, from any thread: chunks are only ever added (a
//! grow-only snapshot), and each block has a live flag of its own byte: handing a block out is a
//! plain store (only the thread that took the block from a free list touches it), and a free is
//! one atomic swap, so two frees of one block racing each other are told apart exactly (one
//! succeeds, the other is a double free).

use super::GrowOnly;
use crate::error::Misuse;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// One chunk: `blocks` blocks of the table's block size from `start`, one live flag each. Its
/// start and size sit in the table's snapshot itself, so a lookup's search reads one array, and
/// the flags are one pointer away.
#[derive(Clone)]
struct Chunk {
    start: usize,
    blocks: usize,
    live: Arc<[AtomicU8]>,
}

/// Chunks sorted by address, each with a bitmap of its handed-out blocks.
pub struct ChunkTable {
    block_size: usize,
    /// log2 of the block size where it is a power of two (a shift instead of a division).
    block_shift: Option<u32>,
    chunks: GrowOnly<Chunk>,
    total_blocks: AtomicUsize,
}

impl ChunkTable {
    /// An empty table of blocks of `block_size` bytes (not 0).
    pub fn new(block_size: usize) -> Self {
        assert!(block_size > 0, "a block size of 0 bytes");
        let block_shift = block_size.is_power_of_two().then(|| block_size.trailing_zeros());
        ChunkTable { block_size, block_shift, chunks: GrowOnly::new(), total_blocks: AtomicUsize::new(0) }
    }

    /// The size of every block.
    #[inline]
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// Adds a chunk of `blocks` blocks at `start`, all free. The caller guarantees that it overlaps
    /// no chunk already in the table (the upstream handed it out).
    pub fn add(&self, start: usize, blocks: usize) {
        let live = (0..blocks).map(|_| AtomicU8::new(0)).collect();
        let chunk = Chunk { start, blocks, live };
        self.chunks.update(|chunks| {
            let at = chunks.partition_point(|c| c.start < start);
            chunks.insert(at, chunk);
            true
        });
        self.total_blocks.fetch_add(blocks, Ordering::Release);
    }

    /// The last chunk starting at or before `ptr`, if any: a binary search whose steps choose
    /// without a branch (chunks are few, and the pointers freed come in no order a predictor
    /// could learn: as a branch, each step mispredicted about half the time, some 1.5
    /// mispredictions per allocate-or-free).
    #[inline(always)]
    fn chunk_at_or_before(&self, ptr: usize) -> Option<&Chunk> {
        let chunks = self.chunks.read();
        let mut base = 0;
        let mut len = chunks.len();
        while len > 1 {
            let half = len / 2;
            let mid = base + half;
            base = std::hint::select_unpredictable(chunks[mid].start <= ptr, mid, base);
            len -= half;
        }
        chunks.get(base).filter(|c| c.start <= ptr)
    }

    /// The chunk and block index of the block starting at `ptr`.
    #[inline]
    fn locate(&self, ptr: usize) -> Result<(&Chunk, usize), Misuse> {
        let Some(chunk) = self.chunk_at_or_before(ptr) else {
            return Err(Misuse::UnknownPointer { ptr });
        };
        let offset = ptr - chunk.start;
        let (index, rest) = match self.block_shift {
            Some(shift) => (offset >> shift, offset & (self.block_size - 1)),
            None => (offset / self.block_size, offset % self.block_size),
        };
        if index >= chunk.blocks {
            return Err(Misuse::UnknownPointer { ptr });
        }
        if rest != 0 {
            return Err(Misuse::InteriorPointer { ptr, block_start: chunk.start + index * self.block_size });
        }
        Ok((chunk, index))
    }

    /// Marks the free block at `ptr` handed out.
    #[inline]
    pub fn mark_live(&self, ptr: usize) {
        // A block of a free list starts a block of a chunk: the checks of a free are not needed
        // (an index past the chunk still fails, at the flag's bounds check).
        let c = self.chunk_at_or_before(ptr).expect("a free block lies in a chunk");
        debug_assert!(self.locate(ptr).is_ok(), "block {ptr:#x} is no block of a chunk");
        let b = match self.block_shift {
            Some(shift) => (ptr - c.start) >> shift,
            None => (ptr - c.start) / self.block_size,
        };
        debug_assert_eq!(c.live[b].load(Ordering::Relaxed), 0, "block {ptr:#x} handed out twice");
        c.live[b].store(1, Ordering::Release);
    }

    /// Marks the block at `ptr` free; refuses (changing nothing) a pointer that is not a live block.
    #[inline]
    pub fn mark_free(&self, ptr: usize) -> Result<(), Misuse> {
        let (c, b) = self.locate(ptr)?;
        if c.live[b].swap(0, Ordering::AcqRel) == 0 {
            return Err(Misuse::DoubleFree { ptr });
        }
        Ok(())
    }

    /// Takes back the block at `ptr` freed with `bytes`: marks it free, or refuses (changing
    /// nothing) a pointer that is not a live block, or a size of 0 or above the block size.
    #[inline]
    pub fn take_back(&self, ptr: usize, bytes: usize) -> Result<(), Misuse> {
        let size = self.block_size;
        if (bytes == 0 || bytes > size) && self.is_live(ptr) {
            // Only the size class is known; report the block size as what was allocated.
            return Err(Misuse::WrongSize { ptr, allocated: size, given: bytes });
        }
        self.mark_free(ptr)
    }

    /// True when the block at `ptr` is handed out.
    pub fn is_live(&self, ptr: usize) -> bool {
        self.locate(ptr).is_ok_and(|(c, b)| c.live[b].load(Ordering::Acquire) != 0)
    }

    /// Blocks handed out (counted from the live flags: exact while no call runs).
    pub fn live_blocks(&self) -> usize {
        let chunks = self.chunks.read();
        chunks.iter().flat_map(|c| c.live.iter()).filter(|f| f.load(Ordering::Acquire) != 0).count()
    }

    /// Blocks in all chunks.
    pub fn total_blocks(&self) -> usize {
        self.total_blocks.load(Ordering::Acquire)
    }

    /// `(start, bytes)` of every chunk, by address.
    pub fn chunks(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.chunks.read().iter().map(|c| (c.start, c.blocks * self.block_size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frees_are_checked_against_the_chunks() {
        let t = ChunkTable::new(512);
        t.add(0x10_000, 100);
        t.add(0x1000, 4);
        assert_eq!(t.chunks().collect::<Vec<_>>(), vec![(0x1000, 2048), (0x10_000, 51_200)]);
        t.mark_live(0x10_000 + 99 * 512);
        assert!(t.is_live(0x10_000 + 99 * 512));
        assert_eq!(
            t.mark_free(0x10_000 + 99 * 512 + 256),
            Err(Misuse::InteriorPointer { ptr: 0x10_000 + 99 * 512 + 256, block_start: 0x10_000 + 99 * 512 })
        );
        assert_eq!(t.mark_free(0x10_000 + 100 * 512), Err(Misuse::UnknownPointer { ptr: 0x10_000 + 100 * 512 }));
        assert_eq!(t.mark_free(0x800), Err(Misuse::UnknownPointer { ptr: 0x800 }));
        assert_eq!(t.mark_free(0x1000), Err(Misuse::DoubleFree { ptr: 0x1000 }));
        assert_eq!(t.live_blocks(), 1);
        t.mark_free(0x10_000 + 99 * 512).unwrap();
        assert_eq!((t.live_blocks(), t.total_blocks()), (0, 104));
    }

    #[test]
    fn the_search_finds_the_chunk_a_linear_scan_finds() {
        // Every table size from 0 to 40 chunks (odd and even halvings), chunks added out of
        // order with gaps between them, probed at, around and between every chunk's ends.
        for n in 0..40usize {
            let t = ChunkTable::new(256);
            let starts: Vec<usize> = (0..n).map(|i| 0x10_0000 + ((i * 7) % n.max(1)) * 0x1_0000).collect();
            for &s in &starts {
                t.add(s, 4);
            }
            let mut probes = vec![0, usize::MAX];
            for &s in &starts {
                probes.extend([s - 1, s, s + 1, s + 1023, s + 1024, s + 0x8000]);
            }
            for p in probes {
                let want = t.chunks.read().iter().filter(|c| c.start <= p).map(|c| c.start).max();
                assert_eq!(t.chunk_at_or_before(p).map(|c| c.start), want, "{n} chunks, probe {p:#x}");
            }
        }
    }
}
