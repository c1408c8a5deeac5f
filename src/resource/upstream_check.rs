//! The chunks a suballocator takes from its upstream and gives back when dropped, and the checks
//! of what an upstream hands back, made where a suballocator takes memory from it (the cold path,
//! never per block): the pool, the arena and the fixed-size resource carve blocks out of a chunk
//! by arithmetic on its address, so a null or misaligned chunk would put blocks outside
//! the memory the upstream gave. A misaligned chunk is refused with [`Error::BadUpstream`]
//! instead; a null one is the C way of saying "no memory" and becomes [`Error::OutOfMemory`], so
//! callers that retry or back off on out-of-memory (a pool halving its growth, RMM's
//! `failure_callback_resource_adaptor`) treat it as they treat the upstream's own.

use crate::error::{Error, Result};
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use rmm_algorithms::StreamOrder;

/// `ptr` as the upstream returned it for a request of `bytes`, or [`Error::OutOfMemory`] when it is
/// null although `bytes` is not 0: a null pointer is never handed on as memory (there is nothing
/// to give back).
#[inline]
pub fn refuse_null(ptr: *mut u8, bytes: usize) -> Result<*mut u8> {
    if ptr.is_null() && bytes != 0 {
        return Err(null_error(bytes));
    }
    Ok(ptr)
}

#[cold]
#[inline(never)]
fn null_error(bytes: usize) -> Error {
    Error::out_of_memory(bytes, "the upstream resource returned a null pointer")
}

/// Takes `bytes` aligned to `alignment` from `upstream` for a suballocator to carve blocks out of,
/// and claims it there (see [`MemoryResource::claim`]), so that nobody frees it through the
/// upstream while the suballocator hands it out; [`give_back_chunk`] ends the claim and frees it.
/// Errors of the upstream pass through unchanged. A null pointer (for `bytes` above 0) is
/// [`Error::OutOfMemory`]; one not aligned to `alignment`, or one the upstream will not claim, is
/// given back to the upstream and refused (with [`Error::BadUpstream`] for the misalignment), so
/// the refusal leaves the upstream and the caller as they were.
#[cold]
#[inline(never)]
pub(crate) fn allocate_chunk<U: MemoryResource + ?Sized>(
    upstream: &U,
    bytes: usize,
    alignment: usize,
    stream: CudaStreamView,
) -> Result<*mut u8> {
    let ptr = refuse_null(upstream.allocate(bytes, alignment, stream)?, bytes)?;
    if !(ptr as usize).is_multiple_of(alignment) {
        // Nothing else can be done with memory that breaks the contract; an error of the free
        // would hide the one that matters, the misalignment.
        let _ = upstream.deallocate(ptr, bytes, alignment, stream);
        return Err(Error::BadUpstream(format!(
            "the upstream resource returned {:#x} for {bytes} bytes aligned to {alignment}, which is not \
             so aligned; the memory was given back",
            ptr as usize
        )));
    }
    if let Err(e) = upstream.claim(ptr, bytes) {
        let _ = upstream.deallocate(ptr, bytes, alignment, stream);
        return Err(e);
    }
    Ok(ptr)
}

/// Gives back a chunk [`allocate_chunk`] took: ends its claim and frees it on `stream`. A free the
/// upstream refuses leaves the chunk claimed, as it was.
#[cold]
pub(crate) fn give_back_chunk<U: MemoryResource + ?Sized>(
    upstream: &U,
    ptr: *mut u8,
    bytes: usize,
    alignment: usize,
    stream: CudaStreamView,
) -> Result<()> {
    upstream.unclaim(ptr, bytes)?;
    upstream.deallocate(ptr, bytes, alignment, stream).inspect_err(|_| {
        let _ = upstream.claim(ptr, bytes);
    })
}

/// What the `Drop` of a resource that carved blocks out of chunks of `upstream` does: waits,
/// through `order`, for all work that may still use those blocks, then gives every chunk
/// `chunks()` lists (start, bytes) back to `upstream` on the default stream, with `alignment`.
/// Errors have nowhere to go from a destructor and are dropped. Nothing is done while the process
/// exits: the driver may be gone, and the chunks go with the process.
#[cold]
pub(crate) fn give_back_chunks<U, I>(
    upstream: &U,
    order: &dyn StreamOrder,
    alignment: usize,
    chunks: impl FnOnce() -> I,
) where
    U: MemoryResource + ?Sized,
    I: IntoIterator<Item = (usize, usize)>,
{
    if crate::process_exit::process_is_exiting() {
        return;
    }
    let _ = order.synchronize_all();
    for (start, bytes) in chunks() {
        let _ = give_back_chunk(upstream, start as *mut u8, bytes, alignment, CudaStreamView::DEFAULT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::HostMemoryResource;

    #[test]
    fn null_is_refused_only_for_non_zero_requests() {
        assert!(refuse_null(std::ptr::null_mut(), 0).is_ok());
        assert!(matches!(refuse_null(std::ptr::null_mut(), 1), Err(Error::OutOfMemory { .. })));
    }

    #[test]
    fn an_aligned_chunk_passes() {
        let host = HostMemoryResource::new();
        let p = allocate_chunk(&host, 4096, 256, CudaStreamView::DEFAULT).unwrap();
        assert_eq!(p as usize % 256, 0);
        // Claimed: only the way back for chunks frees it.
        let refused = host.deallocate(p, 4096, 256, CudaStreamView::DEFAULT);
        assert!(matches!(refused, Err(Error::Misuse(crate::error::Misuse::ClaimedBlock { .. }))), "{refused:?}");
        give_back_chunk(&host, p, 4096, 256, CudaStreamView::DEFAULT).unwrap();
        assert_eq!(host.outstanding(), (0, 0));
    }
}
