//! The blocks one kind of driver memory has handed out and not yet taken back, so that a free of
//! anything else is refused instead of reaching the driver.
//!
//! `cuMemFree` accepts any pointer the driver allocated, a pool's chunk included: without this
//! record, `CudaMemoryResource::new().deallocate(p, n, ..)` of a pool's first block would release
//! the pool's whole chunk while the pool still hands it out. The table is per kind and
//! process-wide, because all instances of a kind are equal (memory from one may be freed through
//! another, as in RMM). One insert per allocation and one remove per free, each a hash of the
//! address under a mutex: small beside the driver call it guards (`cuMemAlloc`/`cuMemFree`
//! synchronise the device).

use crate::error::Misuse;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Live blocks by address, with their sizes and whether a suballocator claimed them (see
/// [`MemoryResource::claim`](crate::resource::MemoryResource::claim)).
#[derive(Debug)]
pub struct LiveBlocks {
    blocks: Mutex<HashMap<usize, LiveBlock, BuildHasherDefault<AddressHasher>>>,
}

/// One live block.
#[derive(Debug, Clone, Copy)]
struct LiveBlock {
    bytes: usize,
    claimed: bool,
}

impl LiveBlocks {
    /// An empty table, for a `static`.
    pub const fn new() -> Self {
        LiveBlocks { blocks: Mutex::new(HashMap::with_hasher(BuildHasherDefault::new())) }
    }

    /// Records `ptr` as handed out with `bytes`.
    pub(crate) fn insert(&self, ptr: usize, bytes: usize) {
        self.blocks.lock().insert(ptr, LiveBlock { bytes, claimed: false });
    }

    /// Takes `ptr` out of the table if it was handed out with `bytes` and is not claimed;
    /// otherwise the misuse, and the table is unchanged. Two frees of one block racing each other:
    /// one takes it, the other is refused.
    pub(crate) fn take(&self, ptr: usize, bytes: usize) -> Result<(), Misuse> {
        let mut blocks = self.blocks.lock();
        Self::check(&blocks, ptr, bytes)?;
        if blocks[&ptr].claimed {
            return Err(Misuse::ClaimedBlock { ptr });
        }
        blocks.remove(&ptr);
        Ok(())
    }

    /// Marks the live block `ptr` of `bytes` claimed (`true`) or not (`false`); the misuse when
    /// it is not live with that size or already in that state, and the table is unchanged.
    pub(crate) fn set_claimed(&self, ptr: usize, bytes: usize, claimed: bool) -> Result<(), Misuse> {
        let mut blocks = self.blocks.lock();
        Self::check(&blocks, ptr, bytes)?;
        let block = blocks.get_mut(&ptr).expect("checked above");
        mark_claimed(&mut block.claimed, ptr, claimed)
    }

    /// The misuse when `ptr` is not a live block of `bytes`.
    fn check(
        blocks: &HashMap<usize, LiveBlock, BuildHasherDefault<AddressHasher>>,
        ptr: usize,
        bytes: usize,
    ) -> Result<(), Misuse> {
        match blocks.get(&ptr) {
            None => Err(Misuse::UnknownPointer { ptr }),
            Some(b) if b.bytes != bytes => Err(Misuse::WrongSize { ptr, allocated: b.bytes, given: bytes }),
            Some(_) => Ok(()),
        }
    }

    /// Puts back a block [`take`](Self::take) removed, when the driver did not free it.
    pub(crate) fn put_back(&self, ptr: usize, bytes: usize) {
        self.insert(ptr, bytes);
    }

    /// How many blocks are live.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.blocks.lock().len()
    }
}

impl Default for LiveBlocks {
    fn default() -> Self {
        Self::new()
    }
}

/// Sets the claim mark of the live block `ptr` to `claim`; the misuse, with nothing changed, when
/// it is so already (a second claim, or the end of a claim never made).
pub(crate) fn mark_claimed(mark: &mut bool, ptr: usize, claim: bool) -> Result<(), Misuse> {
    match (*mark, claim) {
        (true, true) => Err(Misuse::ClaimedBlock { ptr }),
        (false, false) => Err(Misuse::UnknownPointer { ptr }),
        _ => {
            *mark = claim;
            Ok(())
        }
    }
}

/// The hasher of maps keyed by an address (live driver blocks, the PyTorch hook's owners): a
/// multiply by a large odd constant (Fibonacci hashing), folded so that the high bits reach the
/// low ones the table indexes with. Addresses are not chosen by an attacker, so no keyed hash is
/// needed.
#[derive(Debug, Default)]
pub struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `usize` keys are hashed (below); any other input still hashes, byte by byte.
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frees_only_what_was_handed_out_with_its_size() {
        let live = LiveBlocks::new();
        live.insert(0x1000, 512);
        assert_eq!(live.take(0x2000, 512), Err(Misuse::UnknownPointer { ptr: 0x2000 }));
        assert_eq!(live.take(0x1000, 256), Err(Misuse::WrongSize { ptr: 0x1000, allocated: 512, given: 256 }));
        assert_eq!(live.len(), 1, "a refused free changes nothing");
        assert_eq!(live.take(0x1000, 512), Ok(()));
        assert_eq!(live.take(0x1000, 512), Err(Misuse::UnknownPointer { ptr: 0x1000 }));
        live.put_back(0x1000, 512);
        assert_eq!(live.take(0x1000, 512), Ok(()));
        assert_eq!(live.len(), 0);
    }

    #[test]
    fn a_claimed_block_is_not_taken_until_unclaimed() {
        let live = LiveBlocks::new();
        live.insert(0x1000, 512);
        assert_eq!(
            live.set_claimed(0x1000, 256, true),
            Err(Misuse::WrongSize { ptr: 0x1000, allocated: 512, given: 256 })
        );
        assert_eq!(live.set_claimed(0x1000, 512, false), Err(Misuse::UnknownPointer { ptr: 0x1000 }), "not claimed");
        assert_eq!(live.set_claimed(0x1000, 512, true), Ok(()));
        assert_eq!(live.set_claimed(0x1000, 512, true), Err(Misuse::ClaimedBlock { ptr: 0x1000 }));
        assert_eq!(live.take(0x1000, 512), Err(Misuse::ClaimedBlock { ptr: 0x1000 }));
        assert_eq!(live.len(), 1);
        assert_eq!(live.set_claimed(0x1000, 512, false), Ok(()));
        assert_eq!(live.take(0x1000, 512), Ok(()));
    }

    #[test]
    fn many_addresses_stay_apart() {
        let live = LiveBlocks::new();
        for i in 0..10_000usize {
            live.insert(i << 21, i);
        }
        for i in (0..10_000usize).rev() {
            assert_eq!(live.take(i << 21, i), Ok(()));
        }
        assert_eq!(live.len(), 0);
    }
}
