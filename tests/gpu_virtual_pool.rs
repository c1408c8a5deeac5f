//! The virtual-memory pool on a device (run on a GPU; elsewhere each test prints
//! `skipped: no CUDA device`, and on a device without virtual memory management
//! `skipped: no virtual memory management`): memory mapped and written, released and mapped again
//! at the same addresses with the data of live blocks intact, peer access, and export of the
//! physical memory as a file descriptor.

mod common;

use common::contexts::{pop_context, push_context, push_second_context};
use common::device_bytes::{cu, fill_async, read};
use common::gpu;
use cudarc::driver::sys;
use rmm::resource::virtual_pool::VirtualMemoryOptions;
use rmm::resource::VirtualPoolMemoryResource;
use rmm::{CudaStream, CudaStreamView, DeviceId, Error, MemoryResource};

const MIB: usize = 1 << 20;

/// A pool over a reservation of `reserve` bytes, or `None` (printed) where the device lacks
/// virtual memory management.
fn pool(reserve: usize, initial: usize, options: &VirtualMemoryOptions) -> Option<VirtualPoolMemoryResource> {
    match VirtualPoolMemoryResource::with_options(reserve, initial, options) {
        Ok(p) => Some(p),
        Err(Error::Unsupported(why)) => {
            println!("skipped: no virtual memory management ({why})");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn mapped_memory_is_written_released_and_mapped_again_at_the_same_addresses() {
    if !gpu() {
        return;
    }
    let Some(p) = pool(8 << 30, 0, &VirtualMemoryOptions::default()) else { return };
    let g = p.granularity();
    println!("granularity {} KiB, reservation {} GiB at {:#x}", g >> 10, p.reserved_bytes() >> 30, p.base());
    let stream = CudaStream::new().unwrap();
    let s = stream.view();
    // Whole granules each, so that each block is a run of granules of its own.
    let sizes: Vec<usize> = [2, 3, 4, 1, 5].iter().map(|k| k * g).collect();
    let blocks: Vec<*mut u8> = sizes.iter().map(|&n| p.allocate(n, 256, s).unwrap()).collect();
    for (i, (&b, &n)) in blocks.iter().zip(&sizes).enumerate() {
        assert!(p.is_mapped(b as usize, n));
        fill_async(b, n, i as u8 + 1, s);
    }
    stream.synchronize().unwrap();
    for (i, (&b, &n)) in blocks.iter().zip(&sizes).enumerate() {
        assert!(read(b, n).iter().all(|&v| v == i as u8 + 1), "block {i} reads back");
    }
    p.check_invariants().unwrap();
    // Free the first, the third and the last, and give their memory back.
    let freed = [0, 2, 4];
    for &i in &freed {
        p.deallocate(blocks[i], sizes[i], 256, s).unwrap();
    }
    let mapped = p.mapped_bytes();
    let released = p.release().unwrap();
    println!("released {} MiB of {} MiB mapped", released / MIB, mapped / MIB);
    assert_eq!(released, 11 * g, "the freed blocks' granules, all of them");
    assert_eq!(p.mapped_bytes(), 4 * g);
    p.check_invariants().unwrap();
    // The live blocks kept their memory and their data.
    for i in [1, 3] {
        assert!(p.is_mapped(blocks[i] as usize, sizes[i]));
        assert!(read(blocks[i], sizes[i]).iter().all(|&v| v == i as u8 + 1), "live block {i} intact");
    }
    // Regrowth maps the holes again (the lowest that fits), then at the end: each size comes back
    // at its address.
    let again: Vec<*mut u8> = freed.iter().map(|&i| p.allocate(sizes[i], 256, s).unwrap()).collect();
    for (&i, &b) in freed.iter().zip(&again) {
        assert_eq!(b, blocks[i], "block {i} mapped again at the same address");
        fill_async(b, sizes[i], 0xa0 + i as u8, s);
    }
    stream.synchronize().unwrap();
    for (&i, &b) in freed.iter().zip(&again) {
        assert!(read(b, sizes[i]).iter().all(|&v| v == 0xa0 + i as u8));
    }
    assert_eq!(p.mapped_bytes(), 15 * g);
    for (&i, &b) in freed.iter().zip(&again) {
        p.deallocate(b, sizes[i], 256, s).unwrap();
    }
    for i in [1, 3] {
        p.deallocate(blocks[i], sizes[i], 256, s).unwrap();
    }
    p.release().unwrap();
    assert_eq!(p.mapped_bytes(), 0);
    p.check_invariants().unwrap();
}

#[test]
fn growth_joins_the_free_tail_on_the_device() {
    if !gpu() {
        return;
    }
    let Some(p) = pool(1 << 30, 0, &VirtualMemoryOptions::default()) else { return };
    let g = p.granularity();
    let s = CudaStreamView::DEFAULT;
    let a = p.allocate(g / 2, 256, s).unwrap();
    p.deallocate(a, g / 2, 256, s).unwrap();
    // One granule free at the end; a block of two needs one more, joined to it.
    let b = p.allocate(2 * g, 256, s).unwrap();
    assert_eq!(b, a);
    assert_eq!(p.mapped_bytes(), 2 * g);
    fill_async(b, 2 * g, 7, s);
    s.synchronize().unwrap();
    assert!(read(b, 2 * g).iter().all(|&v| v == 7));
    p.deallocate(b, 2 * g, 256, s).unwrap();
}

#[test]
fn a_reservation_above_the_largest_is_refused_before_anything_is_reserved() {
    if !gpu() {
        return;
    }
    // 64 TiB: its per-granule record alone would take half a GiB of host memory.
    match VirtualPoolMemoryResource::new(64 << 40, 0) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("reserves at most"), "{m}"),
        Err(Error::Unsupported(why)) => println!("skipped: no virtual memory management ({why})"),
        other => panic!("{:?}", other.map(|p| p.reserved_bytes())),
    }
}

#[test]
fn an_exhausted_reservation_is_named_on_the_device() {
    if !gpu() {
        return;
    }
    let Some(p) = pool(64 * MIB, 0, &VirtualMemoryOptions::default()) else { return };
    let s = CudaStreamView::DEFAULT;
    let cap = p.reserved_bytes();
    let a = p.allocate(cap, 256, s).unwrap();
    let e = p.allocate(MIB, 256, s).unwrap_err();
    assert!(e.to_string().contains("reserved virtual address range is exhausted"), "{e}");
    p.deallocate(a, cap, 256, s).unwrap();
    common::device_keeps_working(&p);
}

#[test]
fn peers_asked_for_can_write_the_memory() {
    if !gpu() {
        return;
    }
    if rmm::device::device_count().unwrap() < 2 {
        println!("skipped: one device");
        return;
    }
    let mut can = 0;
    // SAFETY: a query with a valid out pointer.
    cu(unsafe { sys::cuDeviceCanAccessPeer(&mut can, 1, 0) }, "cuDeviceCanAccessPeer");
    if can != 1 {
        println!("skipped: device 1 cannot access device 0");
        return;
    }
    let options = VirtualMemoryOptions { device: Some(DeviceId(0)), peers: vec![DeviceId(1)], ..Default::default() };
    let _on_0 = rmm::DeviceGuard::new(DeviceId(0)).unwrap();
    let Some(p) = pool(1 << 30, 0, &options) else { return };
    assert_eq!(p.access(), [DeviceId(0), DeviceId(1)]);
    let n = 4 * MIB;
    let b = p.allocate(n, 256, CudaStreamView::DEFAULT).unwrap();
    {
        let _on_1 = rmm::DeviceGuard::new(DeviceId(1)).unwrap();
        // SAFETY: a synchronous memset of a live block, from device 1's context.
        cu(unsafe { sys::cuMemsetD8_v2(b as u64, 9, n) }, "cuMemsetD8 from device 1");
        // SAFETY: takes no pointers; device 1's context, made current by `_on_1`, waits for the
        // memset above.
        cu(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize");
    }
    assert!(read(b, n).iter().all(|&v| v == 9));
    p.deallocate(b, n, 256, CudaStreamView::DEFAULT).unwrap();
}

#[test]
fn memory_is_exported_as_a_file_descriptor_where_supported() {
    if !gpu() {
        return;
    }
    let options = VirtualMemoryOptions { export_posix_fd: true, ..Default::default() };
    let Some(p) = pool(1 << 30, 0, &options) else { return };
    let b = p.allocate(MIB, 256, CudaStreamView::DEFAULT).unwrap();
    match p.export_posix_fd(b as usize) {
        Ok(fd) => {
            assert!(fd >= 0);
            use std::os::fd::{FromRawFd, OwnedFd};
            // SAFETY: the driver handed the descriptor to the caller, who closes it once.
            drop(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        Err(Error::Unsupported(why)) => println!("skipped: {why}"),
        Err(e) => panic!("{e}"),
    }
    p.deallocate(b, MIB, 256, CudaStreamView::DEFAULT).unwrap();
}

/// A measurement of giving memory back and taking it again: 50 blocks of 1 GiB mapped,
/// freed, released (unmapped) and allocated again, with the time of each step and every address
/// checked unchanged. Needs 50 GiB free on the device; a measurement, so run by hand:
/// `cargo test --release --test gpu_virtual_pool -- --ignored --nocapture release_and_regrow`.
#[test]
#[ignore = "a measurement needing 50 GiB of device memory; see the doc comment"]
fn release_and_regrow_50_gib() {
    const GIB: usize = 1 << 30;
    const BLOCKS: usize = 50;
    if !gpu() {
        return;
    }
    let Some(p) = pool(64 * GIB, 0, &VirtualMemoryOptions::default()) else { return };
    let s = CudaStreamView::DEFAULT;
    let timed = |what: &str, f: &mut dyn FnMut()| {
        let t0 = std::time::Instant::now();
        f();
        s.synchronize().unwrap();
        println!("{what}: {:.3} s", t0.elapsed().as_secs_f64());
    };
    let mut first = Vec::new();
    timed("map 50 GiB (50 allocations of 1 GiB)", &mut || {
        first = (0..BLOCKS).map(|_| p.allocate(GIB, 256, s).unwrap()).collect();
    });
    assert_eq!(p.mapped_bytes(), BLOCKS * GIB);
    timed("free them", &mut || {
        for &b in &first {
            p.deallocate(b, GIB, 256, s).unwrap();
        }
    });
    let mut released = 0;
    timed("release (unmap 50 GiB)", &mut || released = p.release().unwrap());
    assert_eq!((released, p.mapped_bytes()), (BLOCKS * GIB, 0));
    let mut again = Vec::new();
    timed("regrow (50 allocations of 1 GiB, mapped again)", &mut || {
        again = (0..BLOCKS).map(|_| p.allocate(GIB, 256, s).unwrap()).collect();
    });
    assert_eq!(again, first, "the same addresses");
    fill_async(again[BLOCKS - 1], GIB, 0x5a, s);
    s.synchronize().unwrap();
    assert!(read(again[BLOCKS - 1], 4096).iter().all(|&b| b == 0x5a));
    for b in again {
        p.deallocate(b, GIB, 256, s).unwrap();
    }
    println!("addresses unchanged: {BLOCKS} blocks of 1 GiB at {:#x}..", first[0] as usize);
}

/// True once all work queued on `s` has finished (`cuStreamQuery`; not-ready is an answer, not a
/// failure).
fn stream_is_idle(s: CudaStreamView) -> bool {
    // SAFETY: s names a live stream of the current context.
    match unsafe { sys::cuStreamQuery(s.as_raw()) } {
        sys::CUresult::CUDA_SUCCESS => true,
        sys::CUresult::CUDA_ERROR_NOT_READY => false,
        other => panic!("cuStreamQuery: {other:?}"),
    }
}

/// Queues about 0.1 s of writes to `bytes` at `p` on `s`.
fn keep_busy(p: *mut u8, bytes: usize, s: CudaStreamView) {
    for i in 0..(100 * (1 << 30) / bytes).max(1) {
        fill_async(p, bytes, i as u8, s);
    }
}

#[test]
fn release_waits_for_the_pools_device_whatever_context_is_current() {
    if !gpu() {
        return;
    }
    rmm::device::set_current_device(DeviceId(0)).unwrap();
    let other = push_second_context();
    // Made and released while the second context is current: the pool must still wait for the
    // work of its device's own context, where the stream below runs.
    let Some(pool) = pool(8 << 30, 1 << 30, &VirtualMemoryOptions::default()) else {
        pop_context(other);
        return;
    };
    pool.release().unwrap();
    pop_context(other);
    let stream = CudaStream::new().unwrap();
    let s = stream.view();
    let p = pool.allocate(1 << 30, 256, s).unwrap();
    keep_busy(p, 1 << 30, s);
    pool.deallocate(p, 1 << 30, 256, s).unwrap();
    push_context(other);
    assert!(pool.release().unwrap() >= 1 << 30, "the freed block is unmapped");
    pop_context(other);
    assert!(stream_is_idle(s), "the memory was unmapped while work on it was still queued");
    drop(pool);
    // SAFETY: nothing made in `other` is left.
    cu(unsafe { sys::cuCtxDestroy_v2(other) }, "cuCtxDestroy");
}

#[test]
fn an_event_order_waits_for_the_context_of_every_stream_it_saw() {
    if !gpu() {
        return;
    }
    use rmm::pool::{StreamIdentity, StreamKey, StreamOrder};
    use rmm::resource::{CudaEventOrder, CudaMemoryResource};
    rmm::device::set_current_device(DeviceId(0)).unwrap();
    let order = CudaEventOrder::new();
    // The order's first synchronisation happens with the second context current.
    let other = push_second_context();
    order.synchronize_all().unwrap();
    pop_context(other);
    // A stream of the device's primary context, seen by the order, with work queued.
    let stream = CudaStream::new().unwrap();
    let s = stream.view();
    let cuda = CudaMemoryResource::new();
    let p = cuda.allocate(1 << 30, 256, s).unwrap();
    keep_busy(p, 1 << 30, s);
    order.identity(StreamKey::of_handle(s.handle()), StreamIdentity::Unknown);
    push_context(other);
    order.synchronize_all().unwrap();
    pop_context(other);
    assert!(stream_is_idle(s), "the synchronisation missed the stream's context");
    cuda.deallocate(p, 1 << 30, 256, s).unwrap();
    // SAFETY: nothing made in `other` is left.
    cu(unsafe { sys::cuCtxDestroy_v2(other) }, "cuCtxDestroy");
}
