//! The fast paths of the families that C++ reaches without dynamic dispatch, the pool family, the
//! arena family and the block family. In a module of their own, apart from the constructors that
//! make the resources' trait objects: the resources' allocate and free then have one caller in
//! this module, and are inlined into the C symbols.
//!
//! Every function here takes a stream as C++ passes it, an integer, and so is `unsafe`: the
//! stream must be live (or a default one) for the call, RMM's contract for `cuda_stream_view`,
//! which the C++ caller keeps.

use super::arena::ArenaResource;
use super::block::{Block, BlockResource};
use super::pool::{Direct, PoolResource};
use super::resource::{fast_path, pointer_or_null, stream_view, AnyResource, Family};
use rmm::resource::MemoryResource;

impl PoolResource {
    /// The fast path of the virtual pool and of a handle without a pool: out of line, so that it
    /// does not lengthen the classic pool's.
    ///
    /// # Safety
    /// `stream` is live for the call (see the module's documentation).
    #[inline(never)]
    unsafe fn allocate_or_null_not_classic(&self, bytes: usize, alignment: usize, stream: usize) -> usize {
        match &self.pool {
            Direct::Virtual(v) => {
                // SAFETY: the caller's contract: `stream` is live for the call.
                let view = unsafe { stream_view(stream) };
                pointer_or_null(|| v.allocate(bytes, alignment, view))
            }
            // SAFETY: the caller's contract, passed on.
            _ => unsafe { self.any.allocate_or_null(stream, bytes, alignment) },
        }
    }

    /// [`deallocate`](Family::deallocate) of the virtual pool and of a handle without a pool.
    ///
    /// # Safety
    /// `stream` is live for the call (see the module's documentation).
    #[cold]
    #[inline(never)]
    unsafe fn deallocate_not_classic(&self, stream: usize, ptr: usize, bytes: usize, alignment: usize) {
        match &self.pool {
            Direct::Virtual(v) => {
                // SAFETY: the caller's contract: `stream` is live for the call.
                let view = unsafe { stream_view(stream) };
                self.any.free_or_report(ptr, bytes, alignment, stream, || {
                    v.deallocate(ptr as *mut u8, bytes, alignment, view)
                })
            }
            // SAFETY: the caller's contract, passed on.
            _ => unsafe { self.any.deallocate(stream, ptr, bytes, alignment) },
        }
    }
}

impl Family for PoolResource {
    fn any(&self) -> &AnyResource {
        &self.any
    }

    /// One discriminant test, then the classic pool's cache alone, which needs few registers
    /// and saves none; else the whole call, in a function of its own.
    #[inline]
    unsafe fn allocate_or_null(&self, stream: usize, bytes: usize, alignment: usize) -> usize {
        if let Direct::Classic(pool) = &self.pool {
            // SAFETY: the caller's contract: `stream` is live for the call.
            let view = unsafe { stream_view(stream) };
            // No catch here (its landing pad costs the path its lean frame): the cache's path
            // indexes nothing unchecked that could panic, and declines to the whole call, which
            // catches and reports, wherever the pool's state is not as it expects.
            if let Some(p) = pool.allocate_from_cache(bytes, alignment, view) {
                return p as usize;
            }
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { self.allocate_or_null_whole(stream, bytes, alignment) }
    }

    #[inline]
    unsafe fn deallocate(&self, stream: usize, ptr: usize, bytes: usize, alignment: usize) {
        match &self.pool {
            Direct::Classic(pool) => {
                // SAFETY: the caller's contract: `stream` is live for the call.
                let view = unsafe { stream_view(stream) };
                self.any.free_or_report(ptr, bytes, alignment, stream, || {
                    pool.deallocate(ptr as *mut u8, bytes, alignment, view)
                })
            }
            // SAFETY: the caller's contract, passed on.
            _ => unsafe { self.deallocate_not_classic(stream, ptr, bytes, alignment) },
        }
    }
}

impl PoolResource {
    /// The whole allocation, where the classic pool's cache alone did not serve it: the classic
    /// pool without dynamic dispatch.
    ///
    /// # Safety
    /// `stream` is live for the call (see the module's documentation).
    #[inline(never)]
    unsafe fn allocate_or_null_whole(&self, stream: usize, bytes: usize, alignment: usize) -> usize {
        match &self.pool {
            Direct::Classic(pool) => {
                // SAFETY: the caller's contract: `stream` is live for the call.
                let view = unsafe { stream_view(stream) };
                pointer_or_null(|| pool.allocate(bytes, alignment, view))
            }
            // SAFETY: the caller's contract, passed on.
            _ => unsafe { self.allocate_or_null_not_classic(bytes, alignment, stream) },
        }
    }
}

fast_path!(PoolResource, rmm_rs_pool_allocate, rmm_rs_pool_deallocate);

impl Family for ArenaResource {
    fn any(&self) -> &AnyResource {
        &self.any
    }

    #[inline]
    unsafe fn allocate_or_null(&self, stream: usize, bytes: usize, alignment: usize) -> usize {
        match &self.arena {
            Some(arena) => {
                // SAFETY: the caller's contract: `stream` is live for the call.
                let view = unsafe { stream_view(stream) };
                pointer_or_null(|| arena.allocate(bytes, alignment, view))
            }
            // SAFETY: the caller's contract, passed on.
            None => unsafe { self.any.allocate_or_null(stream, bytes, alignment) },
        }
    }

    #[inline]
    unsafe fn deallocate(&self, stream: usize, ptr: usize, bytes: usize, alignment: usize) {
        match &self.arena {
            Some(arena) => {
                // SAFETY: the caller's contract: `stream` is live for the call.
                let view = unsafe { stream_view(stream) };
                self.any.free_or_report(ptr, bytes, alignment, stream, || {
                    arena.deallocate(ptr as *mut u8, bytes, alignment, view)
                })
            }
            // SAFETY: the caller's contract, passed on.
            None => unsafe { self.any.deallocate(stream, ptr, bytes, alignment) },
        }
    }
}

fast_path!(ArenaResource, rmm_rs_arena_allocate, rmm_rs_arena_deallocate);

impl Family for BlockResource {
    fn any(&self) -> &AnyResource {
        &self.any
    }

    #[inline]
    unsafe fn allocate_or_null(&self, stream: usize, bytes: usize, alignment: usize) -> usize {
        // SAFETY: the caller's contract: `stream` is live for the call.
        let view = unsafe { stream_view(stream) };
        match &self.block {
            Block::FixedSize(r) => pointer_or_null(|| r.allocate(bytes, alignment, view)),
            Block::Binning(r) => pointer_or_null(|| r.allocate(bytes, alignment, view)),
            // SAFETY: the caller's contract, passed on.
            Block::None => unsafe { self.any.allocate_or_null(stream, bytes, alignment) },
        }
    }

    #[inline]
    unsafe fn deallocate(&self, stream: usize, ptr: usize, bytes: usize, alignment: usize) {
        // SAFETY: the caller's contract: `stream` is live for the call.
        let view = unsafe { stream_view(stream) };
        match &self.block {
            Block::FixedSize(r) => self
                .any
                .free_or_report(ptr, bytes, alignment, stream, || r.deallocate(ptr as *mut u8, bytes, alignment, view)),
            Block::Binning(r) => self
                .any
                .free_or_report(ptr, bytes, alignment, stream, || r.deallocate(ptr as *mut u8, bytes, alignment, view)),
            // SAFETY: the caller's contract, passed on.
            Block::None => unsafe { self.any.deallocate(stream, ptr, bytes, alignment) },
        }
    }
}

fast_path!(BlockResource, rmm_rs_block_allocate, rmm_rs_block_deallocate);
