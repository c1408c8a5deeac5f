//! The arena on device memory (run on a GPU; elsewhere each test prints `skipped: no CUDA device`):
//! a block whose superblock a defragmentation moved to another stream's arena keeps its data and
//! is freed cleanly on the stream it was allocated on, as in RMM's own arena tests.

mod common;

use common::device_bytes::{fill_async, read};
use common::gpu;
use rmm::resource::{ArenaMemoryResource, CudaMemoryResource};
use rmm::{CudaStream, CudaStreamView, MemoryResource};
use std::sync::Arc;

const MIB: usize = 1 << 20;

#[test]
fn a_per_thread_default_stream_block_is_freed_after_its_superblock_moved() {
    if !gpu() {
        return;
    }
    let r = ArenaMemoryResource::new(Arc::new(CudaMemoryResource::new()), Some(2 * MIB), false).unwrap();
    let ptds = CudaStreamView::PER_THREAD;
    // The per-thread default stream's arena takes one superblock; the block is written there.
    let thread_block = r.allocate(256, 256, ptds).unwrap();
    fill_async(thread_block, 256, 0x5a, ptds);
    // Another stream's arena takes the other superblock and keeps it, empty.
    let stream = CudaStream::new().unwrap();
    let p = r.allocate(32 << 10, 256, stream.view()).unwrap();
    r.deallocate(p, 32 << 10, 256, stream.view()).unwrap();
    // No superblock is left: the defragmentation gives both back (after synchronising the
    // device), and the legacy default stream's arena takes both, the second with the live block.
    let whole = r.allocate(MIB, 256, CudaStreamView::DEFAULT).unwrap();
    let part = r.allocate(32 << 10, 256, CudaStreamView::DEFAULT).unwrap();
    fill_async(whole, MIB, 0x11, CudaStreamView::DEFAULT);
    fill_async(part, 32 << 10, 0x22, CudaStreamView::DEFAULT);
    CudaStreamView::DEFAULT.synchronize().unwrap();
    assert!(read(thread_block, 256).iter().all(|&b| b == 0x5a), "the live block was overwritten");
    r.check_invariants().unwrap();
    // Freed on the stream it was allocated on, through the arena that now holds its superblock.
    fill_async(thread_block, 256, 0x33, ptds);
    r.deallocate(thread_block, 256, 256, ptds).unwrap();
    r.check_invariants().unwrap();
    assert_eq!(r.state().free_bytes, MIB - (32 << 10));
    // The legacy default stream may reuse it at once: the free waited for the per-thread stream.
    let again = r.allocate(256, 256, CudaStreamView::DEFAULT).unwrap();
    fill_async(again, 256, 0x44, CudaStreamView::DEFAULT);
    CudaStreamView::DEFAULT.synchronize().unwrap();
    assert!(read(again, 256).iter().all(|&b| b == 0x44));
    r.deallocate(again, 256, 256, CudaStreamView::DEFAULT).unwrap();
    r.deallocate(whole, MIB, 256, CudaStreamView::DEFAULT).unwrap();
    r.deallocate(part, 32 << 10, 256, CudaStreamView::DEFAULT).unwrap();
    r.check_invariants().unwrap();
    assert_eq!(r.state().free_bytes, 2 * MIB);
    let all = r.allocate(2 * MIB, 256, stream.view()).unwrap();
    r.deallocate(all, 2 * MIB, 256, stream.view()).unwrap();
    stream.synchronize().unwrap();
}

#[test]
fn a_parked_block_is_freed_through_the_global_arena_on_another_thread() {
    if !gpu() {
        return;
    }
    let r = Arc::new(ArenaMemoryResource::new(Arc::new(CudaMemoryResource::new()), Some(2 * MIB), false).unwrap());
    // A block of this thread's per-thread default stream, written there.
    let block = r.allocate(4096, 256, CudaStreamView::PER_THREAD).unwrap();
    fill_async(block, 4096, 0x6b, CudaStreamView::PER_THREAD);
    // A request of the whole arena defragments: the superblock is parked with the block (the
    // request still fails).
    assert!(r.allocate(2 * MIB, 256, CudaStreamView::DEFAULT).unwrap_err().is_out_of_memory());
    r.check_invariants().unwrap();
    assert!(read(block, 4096).iter().all(|&b| b == 0x6b));
    // Another thread frees it on its own per-thread default stream (a different stream): the
    // free waits for that stream, then the superblock merges again.
    let addr = block as usize;
    let r2 = r.clone();
    std::thread::spawn(move || {
        // A new thread has no current context: the test's own memset needs device 0's.
        rmm::device::set_current_device(rmm::DeviceId(0)).unwrap();
        let ptds = CudaStreamView::PER_THREAD;
        fill_async(addr as *mut u8, 4096, 0x7c, ptds);
        r2.deallocate(addr as *mut u8, 4096, 256, ptds).unwrap();
    })
    .join()
    .unwrap();
    r.check_invariants().unwrap();
    assert_eq!(r.state().free_bytes, 2 * MIB);
    let all = r.allocate(2 * MIB, 256, CudaStreamView::DEFAULT).unwrap();
    r.deallocate(all, 2 * MIB, 256, CudaStreamView::DEFAULT).unwrap();
    CudaStreamView::DEFAULT.synchronize().unwrap();
}
