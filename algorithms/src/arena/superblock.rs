//! A superblock: a range of the global arena that one small arena holds and carves into blocks.
//!
//! Superblocks are at least [`MIN_SUPERBLOCK`] bytes (RMM's `superblock::minimum_size`), so every
//! request a small arena serves fits in one; a small arena asks for larger ones as it grows, so a
//! thread that keeps much memory live comes back to the global arena (and its lock) rarely.

use crate::GRANULE;

/// The smallest superblock: 1 MiB, as in RMM. Requests searching for more go to the global arena.
pub const MIN_SUPERBLOCK: usize = 1 << 20;

/// The largest superblock a small arena asks for when it grows: bounds what one stream keeps
/// from the others.
pub const MAX_SUPERBLOCK: usize = 16 << 20;

/// A range `[addr, addr + size)` of the global arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superblock {
    /// First byte (a multiple of 256).
    pub addr: usize,
    /// Length in bytes (a multiple of 256, at least [`MIN_SUPERBLOCK`]).
    pub size: usize,
}

impl Superblock {
    /// One past the last byte.
    #[inline]
    pub fn end(&self) -> usize {
        self.addr + self.size
    }

    /// True when `addr` lies inside.
    #[inline]
    pub fn contains(&self, addr: usize) -> bool {
        self.addr <= addr && addr < self.end()
    }
}

/// The superblock size a small arena holding `held` bytes asks for to serve a search of `search`
/// bytes: as much as it holds (so it doubles), between [`MIN_SUPERBLOCK`] and [`MAX_SUPERBLOCK`],
/// and never less than the search.
pub fn superblock_size(search: usize, held: usize) -> usize {
    let grown = held.clamp(MIN_SUPERBLOCK, MAX_SUPERBLOCK);
    grown.max(search).next_multiple_of(GRANULE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_double_within_bounds_and_fit_the_search() {
        assert_eq!(superblock_size(256, 0), MIN_SUPERBLOCK);
        assert_eq!(superblock_size(256, 3 << 20), 3 << 20);
        assert_eq!(superblock_size(256, 1 << 30), MAX_SUPERBLOCK);
        assert_eq!(superblock_size(MIN_SUPERBLOCK, 0), MIN_SUPERBLOCK);
        let s = Superblock { addr: 0x1000, size: MIN_SUPERBLOCK };
        assert!(s.contains(0x1000) && s.contains(s.end() - 1) && !s.contains(s.end()) && !s.contains(0xfff));
    }
}
