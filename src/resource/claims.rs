//! The blocks of a resource that a suballocator claimed as chunks (see
//! [`MemoryResource::claim`](crate::resource::MemoryResource::claim)), for the resources that keep
//! no table of their live blocks to mark them in: the pool, the arena, the fixed-size resource,
//! the driver's stream-ordered allocators, the callback resource, and resources written outside
//! this crate.
//!
//! A free checks the table only while it holds a claim: one relaxed load of a counter that no
//! free writes, so a resource that is no suballocator's upstream pays nothing more.

use crate::error::{Misuse, Result};
use crate::resource::AddressHasher;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Claimed blocks by address, with their sizes: what a resource's `claim` and `unclaim` record and
/// its `deallocate` checks first ([`refuse_claimed`](Self::refuse_claimed)).
#[derive(Debug)]
pub struct ClaimTable {
    /// How many blocks are claimed: the free path's test.
    count: AtomicUsize,
    claimed: Mutex<HashMap<usize, usize, BuildHasherDefault<AddressHasher>>>,
}

impl ClaimTable {
    /// An empty table, for a field or a `static`.
    pub const fn new() -> Self {
        ClaimTable { count: AtomicUsize::new(0), claimed: Mutex::new(HashMap::with_hasher(BuildHasherDefault::new())) }
    }

    /// Records `ptr` (of `bytes`) as claimed; a second claim of it is refused.
    pub fn claim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        let mut claimed = self.claimed.lock();
        if claimed.contains_key(&(ptr as usize)) {
            return Err(Misuse::ClaimedBlock { ptr: ptr as usize }.into());
        }
        claimed.insert(ptr as usize, bytes);
        self.count.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// Ends the claim on `ptr` made with `bytes`; otherwise the misuse, with nothing changed.
    pub fn unclaim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        let mut claimed = self.claimed.lock();
        match claimed.get(&(ptr as usize)) {
            None => Err(Misuse::UnknownPointer { ptr: ptr as usize }.into()),
            Some(&allocated) if allocated != bytes => {
                Err(Misuse::WrongSize { ptr: ptr as usize, allocated, given: bytes }.into())
            }
            Some(_) => {
                claimed.remove(&(ptr as usize));
                self.count.fetch_sub(1, Ordering::Release);
                Ok(())
            }
        }
    }

    /// [`Misuse::ClaimedBlock`] when `ptr` is claimed: what a free checks before anything else.
    #[inline(always)]
    pub fn refuse_claimed(&self, ptr: *mut u8) -> Result<()> {
        if self.count.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        self.refuse_claimed_slow(ptr)
    }

    /// As [`refuse_claimed`](Self::refuse_claimed), as a test for paths that answer `bool`.
    #[inline(always)]
    pub fn is_claimed(&self, ptr: *mut u8) -> bool {
        self.refuse_claimed(ptr).is_err()
    }

    #[cold]
    #[inline(never)]
    fn refuse_claimed_slow(&self, ptr: *mut u8) -> Result<()> {
        if self.claimed.lock().contains_key(&(ptr as usize)) {
            return Err(Misuse::ClaimedBlock { ptr: ptr as usize }.into());
        }
        Ok(())
    }
}

impl Default for ClaimTable {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn a_claimed_block_is_refused_until_unclaimed() {
        let table = ClaimTable::new();
        let p = 0x10_000 as *mut u8;
        assert!(table.refuse_claimed(p).is_ok());
        table.claim(p, 4096).unwrap();
        assert_eq!(table.refuse_claimed(p), Err(Error::Misuse(Misuse::ClaimedBlock { ptr: 0x10_000 })));
        assert!(table.refuse_claimed(0x20_000 as *mut u8).is_ok(), "only the claimed address");
        assert!(table.claim(p, 4096).is_err(), "claimed twice");
        assert!(matches!(table.unclaim(p, 100), Err(Error::Misuse(Misuse::WrongSize { .. }))));
        assert!(table.is_claimed(p), "a refused unclaim changes nothing");
        table.unclaim(p, 4096).unwrap();
        assert!(!table.is_claimed(p));
        assert!(matches!(table.unclaim(p, 4096), Err(Error::Misuse(Misuse::UnknownPointer { .. }))));
    }
}
