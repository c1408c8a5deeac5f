//! Under a maximum pool size the pool grows as RMM 26.10's does: by the larger of the request and
//! half the room left, halving toward the request while the upstream refuses. Host memory only.

use rmm::adaptor::LimitingResourceAdaptor;
use rmm::pool::{StreamIdentity, StreamKey, StreamOrder};
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, Error, MemoryResource, Result};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

const S: CudaStreamView = CudaStreamView::DEFAULT;

fn limited(limit: usize) -> LimitingResourceAdaptor<HostMemoryResource> {
    LimitingResourceAdaptor::new(HostMemoryResource::new(), limit)
}

#[test]
fn a_capped_pool_over_a_limited_upstream_fails_and_fits_where_rmm_does() {
    let pool = PoolMemoryResource::new(limited(6000), 0, Some(8192)).unwrap();
    let a = pool.allocate(1000, 256, S).unwrap();
    // Half the room (4096) was taken, not just the request.
    assert_eq!(pool.pool_size(), 4096);
    // 4096 more would pass the upstream's 6000 bytes, and the request itself is 4096.
    let e = pool.allocate(4000, 256, S).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    assert_eq!(pool.pool_size(), 4096);
    // The first chunk still holds 3072 free bytes.
    let b = pool.allocate(2000, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 4096);
    pool.deallocate(b, 2000, 256, S).unwrap();
    pool.deallocate(a, 1000, 256, S).unwrap();
}

#[test]
fn the_size_halves_toward_the_request_while_the_upstream_refuses() {
    // Room 1 MiB: RMM asks for 512 KiB, then 256 KiB, then 128 KiB, which the upstream grants.
    let pool = PoolMemoryResource::new(limited(200 << 10), 0, Some(1 << 20)).unwrap();
    let p = pool.allocate(1000, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 128 << 10);
    // Room 896 KiB: 448 KiB, 224 KiB are refused; the request (40 KiB) cannot be halved below.
    let q = pool.allocate(40 << 10, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 128 << 10, "served from the first chunk");
    let e = pool.allocate(100 << 10, 256, S).unwrap_err();
    assert!(e.is_out_of_memory(), "{e}");
    pool.deallocate(q, 40 << 10, 256, S).unwrap();
    pool.deallocate(p, 1000, 256, S).unwrap();
}

#[test]
fn a_request_above_the_room_left_is_out_of_memory_without_asking_the_upstream() {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 0, Some(4096)).unwrap();
    let p = pool.allocate(300, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 2048, "the larger of 512 and half of 4096");
    let e = pool.allocate(3000, 256, S).unwrap_err();
    assert!(e.is_out_of_memory(), "{e}");
    assert_eq!(pool.upstream().outstanding(), (1, 2048));
    pool.deallocate(p, 300, 256, S).unwrap();
}

#[test]
fn without_a_maximum_the_pool_keeps_its_own_rule() {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 0, None).unwrap();
    let p = pool.allocate(1000, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 1024, "the request alone, from an empty pool");
    pool.deallocate(p, 1000, 256, S).unwrap();
}

#[test]
fn without_a_maximum_the_size_halves_without_rounding_as_in_rmm() {
    // RMM 26.10 over a 6000-byte limit: 1024, then 4096; for 500 bytes it asks 5120, 2560, 1280
    // (refused) and 640, a chunk of 640 bytes whose last 128 are never handed out.
    let pool = PoolMemoryResource::new(limited(6000), 0, None).unwrap();
    let a = pool.allocate(1000, 256, S).unwrap();
    let b = pool.allocate(4000, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 5120);
    let c = pool.allocate(500, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 5760);
    assert_eq!(pool.upstream().allocated_bytes(), 5888, "the limit counts 640 as 768, as RMM's does");
    for (p, n) in [(c, 500), (b, 4000), (a, 1000)] {
        pool.deallocate(p, n, 256, S).unwrap();
    }
    let st = pool.state();
    assert_eq!((st.pool_size, st.free_bytes), (5760, 5760));
    pool.check_invariants().unwrap();
}

#[test]
fn size_arguments_are_checked_as_rmm_checks_them() {
    let make = |initial, max| PoolMemoryResource::new(HostMemoryResource::new(), initial, max).err().unwrap();
    assert!(matches!(make(1000, None), Error::InvalidArgument(_)));
    assert!(matches!(make(0, Some(1000)), Error::InvalidArgument(_)));
    assert!(matches!(make(2048, Some(1024)), Error::InvalidArgument(_)));
    // More than any pool can hold: RMM asks the upstream, which refuses: out of memory.
    let huge = (u32::MAX as usize + 1) << 8;
    assert!(make(huge, None).is_out_of_memory(), "{}", make(huge, None));
}

// The scenarios below are RMM 26.10's own outcomes, recorded on a GPU with a CUDA upstream; the
// numbers do not depend on the upstream.

const MIB: usize = 1 << 20;

#[test]
fn half_the_room_is_not_rounded_down_to_256_bytes() {
    // Room 1 MiB - 256: RMM grows by half of it, 524160 bytes, not a multiple of 256.
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 256, Some(MIB)).unwrap();
    assert_eq!(pool.pool_size(), 256);
    let a = pool.allocate(1000, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 524416);
    let e = pool.allocate(2 * MIB, 256, S).unwrap_err();
    assert!(
        e.to_string().contains(
            "Maximum pool size exceeded (failed to allocate 2.000000 MiB): Not enough room to grow, \
             current/max/try size = 512.125000 KiB, 1024.000000 KiB, 2.000000 MiB"
        ),
        "{e}"
    );
    assert_eq!(pool.pool_size(), 524416);
    pool.check_invariants().unwrap();
    pool.deallocate(a, 1000, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 524416);
    assert_eq!(pool.upstream().outstanding(), (2, 524416));
    // The chunk's last 128 bytes are never handed out; with nothing live every byte is free.
    let st = pool.state();
    assert_eq!((st.pool_size, st.free_bytes), (524416, 524416));
}

#[test]
fn the_room_is_rounded_up_to_256_bytes_as_rmm_rounds_it() {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 256, Some(4 * MIB)).unwrap();
    let a = pool.allocate(1000, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 2097280);
    // 2097024 bytes are left below the maximum, 2 MiB once rounded up: RMM takes 2 MiB.
    let b = pool.allocate(2 * MIB, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 4194432);
    pool.check_invariants().unwrap();
    // Every byte handed out is usable.
    // SAFETY: `b` is a live block of 2 MiB the pool carved from host memory of HostMemoryResource,
    // not yet freed.
    unsafe { std::ptr::write_bytes(b, 0xab, 2 * MIB) };
    pool.deallocate(b, 2 * MIB, 256, S).unwrap();
    pool.deallocate(a, 1000, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 4194432);
}

#[test]
fn an_empty_capped_pool_takes_half_the_maximum() {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), 0, Some(MIB)).unwrap();
    let a = pool.allocate(1000, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 524288);
    assert!(pool.allocate(2 * MIB, 256, S).unwrap_err().is_out_of_memory());
    assert_eq!(pool.pool_size(), 524288);
    pool.deallocate(a, 1000, 256, S).unwrap();
}

#[test]
fn wholly_free_chunks_go_back_before_a_request_above_the_room_left() {
    // A pool of 1 MiB (of 2 MiB at most) over another pool of 4 MiB: 1500 KiB does not fit in
    // the 1 MiB left, so RMM gives the free initial chunk back, then grows by 1500 KiB.
    let outer = PoolMemoryResource::new(HostMemoryResource::new(), 4 * MIB, None).unwrap();
    let inner = PoolMemoryResource::new(outer, MIB, Some(2 * MIB)).unwrap();
    assert_eq!(inner.pool_size(), MIB);
    let a = inner.allocate(1500 << 10, 256, S).unwrap();
    assert_eq!(inner.pool_size(), 1536000);
    assert_eq!(inner.upstream().state().free_bytes, 4 * MIB - 1536000, "the 1 MiB chunk went back");
    inner.check_invariants().unwrap();
    let e = inner.allocate(1500 << 10, 256, S).unwrap_err();
    assert!(e.to_string().contains("current/max/try size = 1.464844 MiB, 2.000000 MiB, 1.464844 MiB"), "{e}");
    assert_eq!(inner.pool_size(), 1536000);
    inner.deallocate(a, 1500 << 10, 256, S).unwrap();
    inner.check_invariants().unwrap();
}

#[test]
fn a_chunk_holding_a_live_block_is_not_given_back() {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), MIB, Some(2 * MIB)).unwrap();
    let a = pool.allocate(1000, 256, S).unwrap();
    assert!(pool.allocate(1500 << 10, 256, S).unwrap_err().is_out_of_memory());
    assert_eq!(pool.pool_size(), MIB);
    assert_eq!(pool.upstream().outstanding(), (1, MIB));
    // SAFETY: `a` is a live block of 1000 bytes the pool carved from host memory of
    // HostMemoryResource.
    unsafe { std::ptr::write_bytes(a, 1, 1000) };
    pool.deallocate(a, 1000, 256, S).unwrap();
    // Now the chunk is wholly free: it goes back and 1500 KiB fits.
    let b = pool.allocate(1500 << 10, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 1536000);
    assert_eq!(pool.upstream().outstanding(), (1, 1536000));
    pool.check_invariants().unwrap();
    pool.deallocate(b, 1500 << 10, 256, S).unwrap();
}

#[test]
fn after_a_chunk_goes_back_the_pool_grows_by_rmms_rule() {
    let pool = PoolMemoryResource::new(HostMemoryResource::new(), MIB, Some(4 * MIB)).unwrap();
    let a = pool.allocate(MIB, 256, S).unwrap();
    let b = pool.allocate(1000, 256, S).unwrap();
    // Room 3 MiB: half of it.
    assert_eq!(pool.pool_size(), MIB + 3 * MIB / 2);
    pool.deallocate(a, MIB, 256, S).unwrap();
    // 2 MiB does not fit in the 1.5 MiB left: the initial chunk, the only wholly free one, goes
    // back, and the pool grows by the larger of 2 MiB and half of the 2.5 MiB now left.
    let c = pool.allocate(2 * MIB, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 3 * MIB / 2 + 2 * MIB);
    assert_eq!(pool.upstream().outstanding(), (2, 3 * MIB / 2 + 2 * MIB));
    pool.check_invariants().unwrap();
    pool.deallocate(c, 2 * MIB, 256, S).unwrap();
    pool.deallocate(b, 1000, 256, S).unwrap();
}

/// A stream order that counts full synchronisations.
#[derive(Clone, Default)]
struct CountingOrder(Arc<AtomicUsize>);

impl StreamOrder for CountingOrder {
    fn record(&self, _owner: StreamKey, _identity: StreamIdentity) -> Result<()> {
        Ok(())
    }
    fn wait(&self, _owner: StreamKey, _identity: StreamIdentity, _waiter: StreamKey) -> Result<()> {
        Ok(())
    }
    fn synchronize_all(&self) -> Result<()> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Host memory that notes whether a chunk came back while no synchronisation had run since the
/// last allocation.
struct SyncCheckingHost {
    inner: HostMemoryResource,
    syncs: Arc<AtomicUsize>,
    syncs_at_last_allocation: AtomicUsize,
    freed_unsynchronised: AtomicBool,
}

// SAFETY: blocks come from a `HostMemoryResource` unchanged and go back to it; host memory, as
// the answer below says.
unsafe impl MemoryResource for SyncCheckingHost {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        self.syncs_at_last_allocation.store(self.syncs.load(Ordering::SeqCst), Ordering::SeqCst);
        self.inner.allocate(bytes, alignment, stream)
    }
    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if self.syncs.load(Ordering::SeqCst) == self.syncs_at_last_allocation.load(Ordering::SeqCst) {
            self.freed_unsynchronised.store(true, Ordering::SeqCst);
        }
        self.inner.deallocate(ptr, bytes, alignment, stream)
    }
    fn is_device_accessible(&self) -> bool {
        false
    }
}

#[test]
fn blocks_freed_on_streams_go_back_only_after_every_stream_is_synchronised() {
    let order = CountingOrder::default();
    let upstream = SyncCheckingHost {
        inner: HostMemoryResource::new(),
        syncs: order.0.clone(),
        syncs_at_last_allocation: AtomicUsize::new(0),
        freed_unsynchronised: AtomicBool::new(false),
    };
    // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
    let pool =
        unsafe { PoolMemoryResource::with_stream_order(upstream, 0, Some(4 * MIB), Box::new(order.clone())) }.unwrap();
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let (s1, s2) = (unsafe { CudaStreamView::from_handle(0x1000) }, unsafe { CudaStreamView::from_handle(0x2000) });
    // The first chunk, 2 MiB, wholly used on s1 then freed there: work queued on s1 may still use it.
    let a = pool.allocate(2 * MIB, 256, s1).unwrap();
    pool.deallocate(a, 2 * MIB, 256, s1).unwrap();
    let before = order.0.load(Ordering::SeqCst);
    // 3 MiB on s2 does not fit in the 2 MiB left: the chunk goes back, after a synchronisation.
    let b = pool.allocate(3 * MIB, 256, s2).unwrap();
    assert!(order.0.load(Ordering::SeqCst) > before, "every stream was synchronised");
    assert!(!pool.upstream().freed_unsynchronised.load(Ordering::SeqCst));
    assert_eq!(pool.pool_size(), 3 * MIB);
    assert_eq!(pool.upstream().inner.outstanding(), (1, 3 * MIB));
    pool.check_invariants().unwrap();
    pool.deallocate(b, 3 * MIB, 256, s2).unwrap();
}

#[test]
fn chunks_spread_over_shards_go_back_only_when_wholly_free() {
    let order = CountingOrder::default();
    let pool =
        // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
        unsafe { PoolMemoryResource::with_shards(HostMemoryResource::new(), 4 * MIB, Some(8 * MIB), Box::new(order), 4) }.unwrap();
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let streams: Vec<_> = (1..=3).map(|i| unsafe { CudaStreamView::from_handle(0x1000 * i) }).collect();
    streams.iter().for_each(|&s| pool.spread_stream(s));
    // One chunk of 4 MiB, taken in ranges by the streams' own shards.
    let first = pool.allocate(1000, 256, streams[0]).unwrap();
    let taken: Vec<_> = streams[1..].iter().map(|&s| (pool.allocate(1 << 10, 256, s).unwrap(), s)).collect();
    pool.check_invariants().unwrap();
    assert_eq!(pool.pool_size(), 4 * MIB);
    // A live block anywhere in the chunk keeps it.
    assert!(pool.allocate(5 * MIB, 256, streams[0]).unwrap_err().is_out_of_memory());
    assert_eq!(pool.upstream().outstanding(), (1, 4 * MIB));
    pool.check_invariants().unwrap();
    pool.deallocate(first, 1000, 256, streams[0]).unwrap();
    for &(p, s) in &taken {
        pool.deallocate(p, 1 << 10, 256, s).unwrap();
    }
    // Wholly free, though in ranges of several shards: it goes back, and 5 MiB fits.
    let big = pool.allocate(5 * MIB, 256, streams[0]).unwrap();
    assert_eq!(pool.pool_size(), 5 * MIB);
    assert_eq!(pool.upstream().outstanding(), (1, 5 * MIB));
    pool.check_invariants().unwrap();
    pool.deallocate(big, 5 * MIB, 256, streams[0]).unwrap();
}

#[test]
fn without_a_synchronisation_no_chunk_goes_back() {
    struct NoSync;
    impl StreamOrder for NoSync {
        fn record(&self, _owner: StreamKey, _identity: StreamIdentity) -> Result<()> {
            Ok(())
        }
        fn wait(&self, _owner: StreamKey, _identity: StreamIdentity, _waiter: StreamKey) -> Result<()> {
            Ok(())
        }
        fn synchronize_all(&self) -> Result<()> {
            Err(Error::NoDriver("test".into()))
        }
    }
    let pool =
        // SAFETY: the upstream's memory is host memory that no device work touches, so this order is right for it.
        unsafe { PoolMemoryResource::with_stream_order(HostMemoryResource::new(), MIB, Some(2 * MIB), Box::new(NoSync)) }.unwrap();
    let a = pool.allocate(MIB, 256, S).unwrap();
    pool.deallocate(a, MIB, 256, S).unwrap();
    // The free chunk may still be in use by queued work: it stays, and the request fails.
    assert!(pool.allocate(1500 << 10, 256, S).unwrap_err().is_out_of_memory());
    assert_eq!(pool.upstream().outstanding(), (1, MIB));
    pool.check_invariants().unwrap();
}
