//! Drives the pool algorithm (`CoalescingPool`) directly with operations decoded from the fuzzer's
//! input: chunks added at made-up addresses (no memory behind them: the algorithm only does
//! address arithmetic), allocations on several streams, frees, every kind of bad free, publishing,
//! donor lookups and merges, and releases of whole granules of free memory with the ranges mapped
//! back in place (as a pool over reserved addresses does). After every operation the pool's own
//! invariant check runs and its figures are compared with a model of the live blocks; every bad
//! free must be refused with the exact error the model predicts.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use rmm::pool::{rounded_size, CoalescingPool, SetId, StreamKey, GRANULE, MAX_BLOCK_BYTES};
use rmm::Misuse;
use std::collections::BTreeMap;

/// Where the first chunk starts: far from 0, which the pool's address map reserves.
const BASE: usize = 1 << 40;

#[derive(Arbitrary, Debug)]
enum Op {
    /// A chunk of `mantissa << shift` granules (at least one), `gap` granules after the last.
    Grow {
        stream: u8,
        mantissa: u16,
        shift: u8,
        gap: u8,
    },
    /// An allocation of `mantissa << shift` bytes from the stream's own free lists.
    Allocate {
        stream: u8,
        mantissa: u16,
        shift: u8,
        align_shift: u8,
    },
    /// As the resource's slow path does: find a donor set, then allocate from it.
    AllocateFromDonor {
        stream: u8,
        mantissa: u16,
        shift: u8,
        align_shift: u8,
        ordered: bool,
    },
    Free {
        which: u16,
        stream: u8,
    },
    /// A free with a size other than the one allocated.
    FreeWrongSize {
        which: u16,
        delta: u16,
        stream: u8,
    },
    /// A free of any address: a chunk's start plus an offset, or anything at all.
    FreeAddress {
        chunk: u8,
        offset: u32,
        raw: Option<u64>,
        bytes: u16,
        stream: u8,
    },
    Publish {
        stream: u8,
    },
    ClearWanted {
        stream: u8,
    },
    Merge {
        from: u8,
        to: u8,
    },
    /// Whole granules of `2 MiB << shift % 3` of free blocks taken out, at most `max + 1` of them,
    /// from one stream's set or (`None`) from every set: a release that unmaps them.
    DetachGranules {
        shift: u8,
        max: u8,
        stream: Option<u8>,
    },
    /// The free parts of `[BASE + start * 4 KiB, + (len + 1) * 4 KiB)` taken out, from one
    /// stream's set or (`None`) from every set: one shard's part of a release of whole granules
    /// that span the free blocks of several shards.
    DetachWithin {
        start: u16,
        len: u16,
        stream: Option<u8>,
    },
    /// The front `granules + 1` granules (of 256 bytes) of a detached range put back, joined to
    /// its neighbours: a growth that maps them again.
    Attach {
        which: u8,
        granules: u16,
        stream: u8,
    },
}

/// The streams the operations name: the legacy default stream, fresh memory, two per-thread
/// default streams and two ordinary ones.
fn key(stream: u8) -> StreamKey {
    match stream % 6 {
        0 => StreamKey::LEGACY_DEFAULT,
        1 => StreamKey::FRESH,
        2 => StreamKey::per_thread(1),
        3 => StreamKey::per_thread(2),
        4 => StreamKey::of_handle(0x7f00_1000),
        _ => StreamKey::of_handle(0x7f00_2000),
    }
}

fn bytes_of(mantissa: u16, shift: u8) -> usize {
    ((mantissa as usize) + 1) << (shift % 32)
}

/// What the test knows: live blocks by address (requested bytes, rounded size), the chunks, and
/// the sets created so far (a private set per stream, and a published set once it publishes).
#[derive(Default)]
struct Model {
    live: BTreeMap<usize, (usize, usize)>,
    order: Vec<usize>,
    chunks: Vec<(usize, usize)>,
    end: usize,
    sets: usize,
    published: BTreeMap<SetId, SetId>,
    used: usize,
    /// Ranges taken out by `DetachGranules` and not yet attached again.
    holes: Vec<(usize, usize)>,
}

impl Model {
    fn set(&mut self, pool: &mut CoalescingPool, stream: u8) -> SetId {
        let set = pool.set_of(key(stream));
        self.sets = self.sets.max(set.index() + 1);
        set
    }

    fn insert(&mut self, addr: usize, requested: usize, size: usize, align: usize) {
        assert_eq!(addr % align, 0, "{addr:#x} is not {align}-aligned");
        let inside = self.chunks.iter().any(|&(c, n)| c <= addr && addr + size <= c + n);
        assert!(inside, "block {addr:#x}+{size} is not inside one chunk");
        if let Some((&q, &(_, qs))) = self.live.range(..=addr).next_back() {
            assert!(q + qs <= addr, "block {addr:#x} overlaps live block {q:#x}+{qs}");
        }
        if let Some((&q, _)) = self.live.range(addr..).next() {
            assert!(addr + size <= q, "block {addr:#x}+{size} overlaps live block {q:#x}");
        }
        self.live.insert(addr, (requested, size));
        self.order.push(addr);
        self.used += size;
    }

    /// Takes `[addr, addr + len)` out of the chunk that holds it.
    fn cut(&mut self, addr: usize, len: usize) {
        let i = self.chunks.iter().position(|&(c, n)| c <= addr && addr + len <= c + n).expect("detached from a chunk");
        let (c, n) = self.chunks.swap_remove(i);
        if addr > c {
            self.chunks.push((c, addr - c));
        }
        if addr + len < c + n {
            self.chunks.push((addr + len, c + n - addr - len));
        }
    }

    /// Adds `[addr, addr + len)`, joined to the chunks that end at its start and begin at its end.
    fn join(&mut self, addr: usize, len: usize) {
        let (mut start, mut end) = (addr, addr + len);
        if let Some(i) = self.chunks.iter().position(|&(c, n)| c + n == addr) {
            start = self.chunks.swap_remove(i).0;
        }
        if let Some(i) = self.chunks.iter().position(|&(c, _)| c == addr + len) {
            let (c, n) = self.chunks.swap_remove(i);
            end = c + n;
        }
        self.chunks.push((start, end - start));
    }

    /// The error a free of `addr` (not a live block's start) must get.
    fn misuse_at(&self, addr: usize) -> Misuse {
        if let Some((&start, &(_, size))) = self.live.range(..=addr).next_back() {
            if addr < start + size {
                return Misuse::InteriorPointer { ptr: addr, block_start: start };
            }
        }
        if self.chunks.iter().any(|&(c, n)| c <= addr && addr < c + n) {
            Misuse::DoubleFree { ptr: addr }
        } else {
            Misuse::UnknownPointer { ptr: addr }
        }
    }
}

fn allocate(pool: &mut CoalescingPool, m: &mut Model, set: SetId, requested: usize, align_shift: u8) {
    let Some(size) = rounded_size(requested) else { return };
    let align = GRANULE << (align_shift % 16);
    if let Some(addr) = pool.allocate(set, requested, size, align) {
        m.insert(addr, requested, size, align);
    }
}

fn check(pool: &CoalescingPool, m: &Model) {
    if let Err(e) = pool.check_invariants() {
        panic!("invariant broken: {e}");
    }
    let st = pool.state();
    let total: usize = m.chunks.iter().map(|&(_, n)| n).sum();
    assert_eq!(st.pool_size, total);
    assert_eq!(st.pool_size - st.free_bytes, m.used, "bytes in use");
    assert!(st.largest_free_block <= st.free_bytes);
    assert_eq!(pool.allocated_count(), m.live.len());
}

fuzz_target!(|ops: Vec<Op>| {
    let mut pool = CoalescingPool::new();
    let mut m = Model { end: BASE, ..Model::default() };
    for op in ops {
        match op {
            Op::Grow { stream, mantissa, shift, gap } => {
                let units = ((mantissa as usize % 4096) + 1) << (shift % 21);
                let size = (units * GRANULE).min(MAX_BLOCK_BYTES);
                let addr = m.end + gap as usize * GRANULE;
                let set = m.set(&mut pool, stream);
                pool.add_chunk(addr, size, set);
                m.chunks.push((addr, size));
                m.end = addr + size;
            }
            Op::Allocate { stream, mantissa, shift, align_shift } => {
                let set = m.set(&mut pool, stream);
                allocate(&mut pool, &mut m, set, bytes_of(mantissa, shift), align_shift);
            }
            Op::AllocateFromDonor { stream, mantissa, shift, align_shift, ordered } => {
                let set = m.set(&mut pool, stream);
                let requested = bytes_of(mantissa, shift);
                let (Some(size), align) = (rounded_size(requested), GRANULE << (align_shift % 16)) else { continue };
                if let Some(d) = pool.find_donor(set, size, align, ordered) {
                    assert_ne!(d, set, "a stream is not its own donor");
                    assert!(d.index() < m.sets);
                    // A donor has a block in a class that always fits: allocating must succeed.
                    let addr = pool.allocate(d, requested, size, align).expect("the donor's block fits");
                    m.insert(addr, requested, size, align);
                }
            }
            Op::Free { which, stream } => {
                if m.order.is_empty() {
                    continue;
                }
                let addr = m.order.swap_remove(which as usize % m.order.len());
                let (requested, size) = m.live.remove(&addr).expect("live");
                m.used -= size;
                let set = m.set(&mut pool, stream);
                assert_eq!(pool.deallocate(addr, requested, set), Ok(()));
            }
            Op::FreeWrongSize { which, delta, stream } => {
                if m.order.is_empty() {
                    continue;
                }
                let addr = m.order[which as usize % m.order.len()];
                let requested = m.live[&addr].0;
                let given = if delta % 2 == 0 {
                    requested + 1 + delta as usize
                } else {
                    requested.saturating_sub(1 + delta as usize)
                };
                let set = m.set(&mut pool, stream);
                let want = Misuse::WrongSize { ptr: addr, allocated: requested, given };
                assert_eq!(pool.deallocate(addr, given, set), Err(want));
            }
            Op::FreeAddress { chunk, offset, raw, bytes, stream } => {
                let addr = match (raw, m.chunks.get(chunk as usize % m.chunks.len().max(1))) {
                    (Some(a), _) => a as usize,
                    (None, Some(&(c, _))) => c + offset as usize,
                    (None, None) => continue,
                };
                if addr == 0 || m.live.contains_key(&addr) {
                    continue;
                }
                let set = m.set(&mut pool, stream);
                assert_eq!(pool.deallocate(addr, bytes as usize, set), Err(m.misuse_at(addr)));
            }
            Op::Publish { stream } => {
                let set = m.set(&mut pool, stream);
                if !m.published.contains_key(&set) {
                    m.published.insert(set, SetId::at(m.sets));
                    m.sets += 1;
                }
                pool.publish(set);
                assert!(!pool.is_wanted(set));
                assert!(pool.is_published(m.published[&set]));
            }
            Op::ClearWanted { stream } => {
                let set = m.set(&mut pool, stream);
                pool.clear_wanted(set);
                assert!(!pool.is_wanted(set));
            }
            Op::Merge { from, to } => {
                if m.sets < 2 {
                    continue;
                }
                let (from, to) = (SetId::at(from as usize % m.sets), SetId::at(to as usize % m.sets));
                if from == to {
                    continue;
                }
                let free_before = pool.state().free_bytes;
                pool.merge_into(from, to);
                assert!(!pool.streams_with_free_memory(to).contains(&from), "merge left blocks behind");
                assert_eq!(pool.state().free_bytes, free_before);
            }
            Op::DetachGranules { shift, max, stream } => {
                let granule = (2 << 20) << (shift % 3);
                let only = stream.map(|st| m.set(&mut pool, st));
                let ranges = pool
                    .detach_free_granules(granule, (max as usize + 1) * granule, |set| only.is_none_or(|o| o == set));
                let total: usize = ranges.iter().map(|&(_, len)| len).sum();
                assert!(total <= (max as usize + 1) * granule);
                for (addr, len) in ranges {
                    assert!(
                        len > 0 && addr % granule == 0 && len % granule == 0,
                        "{addr:#x}+{len} is not whole granules"
                    );
                    if let Some((&q, &(_, qs))) = m.live.range(..addr + len).next_back() {
                        assert!(q + qs <= addr, "live block {q:#x}+{qs} in detached {addr:#x}+{len}");
                    }
                    m.cut(addr, len);
                    m.holes.push((addr, len));
                }
            }
            Op::DetachWithin { start, len, stream } => {
                let (addr, len) = (BASE + ((start as usize) << 12), (len as usize + 1) << 12);
                let only = stream.map(|st| m.set(&mut pool, st));
                let take = |set| only.is_none_or(|o| o == set);
                let pieces = pool.detach_free_within(&[(addr, len)], take);
                for &(a, l) in &pieces {
                    assert!(l > 0 && addr <= a && a + l <= addr + len, "{a:#x}+{l} outside {addr:#x}+{len}");
                    if let Some((&q, &(_, qs))) = m.live.range(..a + l).next_back() {
                        assert!(q + qs <= a, "live block {q:#x}+{qs} in detached {a:#x}+{l}");
                    }
                    m.cut(a, l);
                    m.holes.push((a, l));
                }
                for (a, l) in pool.free_blocks(take) {
                    assert!(a + l <= addr || addr + len <= a, "free {a:#x}+{l} left in {addr:#x}+{len}");
                }
            }
            Op::Attach { which, granules, stream } => {
                if m.holes.is_empty() {
                    continue;
                }
                let i = which as usize % m.holes.len();
                let (addr, len) = m.holes[i];
                let take = ((granules as usize + 1) * GRANULE).min(len);
                if take == len {
                    m.holes.swap_remove(i);
                } else {
                    m.holes[i] = (addr + take, len - take);
                }
                let set = m.set(&mut pool, stream);
                pool.attach(addr, take, set);
                m.join(addr, take);
            }
        }
        check(&pool, &m);
    }
    // Everything freed: all memory is free again.
    for addr in std::mem::take(&mut m.order) {
        let (requested, size) = m.live.remove(&addr).expect("live");
        m.used -= size;
        assert_eq!(pool.deallocate(addr, requested, SetId::at(0)), Ok(()));
    }
    check(&pool, &m);
});
