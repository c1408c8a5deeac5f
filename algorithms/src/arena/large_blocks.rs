//! Large blocks by stream: a block over a superblock's size that a trusted stream frees goes to
//! that stream's own free lists in the global arena, not to the common ones.
//!
//! RMM waits for the freeing stream before it returns a large block to its global arena, so that
//! any stream may take it at once; that wait (a stream synchronisation per free) costs more than
//! the rest of the call many times over. Here the block stays the freeing stream's: the same
//! stream takes it again at once (its own later work is ordered after the free), another stream
//! only after a synchronisation of everything (a defragmentation) or of the stream as it retires
//! moved it to the common free lists. A stream's free blocks merge with their free neighbours of
//! the same stream only, as the pool's do.
//!
//! Which streams are trusted is the resource's concern (a stream of this library, the default
//! streams): one whose handle could name another stream unannounced frees as before, after a
//! synchronisation, to the common free lists.

use super::GlobalArena;
use crate::{next_retirement_number, StreamKey};

impl GlobalArena {
    /// Takes a block of `size` bytes (`requested` rounded up to 256) aligned to `align` straight
    /// from the arena: from the free blocks of the stream `own` (when given) first, then from the
    /// common ones; `None` when neither has a fitting free range.
    pub fn allocate_large(
        &mut self,
        requested: usize,
        size: usize,
        align: usize,
        own: Option<StreamKey>,
    ) -> Option<usize> {
        if let Some(key) = own {
            let set = self.core.set_of(key);
            if let Some(addr) = self.core.allocate(set, requested, size, align) {
                return Some(addr);
            }
        }
        self.core.allocate(self.set, requested, size, align)
    }

    /// Frees a large block to the free lists of stream `key`, which only that stream takes from
    /// until [`merge_streams`](Self::merge_streams) or [`retire_stream`](Self::retire_stream).
    /// `None` (nothing changed) unless `addr` starts a large block handed out here: a block of a
    /// parked superblock goes to [`deallocate`](Self::deallocate) after a synchronisation of
    /// `key`, and the misuse of any other address is diagnosed there. A wrong size changes
    /// nothing either.
    #[inline]
    pub fn deallocate_on(
        &mut self,
        addr: usize,
        bytes: usize,
        key: StreamKey,
    ) -> Option<Result<(), crate::error::Misuse>> {
        // A superblock is handed out of the arena whole: its start is no large block, though a
        // small arena's first block may start there.
        if self.held.contains_key(&addr) || self.parked.contains_key(&addr) {
            return None;
        }
        let set = self.core.set_of(key);
        self.core.try_deallocate(addr, bytes, set)
    }

    /// Moves every stream's free blocks to the common free lists. The caller synchronised every
    /// stream after the last free to them (a defragmentation holds the arena meanwhile).
    pub fn merge_streams(&mut self) {
        for set in self.core.streams_with_free_memory(self.set) {
            self.core.merge_into(set, self.set);
        }
    }

    /// Stream `key` is about to be destroyed: its free blocks go to the common free lists when
    /// its work was `synced`, else they wait, under no stream's key, for a synchronisation of
    /// everything. Either way a later stream with the same handle starts with none.
    pub fn retire_stream(&mut self, key: StreamKey, synced: bool) {
        if self.core.identity_of_key(key).is_none() {
            return;
        }
        if synced {
            let set = self.core.set_of(key);
            self.core.merge_into(set, self.set);
        }
        self.core.retire_key(key, StreamKey::retired_after_sync(next_retirement_number()));
    }

    /// True when stream `key` has free blocks of its own here.
    pub fn stream_has_blocks(&self, key: StreamKey) -> bool {
        self.core.identity_of_key(key).is_some() && self.core.free_bytes_of_key(key) > 0
    }

    /// Free bytes of streams' own free lists: what a synchronisation gives every stream.
    pub fn stream_free_bytes(&self) -> usize {
        self.core.state().free_bytes - self.core.free_bytes_of(self.set)
    }
}

#[cfg(test)]
mod tests {
    use crate::arena::{GlobalArena, MIN_SUPERBLOCK};
    use crate::error::Misuse;
    use crate::{StreamKey, GRANULE};

    const BASE: usize = 1 << 32;
    const BIG: usize = 2 * MIN_SUPERBLOCK;

    fn key(n: usize) -> StreamKey {
        StreamKey::of_handle(n << 12)
    }

    #[test]
    fn a_large_block_serves_its_stream_again_and_no_other_before_a_merge() {
        let mut g = GlobalArena::new(BASE, 2 * BIG);
        let (a, b) = (key(1), key(2));
        let x = g.allocate_large(BIG, BIG, GRANULE, Some(a)).unwrap();
        let y = g.allocate_large(BIG, BIG, GRANULE, Some(b)).unwrap();
        assert!(g.allocate_large(256, 256, GRANULE, Some(b)).is_none(), "full");
        g.deallocate_on(x, BIG, a).unwrap().unwrap();
        assert_eq!(g.stream_free_bytes(), BIG);
        // Stream b (and anyone taking common memory) cannot have a's block; a can, at once.
        assert!(g.allocate_large(BIG, BIG, GRANULE, Some(b)).is_none());
        assert!(g.allocate_large(BIG, BIG, GRANULE, None).is_none());
        assert!(g.acquire(MIN_SUPERBLOCK, 0, 9).is_none(), "superblocks come from common memory only");
        assert_eq!(g.allocate_large(BIG, BIG, GRANULE, Some(a)), Some(x));
        g.deallocate_on(x, BIG, a).unwrap().unwrap();
        // After a synchronisation of everything, a merge gives it to every stream.
        g.merge_streams();
        assert_eq!(g.stream_free_bytes(), 0);
        assert_eq!(g.allocate_large(BIG, BIG, GRANULE, Some(b)), Some(x));
        g.deallocate(x, BIG).unwrap();
        g.deallocate_on(y, BIG, b).unwrap().unwrap();
        g.check_invariants().unwrap();
    }

    #[test]
    fn a_retiring_stream_leaves_no_block_to_the_next_owner_of_its_handle() {
        let mut g = GlobalArena::new(BASE, 2 * BIG);
        let a = key(1);
        let x = g.allocate_large(BIG, BIG, GRANULE, Some(a)).unwrap();
        let y = g.allocate_large(BIG, BIG, GRANULE, Some(a)).unwrap();
        g.deallocate_on(x, BIG, a).unwrap().unwrap();
        // Not synchronised: the block waits under no stream's key.
        g.retire_stream(a, false);
        assert!(g.allocate_large(BIG, BIG, GRANULE, Some(a)).is_none(), "the handle's next stream waits");
        assert_eq!(g.stream_free_bytes(), BIG);
        g.merge_streams();
        assert_eq!(g.allocate_large(BIG, BIG, GRANULE, Some(key(3))), Some(x));
        // Synchronised: the block goes to everyone.
        g.deallocate_on(y, BIG, a).unwrap().unwrap();
        g.retire_stream(a, true);
        assert_eq!(g.stream_free_bytes(), 0);
        assert_eq!(g.allocate_large(BIG, BIG, GRANULE, None), Some(y));
        g.check_invariants().unwrap();
    }

    #[test]
    fn misuse_changes_nothing_and_parked_blocks_wait_for_a_synchronisation() {
        let mut g = GlobalArena::new(BASE, 2 * BIG);
        let a = key(1);
        let x = g.allocate_large(BIG, BIG, GRANULE, Some(a)).unwrap();
        assert!(matches!(g.deallocate_on(x, BIG - 1, a), Some(Err(Misuse::WrongSize { .. }))));
        assert_eq!(g.deallocate_on(x + 256, BIG, a), None, "no block starts there");
        let (sb, _) = g.acquire(256, 0, 4).unwrap();
        assert_eq!(g.deallocate_on(sb.addr, sb.size, a), None, "a superblock is no large block");
        let mut arena = crate::arena::SmallArena::new();
        arena.adopt(sb);
        let small = arena.allocate(256, 256, 256).unwrap();
        for (superblock, live) in arena.release_all() {
            g.give_back(superblock, live).unwrap();
        }
        assert_eq!(g.deallocate_on(small, 256, a), None, "a parked superblock's block");
        g.deallocate(small, 256).unwrap();
        g.deallocate_on(x, BIG, a).unwrap().unwrap();
        assert_eq!(g.deallocate_on(x, BIG, a), None, "freed: diagnosed by deallocate");
        assert!(matches!(g.deallocate(x, BIG), Err(Misuse::DoubleFree { .. })));
        g.check_invariants().unwrap();
    }
}
