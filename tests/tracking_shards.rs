//! The tracking adaptor's map, split into shards by address region, under threads: exact counts
//! and records at every quiescent point while threads free each other's blocks, a free of an
//! address the adaptor does not hold refused from any thread (next to live blocks of the same
//! shard included), and an address handed out twice by the upstream caught, however far apart
//! in the address space (addresses that share a shard) and from whichever thread.

use rmm::adaptor::TrackingResourceAdaptor;
use rmm::resource::{HostMemoryResource, PoolMemoryResource};
use rmm::testing::SplitMix64;
use rmm::{CudaStreamView, Error, MemoryResource, Result};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};

const S: CudaStreamView = CudaStreamView::DEFAULT;
const THREADS: usize = 4;

/// Checks the adaptor against the blocks the threads hold: count, bytes and every record.
fn check<U: MemoryResource>(t: &TrackingResourceAdaptor<U>, held: &[Mutex<Vec<(usize, usize)>>], when: &str) {
    let model: BTreeMap<usize, usize> = held.iter().flat_map(|h| h.lock().unwrap().clone()).collect();
    assert_eq!(t.allocation_count(), model.len(), "{when}: count");
    assert_eq!(t.allocated_bytes(), model.values().sum::<usize>(), "{when}: bytes");
    let records = t.outstanding_allocations();
    assert!(records.iter().all(|r| r.stack.is_some() == t.captures_stacks()), "{when}: stacks");
    let records: BTreeMap<usize, usize> = records.iter().map(|r| (r.ptr, r.bytes)).collect();
    assert_eq!(records, model, "{when}: records");
}

/// Rounds of: every thread allocates blocks of 8 B to 2 MiB on its own stream (a pool hands each
/// its own regions); check; every thread frees half of the next thread's blocks, so frees land
/// in shards another thread filled; check.
fn threads_free_each_others_blocks<U: MemoryResource + Sync>(t: &TrackingResourceAdaptor<U>) {
    let held: Vec<Mutex<Vec<(usize, usize)>>> = (0..THREADS).map(|_| Mutex::new(Vec::new())).collect();
    let barrier = Barrier::new(THREADS + 1);
    std::thread::scope(|s| {
        for i in 0..THREADS {
            let (held, barrier) = (&held, &barrier);
            s.spawn(move || {
                // SAFETY: host memory only: no driver call sees the handle.
                let stream = unsafe { CudaStreamView::from_handle(0x1000 * (i + 1)) };
                let mut rng = SplitMix64::new(i as u64 + 1);
                for _ in 0..6 {
                    for _ in 0..300 {
                        let bytes = 8usize << (rng.next_u64() % 19);
                        let p = t.allocate(bytes, 256, stream).unwrap();
                        held[i].lock().unwrap().push((p as usize, bytes));
                    }
                    barrier.wait();
                    barrier.wait();
                    let mut theirs = std::mem::take(&mut *held[(i + 1) % THREADS].lock().unwrap());
                    let keep = theirs.split_off(theirs.len() / 2);
                    for (p, bytes) in theirs {
                        t.deallocate(p as *mut u8, bytes, 256, stream).unwrap();
                    }
                    // Given back to the thread whose blocks they are, after this phase.
                    barrier.wait();
                    held[(i + 1) % THREADS].lock().unwrap().extend(keep);
                    barrier.wait();
                    barrier.wait();
                }
            });
        }
        for round in 0..6 {
            barrier.wait();
            check(t, &held, &format!("round {round}, after allocating"));
            barrier.wait();
            barrier.wait();
            barrier.wait();
            check(t, &held, &format!("round {round}, after freeing"));
            barrier.wait();
        }
    });
    for h in &held {
        for (p, bytes) in std::mem::take(&mut *h.lock().unwrap()) {
            t.deallocate(p as *mut u8, bytes, 256, S).unwrap();
        }
    }
    assert_eq!((t.allocation_count(), t.allocated_bytes()), (0, 0));
}

#[test]
fn threads_freeing_each_others_blocks_leave_exact_counts_over_a_pool() {
    let t = TrackingResourceAdaptor::new(PoolMemoryResource::new(HostMemoryResource::new(), 0, None).unwrap(), false);
    threads_free_each_others_blocks(&t);
}

#[test]
fn threads_freeing_each_others_blocks_leave_exact_counts_over_the_host_heap() {
    let t = TrackingResourceAdaptor::new(HostMemoryResource::new(), true);
    threads_free_each_others_blocks(&t);
    assert!(t.outstanding_allocations().is_empty());
}

/// Frees of addresses the adaptor does not hold, from several threads at once: inside a live
/// block (its shard holds a block, not this address), and of a block another resource handed
/// out. Each is refused by the upstream and leaves the adaptor exactly as it was.
#[test]
fn a_free_of_an_address_not_held_is_detected_from_any_thread() {
    let t = TrackingResourceAdaptor::new(HostMemoryResource::new(), false);
    let other = HostMemoryResource::new();
    let blocks: Vec<usize> = (0..THREADS).map(|_| t.allocate(4096, 256, S).unwrap() as usize).collect();
    std::thread::scope(|s| {
        for &b in &blocks {
            let (t, other) = (&t, &other);
            s.spawn(move || {
                for _ in 0..50 {
                    // Inside a live block: the same region, so the same shard.
                    assert!(t.deallocate((b + 256) as *mut u8, 256, 256, S).is_err());
                    let foreign = other.allocate(512, 256, S).unwrap();
                    assert!(t.deallocate(foreign, 512, 256, S).is_err());
                    other.deallocate(foreign, 512, 256, S).unwrap();
                }
            });
        }
    });
    assert_eq!((t.allocation_count(), t.allocated_bytes()), (THREADS, THREADS * 4096));
    for b in blocks {
        t.deallocate(b as *mut u8, 4096, 256, S).unwrap();
    }
    assert_eq!((t.allocation_count(), t.allocated_bytes()), (0, 0));
}

/// A broken upstream: hands out `addresses` in turn, over and over, and takes any free. It never
/// touches the memory, and neither does the adaptor over it.
struct Repeating {
    addresses: Vec<usize>,
    next: AtomicUsize,
}

// SAFETY: deliberately broken: it hands out addresses that are live already, which is what the
// tracking adaptor above it must catch. No one reads or writes through these addresses: the
// tests only pass them between the adaptor and this resource.
unsafe impl MemoryResource for Repeating {
    fn allocate(&self, _bytes: usize, _alignment: usize, _stream: CudaStreamView) -> Result<*mut u8> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        Ok(self.addresses[i % self.addresses.len()] as *mut u8)
    }

    fn deallocate(&self, _ptr: *mut u8, _bytes: usize, _alignment: usize, _stream: CudaStreamView) -> Result<()> {
        Ok(())
    }

    fn is_device_accessible(&self) -> bool {
        false
    }

    fn is_host_accessible(&self) -> bool {
        false
    }
}

/// Addresses 1 MiB apart, over 4 GiB: every shard holds several (regions 1 GiB apart share one).
/// Each is handed out once and tracked; handed out again (from any of the threads), each is
/// refused, and the adaptor still holds exactly the first round.
#[test]
fn an_address_handed_out_twice_is_caught_whichever_shard_and_thread() {
    let addresses: Vec<usize> = (1..=4096).map(|i| i << 20).collect();
    let n = addresses.len();
    let t = TrackingResourceAdaptor::new(Repeating { addresses, next: AtomicUsize::new(0) }, false);
    let refused = AtomicUsize::new(0);
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            let (t, refused, barrier) = (&t, &refused, &barrier);
            s.spawn(move || {
                for _ in 0..n / THREADS {
                    t.allocate(256, 256, S).unwrap();
                }
                // Every address has been handed out once before any is handed out again.
                barrier.wait();
                for _ in 0..n / THREADS {
                    match t.allocate(256, 256, S) {
                        Err(Error::InvalidArgument(msg)) if msg.contains("already tracked") => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        other => panic!("a live address handed out again was accepted: {other:?}"),
                    }
                }
            });
        }
    });
    assert_eq!(refused.load(Ordering::Relaxed), n);
    assert_eq!((t.allocation_count(), t.allocated_bytes()), (n, n * 256));
    let ptrs: Vec<usize> = t.outstanding_allocations().iter().map(|r| r.ptr).collect();
    assert_eq!(ptrs, (1..=4096).map(|i| i << 20).collect::<Vec<_>>());
    for p in ptrs {
        t.deallocate(p as *mut u8, 256, 256, S).unwrap();
    }
    assert_eq!((t.allocation_count(), t.allocated_bytes()), (0, 0));
}
