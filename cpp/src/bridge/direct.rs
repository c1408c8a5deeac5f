//! The fast paths of the two families that C++ reaches without dynamic dispatch, the pool family
//! and the arena family. In a module of their own, apart from the constructors that make the
//! resources' trait objects: the pool's and the arena's allocate and free then have one caller in
//! this module, and are inlined into the C symbols.

use super::arena::ArenaResource;
use super::pool::{Direct, PoolResource};
use super::resource::{fast_path, pointer_or_null, stream_view, AnyResource, Family};
use rmm::resource::MemoryResource;

impl PoolResource {
    /// The fast path of the virtual pool and of a handle without a pool: out of line, so that it
    /// does not lengthen the classic pool's.
    #[inline(never)]
    fn allocate_or_null_not_classic(&self, bytes: usize, alignment: usize, stream: usize) -> usize {
        match &self.pool {
            Direct::Virtual(v) => pointer_or_null(|| v.allocate(bytes, alignment, stream_view(stream))),
            _ => self.any.allocate_or_null(stream, bytes, alignment),
        }
    }

    /// [`deallocate`](Family::deallocate) of the virtual pool and of a handle without a pool.
    #[cold]
    #[inline(never)]
    fn deallocate_not_classic(&self, stream: usize, ptr: usize, bytes: usize, alignment: usize) {
        match &self.pool {
            Direct::Virtual(v) => self.any.free_or_report(ptr, bytes, alignment, stream, || {
                v.deallocate(ptr as *mut u8, bytes, alignment, stream_view(stream))
            }),
            _ => self.any.deallocate(stream, ptr, bytes, alignment),
        }
    }
}

impl Family for PoolResource {
    fn any(&self) -> &AnyResource {
        &self.any
    }

    /// One discriminant test, then the classic pool without dynamic dispatch.
    #[inline]
    fn allocate_or_null(&self, stream: usize, bytes: usize, alignment: usize) -> usize {
        match &self.pool {
            Direct::Classic(pool) => pointer_or_null(|| pool.allocate(bytes, alignment, stream_view(stream))),
            _ => self.allocate_or_null_not_classic(bytes, alignment, stream),
        }
    }

    #[inline]
    fn deallocate(&self, stream: usize, ptr: usize, bytes: usize, alignment: usize) {
        match &self.pool {
            Direct::Classic(pool) => self.any.free_or_report(ptr, bytes, alignment, stream, || {
                pool.deallocate(ptr as *mut u8, bytes, alignment, stream_view(stream))
            }),
            _ => self.deallocate_not_classic(stream, ptr, bytes, alignment),
        }
    }
}

fast_path!(PoolResource, rmm_rs_pool_allocate, rmm_rs_pool_deallocate);

impl Family for ArenaResource {
    fn any(&self) -> &AnyResource {
        &self.any
    }

    #[inline]
    fn allocate_or_null(&self, stream: usize, bytes: usize, alignment: usize) -> usize {
        match &self.arena {
            Some(arena) => pointer_or_null(|| arena.allocate(bytes, alignment, stream_view(stream))),
            None => self.any.allocate_or_null(stream, bytes, alignment),
        }
    }

    #[inline]
    fn deallocate(&self, stream: usize, ptr: usize, bytes: usize, alignment: usize) {
        match &self.arena {
            Some(arena) => self.any.free_or_report(ptr, bytes, alignment, stream, || {
                arena.deallocate(ptr as *mut u8, bytes, alignment, stream_view(stream))
            }),
            None => self.any.deallocate(stream, ptr, bytes, alignment),
        }
    }
}

fast_path!(ArenaResource, rmm_rs_arena_allocate, rmm_rs_arena_deallocate);
