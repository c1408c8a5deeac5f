//! The statistics adaptor's counter stack, split into per-thread slots so that threads counting
//! at the same time rarely touch the same cache line, while every query at a quiescent point
//! (no allocation or free in flight) still returns exactly what RMM's single-lock adaptor would.
//!
//! With one lock for the whole stack, every allocation and free of every thread moved that lock's
//! cache line between cores: 8 threads through statistics → tracking → pool spent hundreds of
//! nanoseconds per operation queueing for it.
//!
//! Values and totals are sums, so each slot keeps its share and a query adds the shares up. The
//! peak is the hard part: it is the maximum of the *global* value over time, which no slot can see
//! on its own. It is kept exact with credit: the peak is split into the value, a shared `spare`
//! and per-slot `credit`, and
//!
//! ```text
//!     peak = Σ slot values + base value + spare + Σ slot credits        (for bytes and for counts)
//! ```
//!
//! holds whenever no slot is locked. An allocation that fits in its slot's credit moves credit to
//! value: the global value stays at or below the peak, so the peak does not change and nothing
//! shared is touched. A free moves value back to credit. Only an allocation its slot's credit does
//! not cover goes to the shared state: it takes credit from `spare`, or, where that is short too,
//! locks every slot (freezing the global value) and gathers all credit; if that is still short the
//! allocation raises the peak to exactly the new global value. Near the peak (right after it was
//! raised, until `spare` has room again) the slots are `hot`: every change goes through the shared
//! lock, as in RMM, since handing out credit there would only mean sweeping it back.
//!
//! Ordering: all state lives under spin locks (Acquire on lock, Release on unlock), so a query
//! that locks everything sees every change made before the threads it synchronized with finished;
//! no atomic of this module's own is read or written outside a lock. Locks are taken in one order,
//! the shared lock first and then slots by ascending index; the fast path takes its own slot only.

use super::{Counter, CounterFrame};
use rmm_algorithms::{RawSpinLock, SpinMutex};

type Guard<'a, T> = parking_lot::lock_api::MutexGuard<'a, RawSpinLock, T>;

/// Slots: a power of two, at most 64 (the width of the active-slot mask).
const SLOTS: usize = 64;

/// Credit handed to a slot beyond what its allocation needs, per quantity (bytes, allocations):
/// enough that a thread's next allocations are counted in its slot alone, small next to the room
/// under the peak that a busy program usually has, so that other slots rarely find `spare` empty.
const BATCH: [i64; 2] = [1 << 20, 8];

/// A slot whose credit grows past this (by frees) gives all but [`BATCH`] back to `spare`.
const CAP: [i64; 2] = [4 << 20, 32];

/// Hot slots cool down once `spare` holds this much room under the peak, in both quantities.
const COOL: [i64; 2] = [8 << 20, 16];

/// One quantity's share in a slot, or the shared base.
#[derive(Debug, Default, Clone, Copy)]
struct Share {
    value: i64,
    total: i64,
    /// Room under the peak this slot may allocate into without asking; never negative.
    credit: i64,
}

/// A slot's shares of bytes (index 0) and allocations (index 1).
#[derive(Debug, Default)]
struct SlotState {
    /// Whether the shared state knows this slot: an unknown slot is left out of sweeps, so its
    /// first change goes through the shared lock, which registers it.
    active: bool,
    /// Every change goes through the shared lock.
    hot: bool,
    shares: [Share; 2],
}

impl SlotState {
    /// Counts an allocation of `bytes`: value rises and credit falls by as much, so the peak
    /// they add up to with `spare` stays the same. Credit may go negative only where the caller
    /// balances it (the shared paths).
    #[inline]
    fn allocate(&mut self, bytes: i64) {
        let [b, n] = &mut self.shares;
        b.value = b.value.saturating_add(bytes);
        b.total = b.total.saturating_add(bytes);
        b.credit = b.credit.saturating_sub(bytes);
        n.value += 1;
        n.total += 1;
        n.credit -= 1;
    }

    /// Counts a free of `bytes`: value falls and credit rises by as much.
    #[inline]
    fn free(&mut self, bytes: i64) {
        let [b, n] = &mut self.shares;
        b.value = b.value.saturating_sub(bytes);
        b.credit = b.credit.saturating_add(bytes);
        n.value -= 1;
        n.credit += 1;
    }
}

/// A slot on cache lines of its own.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Slot(SpinMutex<SlotState>);

/// What no slot holds: the frames below the top one and the top frame's peak and spare room.
#[derive(Debug, Default)]
struct Shared {
    below: Vec<CounterFrame>,
    /// The top frame's value and total not held by any slot (what a pop folded in).
    base: [Share; 2],
    peak: [i64; 2],
    /// Room under the peak that no slot holds.
    spare: [i64; 2],
    hot: bool,
    /// Bit i: slot i is active.
    active: u64,
}

/// The shared state on cache lines of its own.
#[repr(align(128))]
#[derive(Debug, Default)]
struct SharedLock(SpinMutex<Shared>);

/// The counter stack: see the module documentation.
#[derive(Debug)]
pub(super) struct Counters {
    shared: SharedLock,
    slots: Box<[Slot]>,
}

/// The calling thread's slot: consecutive threads get consecutive slots.
#[inline]
fn slot_index() -> usize {
    rmm_algorithms::current_thread_number() & (SLOTS - 1)
}

/// The slots a freeze holds, in ascending index order.
type Frozen<'a> = Vec<Guard<'a, SlotState>>;

impl Counters {
    /// One zeroed frame.
    pub fn new() -> Self {
        Counters { shared: SharedLock::default(), slots: (0..SLOTS).map(|_| Slot::default()).collect() }
    }

    /// Counts an allocation of `bytes` (after the upstream made it).
    #[inline]
    pub fn allocated(&self, bytes: i64) {
        self.allocated_in(slot_index(), bytes);
    }

    /// Counts a free of `bytes` (after the upstream took it).
    #[inline]
    pub fn freed(&self, bytes: i64) {
        self.freed_in(slot_index(), bytes);
    }

    /// [`allocated`](Self::allocated) in slot `i`.
    #[inline]
    fn allocated_in(&self, i: usize, bytes: i64) {
        let mut s = self.slots[i].0.lock();
        if s.active && !s.hot && s.shares[0].credit >= bytes && s.shares[1].credit >= 1 {
            s.allocate(bytes);
            return;
        }
        drop(s);
        self.allocated_slow(i, bytes);
    }

    /// [`freed`](Self::freed) in slot `i`.
    #[inline]
    fn freed_in(&self, i: usize, bytes: i64) {
        let mut s = self.slots[i].0.lock();
        if s.active && !s.hot {
            s.free(bytes);
            let trim = s.shares[0].credit > CAP[0] || s.shares[1].credit > CAP[1];
            drop(s);
            if trim {
                self.trim(i);
            }
            return;
        }
        drop(s);
        let mut g = self.shared.0.lock();
        let mut s = self.activate(&mut g, i);
        // Not handed to the slot: a hot slot allocates through the shared lock anyway.
        s.free(bytes);
        for (sh, d) in s.shares.iter_mut().zip([bytes, 1]) {
            sh.credit -= d;
        }
        for (spare, d) in g.spare.iter_mut().zip([bytes, 1]) {
            *spare = spare.saturating_add(d);
        }
        drop(s);
        self.maybe_cool(&mut g);
    }

    /// The slot's lock, after registering it with the shared state where it was not yet.
    fn activate<'a>(&'a self, g: &mut Shared, i: usize) -> Guard<'a, SlotState> {
        let mut s = self.slots[i].0.lock();
        if g.active & (1 << i) == 0 {
            g.active |= 1 << i;
            s.active = true;
            s.hot = g.hot;
        }
        s
    }

    #[cold]
    #[inline(never)]
    fn allocated_slow(&self, i: usize, bytes: i64) {
        let need = [bytes, 1];
        let mut g = self.shared.0.lock();
        let mut s = self.activate(&mut g, i);
        if (0..2).all(|q| s.shares[q].credit.saturating_add(g.spare[q]) >= need[q]) {
            // Covered without a sweep: take what is missing from `spare`, and a batch more for
            // the slot's next allocations unless it is hot.
            for q in 0..2 {
                let missing = (need[q] - s.shares[q].credit).max(0);
                let extra = if s.hot { 0 } else { BATCH[q].min(g.spare[q] - missing) };
                g.spare[q] -= missing + extra;
                s.shares[q].credit += missing + extra;
            }
            s.allocate(bytes);
            drop(s);
            self.maybe_cool(&mut g);
            return;
        }
        drop(s);
        if g.hot {
            // A hot slot never holds credit, so the global value is known without a sweep: the
            // peak less `spare`.
            let mut s = self.slots[i].0.lock();
            Self::settle(&mut g, &mut s, bytes);
            return;
        }
        // Freeze every active slot (the global value cannot change while all are locked) and
        // gather their credit; what is still short raises the peak to the new global value.
        let mut frozen = self.freeze(&g);
        for s in frozen.iter_mut() {
            for q in 0..2 {
                g.spare[q] = g.spare[q].saturating_add(std::mem::take(&mut s.shares[q].credit));
            }
        }
        // Slot i's place among the frozen ones: the active slots below it come first.
        let mine = (g.active & ((1u64 << i) - 1)).count_ones() as usize;
        if Self::settle(&mut g, &mut frozen[mine], bytes) {
            frozen.iter_mut().for_each(|s| s.hot = true);
        }
    }

    /// Counts an allocation that no credit covers, with the global value known (every slot's
    /// credit is in `spare`): it comes out of `spare` where that has room, else the peak rises to
    /// the new global value, exactly, and the slots turn hot. Returns whether they must.
    fn settle(g: &mut Shared, s: &mut SlotState, bytes: i64) -> bool {
        let mut raised = false;
        for (q, need) in [bytes, 1].into_iter().enumerate() {
            if g.spare[q] >= need {
                g.spare[q] -= need;
            } else {
                g.peak[q] = g.peak[q].saturating_add(need - g.spare[q]);
                g.spare[q] = 0;
                raised = true;
            }
            // The credit for this allocation came from `spare` or the raise above.
            s.shares[q].credit += need;
        }
        s.allocate(bytes);
        g.hot |= raised;
        raised
    }

    /// Gives back to `spare` the credit of slot `i` beyond [`BATCH`].
    #[cold]
    #[inline(never)]
    fn trim(&self, i: usize) {
        let mut g = self.shared.0.lock();
        let mut s = self.activate(&mut g, i);
        for ((share, spare), batch) in s.shares.iter_mut().zip(g.spare.iter_mut()).zip(BATCH) {
            let excess = (share.credit - batch).max(0);
            share.credit -= excess;
            *spare = spare.saturating_add(excess);
        }
    }

    /// Lets the slots count on their own again once `spare` has room in both quantities.
    fn maybe_cool(&self, g: &mut Shared) {
        if g.hot && (0..2).all(|q| g.spare[q] >= COOL[q]) {
            g.hot = false;
            self.freeze(g).iter_mut().for_each(|s| s.hot = false);
        }
    }

    /// Every active slot locked, in ascending index order (the shared lock is held).
    fn freeze(&self, g: &Shared) -> Frozen<'_> {
        (0..SLOTS).filter(|i| g.active & (1 << i) != 0).map(|i| self.slots[i].0.lock()).collect()
    }

    /// The top frame, with every slot frozen and its credit gathered into `spare`: the caller is
    /// about to change the peak or the frames, and then [`install`](Self::install)s a frame.
    fn gather<'a>(&'a self, g: &mut Shared) -> (CounterFrame, Frozen<'a>) {
        let mut frozen = self.freeze(g);
        for s in frozen.iter_mut() {
            for q in 0..2 {
                g.spare[q] = g.spare[q].saturating_add(std::mem::take(&mut s.shares[q].credit));
            }
        }
        (Self::sum(g, &frozen), frozen)
    }

    /// Makes `frame` the top frame, every slot's share zeroed.
    fn install(g: &mut Shared, frozen: &mut Frozen<'_>, frame: CounterFrame) {
        for s in frozen.iter_mut() {
            s.shares = Default::default();
        }
        for (q, c) in [frame.bytes, frame.allocations].into_iter().enumerate() {
            g.base[q] = Share { value: c.value, total: c.total, credit: 0 };
            g.peak[q] = c.peak;
            g.spare[q] = c.peak.saturating_sub(c.value).max(0);
        }
        let hot = !(0..2).all(|q| g.spare[q] >= COOL[q]);
        g.hot = hot;
        frozen.iter_mut().for_each(|s| s.hot = hot);
    }

    /// The top frame from the shared state and the frozen slots.
    fn sum(g: &Shared, frozen: &Frozen<'_>) -> CounterFrame {
        let mut sums = g.base;
        for s in frozen.iter() {
            for (sum, share) in sums.iter_mut().zip(&s.shares) {
                sum.value = sum.value.saturating_add(share.value);
                sum.total = sum.total.saturating_add(share.total);
            }
        }
        let c = |q: usize| Counter { value: sums[q].value, peak: g.peak[q], total: sums[q].total };
        CounterFrame { bytes: c(0), allocations: c(1) }
    }

    /// Calls `f` with the frames below the top one (bottom first) and the top one, read with
    /// every slot frozen: exact at a quiescent point, and a state the counters passed through
    /// otherwise.
    pub fn read<T>(&self, f: impl FnOnce(&[CounterFrame], CounterFrame) -> T) -> T {
        let g = self.shared.0.lock();
        let frozen = self.freeze(&g);
        f(&g.below, Self::sum(&g, &frozen))
    }

    /// Pushes a zeroed frame; returns the one that was on top.
    pub fn push(&self) -> CounterFrame {
        let mut g = self.shared.0.lock();
        let (top, mut frozen) = self.gather(&mut g);
        Self::install(&mut g, &mut frozen, CounterFrame::default());
        drop(frozen);
        g.below.push(top);
        top
    }

    /// Pops the top frame into the one below and returns it; `None` when only one is left.
    pub fn pop(&self) -> Option<CounterFrame> {
        let mut g = self.shared.0.lock();
        let mut below = g.below.pop()?;
        let (top, mut frozen) = self.gather(&mut g);
        below.merge_inner(&top);
        Self::install(&mut g, &mut frozen, below);
        Some(top)
    }

    /// Sets the top frame's peaks to its values.
    pub fn reset_peaks(&self) {
        let mut g = self.shared.0.lock();
        let (mut top, mut frozen) = self.gather(&mut g);
        top.bytes.peak = top.bytes.value;
        top.allocations.peak = top.allocations.value;
        Self::install(&mut g, &mut frozen, top);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::SplitMix64;

    /// RMM's single-lock stack: the model.
    #[derive(Default)]
    struct Model {
        top: CounterFrame,
        below: Vec<CounterFrame>,
    }

    /// Random allocations and frees spread over a few slots, with pushes, pops and peak resets,
    /// sized around the batch, cap and cool-down thresholds so that credit moves, sweeps, hot and
    /// cool phases all happen; after every step every query equals the model's.
    #[test]
    fn slotted_counters_equal_the_single_lock_stack_step_by_step() {
        let mut rng = SplitMix64::new(7);
        let c = Counters::new();
        let mut m = Model::default();
        let mut live: Vec<(usize, i64)> = Vec::new();
        for step in 0..40_000 {
            let r = rng.next_u64() % 1000;
            let slot = (rng.next_u64() % 5) as usize * 13 % SLOTS;
            if r < 3 {
                assert_eq!(c.push(), m.top);
                let top = std::mem::take(&mut m.top);
                m.below.push(top);
            } else if r < 6 {
                let popped = c.pop();
                match m.below.pop() {
                    Some(mut below) => {
                        assert_eq!(popped, Some(m.top));
                        below.merge_inner(&m.top);
                        m.top = below;
                    }
                    None => assert_eq!(popped, None),
                }
            } else if r < 8 {
                c.reset_peaks();
                m.top.bytes.peak = m.top.bytes.value;
                m.top.allocations.peak = m.top.allocations.value;
            } else if live.len() < 400 && (live.is_empty() || r < 520) {
                let bytes = [0, 1, 256, 300_000, 1 << 20, 3 << 20][(rng.next_u64() % 6) as usize];
                c.allocated_in(slot, bytes);
                m.top.bytes.add(bytes);
                m.top.allocations.add(1);
                live.push((slot, bytes));
            } else {
                let (_, bytes) = live.swap_remove((rng.next_u64() % live.len() as u64) as usize);
                // Freed from any slot: a block may be freed by another thread than its own.
                c.freed_in(slot, bytes);
                m.top.bytes.sub(bytes);
                m.top.allocations.sub(1);
            }
            c.read(|below, top| {
                assert_eq!(top, m.top, "step {step}");
                assert_eq!(below, &m.below[..], "step {step}");
            });
        }
    }
}
