//! Pointer → block lookup for the blocks currently handed out.

use super::block::BlockId;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for 256-aligned addresses: one folded 64×64→128 multiply. SipHash would cost more than
/// the rest of a free.
#[derive(Default)]
pub(crate) struct AddressHasher(u64);

impl Hasher for AddressHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0 ^ b as u64);
        }
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        let m = (x as u128).wrapping_mul(0x9E37_79B9_7F4A_7C15_u128);
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }
    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

/// Maps the start address of each allocated block to its record and the bytes the user asked for
/// (kept here, not in the block, so block records stay 32 bytes).
pub(crate) type AddressMap = HashMap<usize, (BlockId, usize), BuildHasherDefault<AddressHasher>>;
