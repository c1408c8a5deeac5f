//! Host memory from the global allocator: the upstream the pool and adaptors are tested on without a
//! GPU, and a plain host resource in its own right.

use crate::error::{Error, Misuse, Result};
use crate::resource::live_blocks::mark_claimed;
use crate::resource::{effective_alignment, same_instance, MemoryResource};
use crate::stream::CudaStreamView;
use parking_lot::Mutex;
use std::alloc::{alloc, dealloc, Layout};
use std::collections::HashMap;

/// Host memory from Rust's global allocator. It remembers every live allocation, and which of them
/// a suballocator claimed as a chunk, so a bad free is a [`Misuse`] error rather than undefined
/// behaviour.
#[derive(Debug, Default)]
pub struct HostMemoryResource {
    live: Mutex<HashMap<usize, HostBlock>>,
}

/// One live allocation: its layout and whether it is claimed.
#[derive(Debug, Clone, Copy)]
struct HostBlock {
    layout: Layout,
    claimed: bool,
}

impl HostMemoryResource {
    /// A new resource with nothing allocated.
    pub fn new() -> Self {
        Self::default()
    }

    /// `(count, bytes)` of the allocations not yet freed.
    pub fn outstanding(&self) -> (usize, usize) {
        let live = self.live.lock();
        (live.len(), live.values().map(|b| b.layout.size()).sum())
    }

    /// Marks the live block `ptr` of `bytes` claimed or not; the misuse when it is not live with
    /// that size or already so marked, with nothing changed.
    fn set_claimed(&self, ptr: *mut u8, bytes: usize, claimed: bool) -> Result<()> {
        let mut live = self.live.lock();
        let block = live.get_mut(&(ptr as usize)).ok_or(Misuse::UnknownPointer { ptr: ptr as usize })?;
        if block.layout.size() != bytes {
            return Err(Misuse::WrongSize { ptr: ptr as usize, allocated: block.layout.size(), given: bytes }.into());
        }
        Ok(mark_claimed(&mut block.claimed, ptr as usize, claimed)?)
    }
}

// SAFETY: every block is a fresh `alloc` of exactly its size and effective alignment, host memory
// (not device accessible), freed only when the live map shows this resource handed it out.
unsafe impl MemoryResource for HostMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, _stream: CudaStreamView) -> Result<*mut u8> {
        let align = effective_alignment(alignment)?;
        if bytes == 0 {
            return Ok(std::ptr::null_mut());
        }
        let layout = Layout::from_size_align(bytes, align)
            .map_err(|_| Error::out_of_memory(bytes, "size overflows the address space"))?;
        // SAFETY: layout has a non-zero size.
        let p = unsafe { alloc(layout) };
        if p.is_null() {
            return Err(Error::out_of_memory(bytes, "the host allocator returned null"));
        }
        self.live.lock().insert(p as usize, HostBlock { layout, claimed: false });
        Ok(p)
    }

    // The pointer is only handed to `dealloc` once the live map proves this resource allocated it
    // with exactly this layout, so a safe signature is sound.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn deallocate(&self, ptr: *mut u8, bytes: usize, _alignment: usize, _stream: CudaStreamView) -> Result<()> {
        if ptr.is_null() {
            return Ok(());
        }
        let mut live = self.live.lock();
        let (layout, claimed) = match live.get(&(ptr as usize)) {
            Some(b) => (b.layout, b.claimed),
            None => return Err(Misuse::UnknownPointer { ptr: ptr as usize }.into()),
        };
        if layout.size() != bytes {
            return Err(Misuse::WrongSize { ptr: ptr as usize, allocated: layout.size(), given: bytes }.into());
        }
        if claimed {
            return Err(Misuse::ClaimedBlock { ptr: ptr as usize }.into());
        }
        live.remove(&(ptr as usize));
        // SAFETY: ptr came from `alloc(layout)` and was live until the line above removed it.
        unsafe { dealloc(ptr, layout) };
        Ok(())
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        // Stateful: only the same instance can free what it handed out.
        same_instance(self, other)
    }

    crate::resource::accessibility!(device: false, host: true);

    fn claim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        self.set_claimed(ptr, bytes, true)
    }

    fn unclaim(&self, ptr: *mut u8, bytes: usize) -> Result<()> {
        self.set_claimed(ptr, bytes, false)
    }
}

impl Drop for HostMemoryResource {
    fn drop(&mut self) {
        for (addr, HostBlock { layout, .. }) in self.live.get_mut().drain() {
            // SAFETY: every entry is a live allocation made with exactly this layout.
            unsafe { dealloc(addr as *mut u8, layout) };
        }
    }
}
