//! The virtual-memory pool over the host stand-in: growth, release and regrowth, exhaustion and
//! failures of the physical side, and random runs against a model.

use super::*;
use rmm_algorithms::{HostMappings, HostOrder, HostPhysicalMemory, StreamIdentity, StreamKey};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

const MIB: usize = 1 << 20;
const G: usize = 2 * MIB;
const BASE: usize = 1 << 40;

type Pool = VirtualPoolMemoryResource<HostPhysicalMemory>;

/// Orders streams as device memory needs (every hand-over recorded and waited for), counting the
/// synchronisations; the host has nothing to wait for.
#[derive(Clone, Default)]
struct CountingOrder(Arc<AtomicUsize>);

impl StreamOrder for CountingOrder {
    fn record(&self, _: StreamKey, _: StreamIdentity) -> Result<()> {
        Ok(())
    }
    fn wait(&self, _: StreamKey, _: StreamIdentity, _: StreamKey) -> Result<()> {
        Ok(())
    }
    fn synchronize_all(&self) -> Result<()> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

fn pool_with(capacity: usize, initial: usize, order: Box<dyn StreamOrder>, shards: usize) -> (Pool, HostMappings) {
    let phys = HostPhysicalMemory::new(BASE, capacity, G);
    let view = phys.mappings();
    // SAFETY: no test reads or writes the blocks of the stand-in.
    let pool = unsafe { Pool::with_physical(phys, initial, order, shards) }.unwrap();
    (pool, view)
}

fn host_pool(capacity: usize, initial: usize) -> (Pool, HostMappings) {
    pool_with(capacity, initial, Box::new(HostOrder), 1)
}

const S: CudaStreamView = CudaStreamView::DEFAULT;

fn alloc(p: &Pool, bytes: usize) -> usize {
    p.allocate(bytes, 256, S).unwrap() as usize
}

fn free(p: &Pool, addr: usize, bytes: usize) {
    p.deallocate(addr as *mut u8, bytes, 256, S).unwrap();
}

#[test]
fn growth_joins_the_free_tail_so_a_block_larger_than_the_growth_fits() {
    let (p, view) = host_pool(64 * MIB, 4 * MIB);
    let a = alloc(&p, MIB);
    assert_eq!(a, BASE);
    // 3 MiB free at the end; 6 MiB need one more granule of 2, not 6 MiB of new memory.
    let b = alloc(&p, 6 * MIB);
    assert_eq!(b, BASE + MIB, "the block spans the old tail and the new granules");
    assert_eq!(p.mapped_bytes(), 8 * MIB);
    assert_eq!(view.mapped_bytes(), 8 * MIB);
    assert_eq!(view.maps(), 2, "the initial map and one growth of 4 MiB");
    assert!(view.is_mapped(b, 6 * MIB));
    p.check_invariants().unwrap();
    free(&p, b, 6 * MIB);
    free(&p, a, MIB);
    assert_eq!(p.state().largest_free_block, 8 * MIB, "one chunk, one free block");
}

#[test]
fn growth_on_a_stream_joins_its_own_free_tail() {
    let order = CountingOrder::default();
    let (p, view) = pool_with(64 * MIB, 0, Box::new(order), 1);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let s = unsafe { CudaStreamView::from_handle(0x1000) };
    let a = p.allocate(3 * MIB, 256, s).unwrap() as usize;
    p.deallocate(a as *mut u8, 3 * MIB, 256, s).unwrap();
    // The stream's own 4 MiB are free at the end: 7 MiB need 4 more, joined to them.
    let b = p.allocate(7 * MIB, 256, s).unwrap() as usize;
    assert_eq!(b, BASE);
    assert_eq!(p.mapped_bytes(), 8 * MIB);
    assert!(view.is_mapped(b, 7 * MIB));
    p.check_invariants().unwrap();
}

#[test]
fn release_unmaps_only_whole_free_granules_and_keeps_addresses() {
    let (p, view) = host_pool(64 * MIB, 16 * MIB);
    let a = alloc(&p, MIB); // [0, 1)
    let b = alloc(&p, 4 * MIB); // [1, 5)
    let c = alloc(&p, MIB); // [5, 6)
    free(&p, b, 4 * MIB);
    // Free: [1, 5) holds one whole granule [2, 4); [6, 16) five.
    assert_eq!(p.release().unwrap(), 12 * MIB);
    assert_eq!(p.mapped_runs(), vec![(BASE, 2 * MIB), (BASE + 4 * MIB, 2 * MIB)]);
    assert_eq!(view.mapped_bytes(), 4 * MIB);
    assert_eq!(p.pool_size(), 4 * MIB);
    assert!(view.is_mapped(a, MIB) && view.is_mapped(c, MIB));
    assert_eq!(p.reserved_bytes(), 64 * MIB);
    p.check_invariants().unwrap();
    // Nothing whole is left to give back.
    assert_eq!(p.release().unwrap(), 0);
    // The free pieces of the cut granules still serve.
    let d = alloc(&p, MIB);
    assert!(d == BASE + MIB || d == BASE + 4 * MIB, "{d:#x}");
    assert_eq!(p.mapped_bytes(), 4 * MIB);
    p.check_invariants().unwrap();
}

#[test]
fn release_above_keeps_what_is_asked() {
    let (p, view) = host_pool(64 * MIB, 16 * MIB);
    assert_eq!(p.release_above(10 * MIB).unwrap(), 6 * MIB);
    assert_eq!(p.mapped_bytes(), 10 * MIB);
    assert_eq!(view.mapped_bytes(), 10 * MIB);
    // Lowest addresses go first.
    assert_eq!(p.mapped_runs(), vec![(BASE + 6 * MIB, 10 * MIB)]);
    // A keep below a granule's worth of the excess releases nothing.
    assert_eq!(p.release_above(9 * MIB).unwrap(), 0);
    p.check_invariants().unwrap();
}

#[test]
fn regrowth_maps_the_holes_again_and_the_same_addresses_come_back() {
    let (p, view) = host_pool(64 * MIB, 12 * MIB);
    let x = alloc(&p, 4 * MIB);
    let y = alloc(&p, 4 * MIB);
    let z = alloc(&p, 4 * MIB);
    free(&p, x, 4 * MIB);
    free(&p, z, 4 * MIB);
    assert_eq!(p.release().unwrap(), 8 * MIB);
    assert_eq!(p.mapped_runs(), vec![(y, 4 * MIB)]);
    // The hole below y first, then the end after it: x's and z's addresses again.
    assert_eq!(alloc(&p, 4 * MIB), x);
    assert_eq!(alloc(&p, 4 * MIB), z);
    assert!(view.is_mapped(BASE, 12 * MIB));
    p.check_invariants().unwrap();
}

#[test]
fn a_hole_is_mapped_again_where_it_and_the_free_block_before_it_fit() {
    let (p, view) = host_pool(64 * MIB, 0);
    let a = alloc(&p, MIB);
    let b = alloc(&p, 9 * MIB);
    let c = alloc(&p, MIB);
    assert_eq!((a, b, c), (BASE, BASE + MIB, BASE + 10 * MIB));
    free(&p, b, 9 * MIB);
    // [1, 2) MiB stays free and mapped, [2, 10) goes.
    assert_eq!(p.release().unwrap(), 8 * MIB);
    assert_eq!(p.mapped_runs(), vec![(BASE, 2 * MIB), (BASE + 10 * MIB, 2 * MIB)]);
    // 9 MiB: the hole of 8 joined to the free MiB before it, not new memory at the end.
    assert_eq!(alloc(&p, 9 * MIB), b);
    assert_eq!(p.mapped_bytes(), 12 * MIB);
    assert!(view.is_mapped(b, 9 * MIB));
    p.check_invariants().unwrap();
}

#[test]
fn a_pattern_replayed_after_a_full_release_gets_the_same_addresses() {
    let (p, _) = host_pool(256 * MIB, 0);
    let sizes = [3 * MIB, 700_000, 12 * MIB, 256, 5 * MIB + 3, 40 * MIB];
    let first: Vec<usize> = sizes.iter().map(|&n| alloc(&p, n)).collect();
    for (&a, &n) in first.iter().zip(&sizes) {
        free(&p, a, n);
    }
    let mapped = p.mapped_bytes();
    assert_eq!(p.release().unwrap(), mapped);
    assert_eq!(p.mapped_bytes(), 0);
    let again: Vec<usize> = sizes.iter().map(|&n| alloc(&p, n)).collect();
    assert_eq!(again, first);
    assert_eq!(p.mapped_bytes(), mapped);
    p.check_invariants().unwrap();
}

#[test]
fn release_synchronises_and_takes_blocks_freed_on_streams() {
    let order = CountingOrder::default();
    let syncs = Arc::clone(&order.0);
    let (p, _) = pool_with(64 * MIB, 8 * MIB, Box::new(order), 4);
    // SAFETY: a stream name for resources over host memory: no driver call sees it.
    let s = unsafe { CudaStreamView::from_handle(0x1000) };
    let a = p.allocate(8 * MIB, 256, s).unwrap();
    p.deallocate(a, 8 * MIB, 256, s).unwrap();
    let before = syncs.load(Ordering::Relaxed);
    // The block is the stream's until a synchronisation: release makes one, then unmaps it.
    assert_eq!(p.release().unwrap(), 8 * MIB);
    assert_eq!(syncs.load(Ordering::Relaxed), before + 1);
    assert_eq!(p.mapped_bytes(), 0);
    p.check_invariants().unwrap();
    assert_eq!(p.allocate(8 * MIB, 256, s).unwrap(), a, "mapped again at the same address");
}

#[test]
fn an_exhausted_reservation_is_named_and_the_pool_stays_usable() {
    let (p, view) = host_pool(16 * MIB, 0);
    let a = alloc(&p, 12 * MIB);
    let e = p.allocate(8 * MIB, 256, S).unwrap_err();
    assert!(e.is_out_of_memory(), "{e}");
    assert!(e.to_string().contains("reserved virtual address range is exhausted"), "{e}");
    p.check_invariants().unwrap();
    assert_eq!(view.mapped_bytes(), 12 * MIB);
    let b = alloc(&p, 4 * MIB);
    free(&p, a, 12 * MIB);
    free(&p, b, 4 * MIB);
    assert_eq!(alloc(&p, 16 * MIB), BASE, "the whole reservation is one block");
    p.check_invariants().unwrap();
}

#[test]
fn a_failed_map_or_unmap_leaves_the_pool_consistent() {
    let (p, view) = host_pool(64 * MIB, 2 * MIB);
    let a = alloc(&p, 2 * MIB);
    view.fail_next_map_after(1);
    assert!(p.allocate(6 * MIB, 256, S).is_err());
    assert_eq!(view.mapped_bytes(), 2 * MIB, "the granule mapped before the failure was unmapped");
    p.check_invariants().unwrap();
    let b = alloc(&p, 6 * MIB);
    free(&p, a, 2 * MIB);
    free(&p, b, 6 * MIB);
    view.fail_next_unmap_after(2);
    assert!(p.release().is_err());
    assert_eq!(view.mapped_bytes(), 4 * MIB, "two granules went, the rest stayed in the pool");
    p.check_invariants().unwrap();
    assert_eq!(p.release().unwrap(), 4 * MIB);
    p.check_invariants().unwrap();
}

#[test]
fn bad_reservations_are_refused() {
    let phys = HostPhysicalMemory::new(BASE, 8 * MIB, G);
    // SAFETY: no block is touched.
    let e = unsafe { Pool::with_physical(phys, 10 * MIB, Box::new(HostOrder), 1) }.err().unwrap();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let phys = HostPhysicalMemory::new(BASE, 8 * MIB, 3 * MIB);
    // SAFETY: as above.
    assert!(unsafe { Pool::with_physical(phys, 0, Box::new(HostOrder), 1) }.is_err());
}

/// Random allocations on a few streams, frees, releases above random sizes, and maps and unmaps
/// that fail part-way now and then: every block handed out lies in mapped memory (the stand-in's
/// record), overlaps no live block, and stays mapped until freed; the pool holds exactly what is
/// mapped after every step, failed or not.
#[test]
fn random_runs_keep_every_live_block_mapped_and_apart() {
    for seed in 1..=12 {
        let mut rng = rmm_algorithms::testing::SplitMix64::new(seed);
        let shards = [1, 4][seed as usize % 2];
        let order: Box<dyn StreamOrder> =
            if seed % 3 == 0 { Box::new(HostOrder) } else { Box::new(CountingOrder::default()) };
        let (p, view) = pool_with(128 * MIB, (seed as usize % 3) * G, order, shards);
        // SAFETY: a stream name for resources over host memory: no driver call sees it.
        let streams: Vec<CudaStreamView> =
            (1..=3).map(|i| unsafe { CudaStreamView::from_handle(0x1000 * i) }).collect();
        let mut live: BTreeMap<usize, (usize, CudaStreamView)> = BTreeMap::new();
        let (mut released, mut refused) = (0, 0);
        for step in 0..1500 {
            let ctx = || format!("seed {seed} step {step}");
            match rng.below(12) {
                0..=5 => {
                    let bytes = rng.log_uniform(1, 6 * MIB);
                    if rng.below(16) == 0 {
                        view.fail_next_map_after(rng.below(3));
                    }
                    let s = streams[rng.below(streams.len())];
                    match p.allocate(bytes, 256, s) {
                        Ok(ptr) => {
                            let a = ptr as usize;
                            assert!(view.is_mapped(a, bytes), "{}: {a:#x}+{bytes} not mapped", ctx());
                            if let Some((&b, &(n, _))) = live.range(..a + bytes).next_back() {
                                assert!(b + n <= a, "{}: {a:#x}+{bytes} overlaps {b:#x}+{n}", ctx());
                            }
                            live.insert(a, (bytes, s));
                        }
                        Err(e) => {
                            assert!(e.is_out_of_memory(), "{}: {e}", ctx());
                            refused += 1;
                        }
                    }
                }
                6..=9 if !live.is_empty() => {
                    let k = *live.keys().nth(rng.below(live.len())).unwrap();
                    let (n, s) = live.remove(&k).unwrap();
                    // Freed on its own stream or another one.
                    let s = if rng.below(4) == 0 { streams[rng.below(streams.len())] } else { s };
                    p.deallocate(k as *mut u8, n, 256, s).unwrap();
                }
                10 => {
                    let keep = rng.below(64 * MIB);
                    // Now and then the physical side fails part-way.
                    if rng.below(4) == 0 {
                        view.fail_next_unmap_after(rng.below(3));
                    }
                    match p.release_above(keep) {
                        Ok(n) => released += n,
                        Err(e) => assert!(e.to_string().contains("told to fail"), "{}: {e}", ctx()),
                    }
                    for (&a, &(n, _)) in &live {
                        assert!(view.is_mapped(a, n), "{}: live {a:#x}+{n} unmapped by a release", ctx());
                    }
                }
                _ => {}
            }
            p.check_invariants().unwrap_or_else(|e| panic!("{}: {e}", ctx()));
            assert_eq!(view.mapped_bytes(), p.mapped_bytes(), "{}", ctx());
        }
        assert!(released > 0, "seed {seed}: nothing was ever released ({refused} refusals)");
        for (a, (n, s)) in live {
            p.deallocate(a as *mut u8, n, 256, s).unwrap();
        }
        view.clear_failures();
        p.release().unwrap();
        assert_eq!(p.mapped_bytes(), 0, "seed {seed}: everything free goes back");
    }
}
