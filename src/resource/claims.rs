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
    use crate::resource::{
        ArenaMemoryResource, FixedSizeMemoryResource, HostMemoryResource, MemoryResource, PoolMemoryResource,
    };
    use crate::stream::CudaStreamView;
    use std::sync::Arc;

    const S: CudaStreamView = CudaStreamView::DEFAULT;

    fn is_claimed_refusal(r: Result<()>) -> bool {
        matches!(r, Err(Error::Misuse(Misuse::ClaimedBlock { .. })))
    }

    #[test]
    fn a_pool_chunk_cannot_be_freed_through_the_upstream_it_shares() {
        let host = Arc::new(HostMemoryResource::new());
        let pool = PoolMemoryResource::new(host.clone(), 1 << 20, None).unwrap();
        // The block spans the whole chunk: only the claim tells the two apart.
        let p = pool.allocate(1 << 20, 256, S).unwrap();
        let refused = host.deallocate(p, 1 << 20, 256, S);
        assert!(is_claimed_refusal(refused.clone()), "{refused:?}");
        assert_eq!(host.outstanding(), (1, 1 << 20), "the chunk is still the pool's");
        // SAFETY: p is a live block of 1 MiB of host memory.
        unsafe { p.write_bytes(0x5a, 1 << 20) };
        pool.deallocate(p, 1 << 20, 256, S).unwrap();
        let q = pool.allocate(1 << 20, 256, S).unwrap();
        assert_eq!(q, p, "the pool still owns its chunk");
        pool.deallocate(q, 1 << 20, 256, S).unwrap();
        drop(pool);
        assert_eq!(host.outstanding(), (0, 0), "the pool gave its chunk back through the claim");
    }

    /// Forwards to `inner` and notes every block handed out: how a test learns a chunk's address.
    struct Noting<U> {
        inner: U,
        blocks: parking_lot::Mutex<Vec<(usize, usize)>>,
    }

    // SAFETY: every call goes to `inner` unchanged; the accessibility answers are `inner`'s.
    unsafe impl<U: MemoryResource> MemoryResource for Noting<U> {
        fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
            let p = self.inner.allocate(bytes, alignment, stream)?;
            self.blocks.lock().push((p as usize, bytes));
            Ok(p)
        }
        fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
            self.inner.deallocate(ptr, bytes, alignment, stream)
        }
        crate::resource::accessibility!(inner);
        crate::resource::forward_claims!(inner);
    }

    fn noting<U: MemoryResource>(inner: U) -> Arc<Noting<U>> {
        Arc::new(Noting { inner, blocks: parking_lot::Mutex::new(Vec::new()) })
    }

    /// The last block `noted` handed out.
    fn last<U>(noted: &Noting<U>) -> (*mut u8, usize) {
        let (p, n) = *noted.blocks.lock().last().unwrap();
        (p as *mut u8, n)
    }

    #[test]
    fn a_suballocator_chunk_cannot_be_freed_through_a_suballocator_upstream() {
        let inner = Arc::new(PoolMemoryResource::new(HostMemoryResource::new(), 8 << 20, None).unwrap());
        let outer = PoolMemoryResource::new(inner.clone(), 1 << 20, None).unwrap();
        let p = outer.allocate(1 << 20, 256, S).unwrap();
        assert!(is_claimed_refusal(inner.deallocate(p, 1 << 20, 256, S)));
        assert!(!inner.try_deallocate_immediately(p, 1 << 20, 256, S), "nor without waiting");
        // Were the free accepted, the inner pool would hand the same memory out again.
        let other = inner.allocate(1 << 20, 256, S).unwrap();
        assert_ne!(other, p);
        inner.deallocate(other, 1 << 20, 256, S).unwrap();
        outer.deallocate(p, 1 << 20, 256, S).unwrap();
        drop(outer);
        inner.check_invariants().unwrap();

        let noted = noting(inner.clone());
        let arena = ArenaMemoryResource::new(noted.clone(), Some(1 << 20), false).unwrap();
        let (chunk, bytes) = last(&noted);
        assert!(is_claimed_refusal(inner.deallocate(chunk, bytes, 256, S)));
        let fixed = FixedSizeMemoryResource::new(noted.clone(), 1 << 16, 4).unwrap();
        let (chunk, bytes) = last(&noted);
        assert!(is_claimed_refusal(noted.deallocate(chunk, bytes, 256, S)));
        drop((arena, fixed));
        inner.check_invariants().unwrap();
        let p = inner.allocate(2 << 20, 256, S).unwrap();
        inner.deallocate(p, 2 << 20, 256, S).unwrap();
    }

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
