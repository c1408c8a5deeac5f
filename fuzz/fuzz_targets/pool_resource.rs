//! Drives `PoolMemoryResource` from the fuzzer's input, over an upstream that hands out made-up
//! addresses (the pool never touches its memory) and can run out or refuse on demand, with a
//! stream order whose record, wait and synchronise calls fail when the input says so. Covers
//! construction, growth and its back-off, the slow path's publish/wait/merge steps, out-of-memory,
//! and every bad call. After every operation: the pool's invariant check, the bytes in use against
//! a model of the live blocks, the pool's size against what the upstream handed out, and for a
//! refusal the proof that the pool could not have grown. Streams are destroyed and their handles
//! reused (the user's own streams, found out by identity, and streams whose retirement is
//! announced). Dropping the pool must return every chunk.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use rmm::pool::{rounded_size, StreamIdentity, StreamKey, StreamOrder, GRANULE};
use rmm::resource::{MemoryResource, PoolMemoryResource, MAX_ALIGNMENT};
use rmm::{CudaStreamView, Error, Misuse, Result};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Where the made-up address space starts: far from 0.
const BASE: usize = 1 << 40;

#[derive(Arbitrary, Debug)]
struct Setup {
    initial_granules: u16,
    /// The maximum as granules above the initial size, if any.
    maximum_extra: Option<u16>,
    /// The upstream's capacity in granules (0: unlimited).
    capacity_granules: u32,
    ordered: bool,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// `mantissa << shift` bytes; the alignment is `256 << align_shift`, or `raw` as given.
    Allocate {
        stream: u8,
        mantissa: u16,
        shift: u8,
        align_shift: u8,
        raw_align: Option<u32>,
    },
    Free {
        which: u16,
        stream: u8,
    },
    FreeWrongSize {
        which: u16,
        delta: u16,
        stream: u8,
    },
    /// A free of a live block's start plus `offset`, or of any address.
    FreeAddress {
        which: u16,
        offset: u32,
        raw: Option<u64>,
        stream: u8,
    },
    /// Gives a stream a shard of its own (as contention would): ranges then move between shards
    /// and frees cross them.
    Spread { stream: u8 },
    /// Makes the upstream refuse from now on, or accept again.
    UpstreamFails(bool),
    /// The user's own stream is destroyed and a new one of the user's gets its handle.
    ReplaceStream { stream: u8 },
    /// A stream of ours gets the handle (its stream was destroyed), or, if one of ours has it, it
    /// is destroyed, announcing it (the pool captures its work, or, if the capture fails, makes
    /// its blocks wait for a synchronisation).
    OurStream { stream: u8 },
    /// Makes `record`, `wait` and `synchronize_all` fail from now on, or succeed again.
    OrderFails {
        record: bool,
        wait: bool,
        sync: bool,
    },
}

fn stream(s: u8) -> CudaStreamView<'static> {
    // SAFETY: a stream name for the fuzzed pool, whose upstream's addresses no driver call sees.
    unsafe { CudaStreamView::from_handle([0, 1, 2, 0x1000, 0x2000, 0x3000][s as usize % 6]) }
}

/// The upstream's books: live chunks, and the sizes it refused during the current operation.
#[derive(Default)]
struct Books {
    next: usize,
    live: BTreeMap<usize, usize>,
    used: usize,
    capacity: usize,
    failing: bool,
    refused: Vec<usize>,
}

/// Bump-allocates made-up, 256-aligned addresses; refuses past its capacity or while failing.
#[derive(Clone)]
struct FakeUpstream(Arc<Mutex<Books>>);

// SAFETY: not kept in full: the addresses are made up, disjoint and aligned, but no memory lies
// behind them. Nothing dereferences them: the target drives a pool over this upstream and never
// builds a buffer over it.
unsafe impl MemoryResource for FakeUpstream {
    fn allocate(&self, bytes: usize, alignment: usize, _stream: CudaStreamView) -> Result<*mut u8> {
        let mut b = self.0.lock().unwrap();
        // Sizes need not be whole granules: halving toward a request is not rounded, as in RMM.
        assert_eq!(alignment, GRANULE, "the pool asks for granule alignment");
        if b.failing || (b.capacity > 0 && b.used + bytes > b.capacity) {
            b.refused.push(bytes);
            return Err(Error::out_of_memory(bytes, "fake upstream"));
        }
        let addr = b.next;
        // The next address stays aligned. A gap of one granule after chunks of an odd number of
        // granules, none after others: chunks that touch must never be merged.
        let whole = bytes.next_multiple_of(GRANULE);
        b.next += whole + if whole.is_multiple_of(2 * GRANULE) { 0 } else { GRANULE };
        b.live.insert(addr, bytes);
        b.used += bytes;
        Ok(addr as *mut u8)
    }
    fn deallocate(&self, ptr: *mut u8, bytes: usize, _alignment: usize, _stream: CudaStreamView) -> Result<()> {
        let mut b = self.0.lock().unwrap();
        assert_eq!(b.live.remove(&(ptr as usize)), Some(bytes), "the pool returned a chunk it did not get");
        b.used -= bytes;
        Ok(())
    }
    fn is_device_accessible(&self) -> bool {
        false
    }
}

/// A stream order that fails on demand; the streams of real handles can be replaced.
#[derive(Clone, Default)]
struct FuzzOrder {
    ordered: bool,
    fail: Arc<[AtomicBool; 3]>,
    /// Which stream each real handle names now (absent: the first).
    ids: Arc<Mutex<HashMap<usize, u64>>>,
    /// The handles registered as streams of ours (as the stream registry holds them).
    ours: Arc<Mutex<HashSet<usize>>>,
}

impl FuzzOrder {
    fn answer(&self, i: usize) -> Result<()> {
        if self.fail[i].load(Ordering::Relaxed) {
            Err(Error::Cuda { call: "fuzz", code: 999, name: "CUDA_ERROR_UNKNOWN".into() })
        } else {
            Ok(())
        }
    }
}

impl StreamOrder for FuzzOrder {
    fn record(&self, _owner: StreamKey, _identity: StreamIdentity) -> Result<()> {
        self.answer(0)
    }
    fn wait(&self, _owner: StreamKey, _identity: StreamIdentity, _waiter: StreamKey) -> Result<()> {
        self.answer(1)
    }
    fn synchronize_all(&self) -> Result<()> {
        self.answer(2)
    }
    fn is_needed(&self) -> bool {
        self.ordered
    }
    fn identity(&self, key: StreamKey, _known: StreamIdentity) -> StreamIdentity {
        let Some(handle) = key.handle().filter(|h| key.is_reusable_handle() && !self.ours.lock().unwrap().contains(h))
        else {
            return StreamIdentity::Trusted;
        };
        StreamIdentity::Driver(self.ids.lock().unwrap().get(&handle).copied().unwrap_or(1))
    }
    fn retire(&self, _owner: StreamKey, _retired: StreamKey) -> Result<()> {
        self.answer(0)
    }
}

/// Live blocks: address → (requested bytes, rounded size), in allocation order too.
#[derive(Default)]
struct Model {
    live: BTreeMap<usize, (usize, usize)>,
    order: Vec<usize>,
    used: usize,
}

impl Model {
    /// The error a free of `addr` (not a live block's start) must get.
    fn misuse_at(&self, addr: usize, chunks: &BTreeMap<usize, usize>) -> Misuse {
        if let Some((&start, &(_, size))) = self.live.range(..=addr).next_back() {
            if addr < start + size {
                return Misuse::InteriorPointer { ptr: addr, block_start: start };
            }
        }
        match chunks.range(..=addr).next_back() {
            Some((&c, &n)) if addr < c + n => Misuse::DoubleFree { ptr: addr },
            _ => Misuse::UnknownPointer { ptr: addr },
        }
    }
}

fuzz_target!(|setup: Setup| {
    // Streams of ours left from the last input die with it (its pool is gone).
    for s in 0..6 {
        // SAFETY: a stream name for the fuzzed pool, whose upstream's addresses no driver call sees.
        unsafe { rmm::stream_registry::retire_stream(stream(s).handle()) };
    }
    let books = Arc::new(Mutex::new(Books {
        next: BASE,
        capacity: setup.capacity_granules as usize * GRANULE,
        ..Books::default()
    }));
    let upstream = FakeUpstream(books.clone());
    let order = FuzzOrder { ordered: setup.ordered, ..FuzzOrder::default() };
    let initial = setup.initial_granules as usize * GRANULE;
    let maximum = setup.maximum_extra.map(|extra| initial + extra as usize * GRANULE);
    // SAFETY: the fake upstream's addresses are never read or written, so no order can be wrong for them.
    let pool = match unsafe { PoolMemoryResource::with_stream_order(upstream, initial, maximum, Box::new(order.clone())) } {
        Ok(p) => p,
        Err(e) => {
            // Only an upstream too small for the first chunk stops construction.
            assert!(e.is_out_of_memory(), "{e}");
            assert!(books.lock().unwrap().capacity < initial);
            return;
        }
    };
    let mut m = Model::default();
    for op in setup.ops {
        books.lock().unwrap().refused.clear();
        match op {
            Op::Allocate { stream: s, mantissa, shift, align_shift, raw_align } => {
                let bytes = (mantissa as usize) << (shift % 48);
                let align = raw_align.map_or(GRANULE << (align_shift % 16), |a| a as usize);
                let result = pool.allocate(bytes, align, stream(s));
                let valid_align = align != 0 && align.is_power_of_two() && align <= MAX_ALIGNMENT;
                match result {
                    Err(Error::BadAlignment { alignment, max }) => {
                        assert!(!valid_align && alignment == align && max == MAX_ALIGNMENT);
                    }
                    _ if !valid_align => panic!("alignment {align} accepted: {result:?}"),
                    Ok(p) if bytes == 0 => assert!(p.is_null(), "zero bytes give null"),
                    Ok(p) => {
                        let addr = p as usize;
                        let size = rounded_size(bytes).expect("an allocated size rounds");
                        let align = align.max(GRANULE);
                        assert_eq!(addr % align, 0, "{addr:#x} is not {align}-aligned");
                        let chunks = &books.lock().unwrap().live;
                        let inside = chunks.range(..=addr).next_back().is_some_and(|(&c, &n)| addr + size <= c + n);
                        assert!(inside, "block {addr:#x}+{size} is not inside one chunk");
                        if let Some((&q, &(_, qs))) = m.live.range(..=addr).next_back() {
                            assert!(q + qs <= addr, "block {addr:#x} overlaps live block {q:#x}+{qs}");
                        }
                        if let Some((&q, _)) = m.live.range(addr..).next() {
                            assert!(addr + size <= q, "block {addr:#x}+{size} overlaps live block {q:#x}");
                        }
                        m.live.insert(addr, (bytes, size));
                        m.order.push(addr);
                        m.used += size;
                    }
                    Err(Error::OutOfMemory { requested, pool: Some(st), .. }) => {
                        assert_eq!(requested, bytes);
                        assert_eq!(st, pool.state());
                        // Refused only if growing by what the request needs was impossible: past
                        // the maximum, or the upstream refused exactly that much.
                        if let Some(size) = rounded_size(bytes) {
                            let needed = size + align.max(GRANULE) - GRANULE;
                            let past_max = maximum.is_some_and(|max| st.pool_size + needed > max);
                            let refused = books.lock().unwrap().refused.contains(&needed);
                            assert!(past_max || refused, "refused {bytes} B (needs {needed}) with room: {st:?}");
                        }
                    }
                    Err(e) => panic!("allocate({bytes}, {align}): unexpected {e}"),
                }
            }
            Op::Free { which, stream: s } => {
                if m.order.is_empty() {
                    continue;
                }
                let addr = m.order.swap_remove(which as usize % m.order.len());
                let (bytes, size) = m.live.remove(&addr).expect("live");
                m.used -= size;
                assert_eq!(pool.deallocate(addr as *mut u8, bytes, 256, stream(s)), Ok(()));
            }
            Op::FreeWrongSize { which, delta, stream: s } => {
                if m.order.is_empty() {
                    continue;
                }
                let addr = m.order[which as usize % m.order.len()];
                let bytes = m.live[&addr].0;
                let given =
                    if delta % 2 == 0 { bytes + 1 + delta as usize } else { bytes.saturating_sub(1 + delta as usize) };
                let want = Error::Misuse(Misuse::WrongSize { ptr: addr, allocated: bytes, given });
                assert_eq!(pool.deallocate(addr as *mut u8, given, 256, stream(s)), Err(want));
            }
            Op::FreeAddress { which, offset, raw, stream: s } => {
                let addr = match raw {
                    Some(a) => a as usize,
                    None if m.order.is_empty() => continue,
                    None => m.order[which as usize % m.order.len()] + offset as usize,
                };
                let got = pool.deallocate(addr as *mut u8, 1, 256, stream(s));
                if addr == 0 {
                    assert_eq!(got, Ok(()), "freeing null is a no-op");
                } else if !m.live.contains_key(&addr) {
                    let want = m.misuse_at(addr, &books.lock().unwrap().live);
                    assert_eq!(got, Err(Error::Misuse(want)));
                } else if m.live[&addr].0 == 1 {
                    // It was a correct free after all.
                    let (_, size) = m.live.remove(&addr).expect("live");
                    m.order.retain(|&a| a != addr);
                    m.used -= size;
                    assert_eq!(got, Ok(()));
                } else {
                    let allocated = m.live[&addr].0;
                    assert_eq!(got, Err(Error::Misuse(Misuse::WrongSize { ptr: addr, allocated, given: 1 })));
                }
            }
            Op::Spread { stream: s } => pool.spread_stream(stream(s)),
            Op::ReplaceStream { stream: s } => {
                let handle = stream(s).handle();
                if !order.ours.lock().unwrap().contains(&handle) {
                    *order.ids.lock().unwrap().entry(handle).or_insert(1) += 1;
                }
            }
            Op::OurStream { stream: s } => {
                let handle = stream(s).handle();
                if order.ours.lock().unwrap().remove(&handle) {
                    // SAFETY: a stream name for the fuzzed pool, whose upstream's addresses no driver call sees.
                    unsafe { rmm::stream_registry::retire_stream(handle) };
                } else if StreamKey::of_handle(handle).is_reusable_handle() {
                    order.ours.lock().unwrap().insert(handle);
                    *order.ids.lock().unwrap().entry(handle).or_insert(1) += 1;
                    // SAFETY: a stream name for the fuzzed pool, whose upstream's addresses no driver call sees.
                    unsafe { rmm::stream_registry::register_stream(handle) };
                }
            }
            Op::UpstreamFails(on) => books.lock().unwrap().failing = on,
            Op::OrderFails { record, wait, sync } => {
                for (flag, on) in order.fail.iter().zip([record, wait, sync]) {
                    flag.store(on, Ordering::Relaxed);
                }
            }
        }
        if let Err(e) = pool.check_invariants() {
            panic!("invariant broken: {e}");
        }
        let st = pool.state();
        assert_eq!(st.pool_size - st.free_bytes, m.used, "bytes in use");
        assert_eq!(st.pool_size, books.lock().unwrap().used, "pool size is what the upstream handed out");
        // As in RMM, the room left is rounded up to a granule: a pool whose size is no whole number
        // of granules (a halved chunk) may pass the maximum, by less than one granule.
        assert!(maximum.is_none_or(|max| st.pool_size < max + GRANULE), "{st:?} past {maximum:?}");
    }
    for addr in std::mem::take(&mut m.order) {
        let (bytes, _) = m.live.remove(&addr).expect("live");
        assert_eq!(pool.deallocate(addr as *mut u8, bytes, 256, stream(0)), Ok(()));
    }
    let st = pool.state();
    assert_eq!(st.free_bytes, st.pool_size, "every block came back");
    drop(pool);
    let b = books.lock().unwrap();
    assert!(b.live.is_empty() && b.used == 0, "the upstream got every chunk back");
});
