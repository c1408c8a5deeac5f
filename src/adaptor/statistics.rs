//! Counts the bytes and allocations that pass through, with a stack of counter frames for measuring
//! nested regions (RMM's `statistics_resource_adaptor`).

use crate::adaptor::never_allocated;
use crate::error::{Error, Result};
use crate::resource::MemoryResource;
use crate::stream::CudaStreamView;
use slots::Counters;

mod slots;

/// The current, peak and total value of one quantity.
///
/// Signed like RMM's: an inner frame that frees memory allocated under an outer frame goes
/// negative, and merging it back on pop makes the outer frame exact again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counter {
    /// The current value.
    pub value: i64,
    /// The largest `value` seen in this frame.
    pub peak: i64,
    /// The sum of everything ever added in this frame.
    pub total: i64,
}

/// The single-lock arithmetic of RMM's adaptor, kept as the model the slotted counters are
/// tested against.
#[cfg(test)]
impl Counter {
    fn add(&mut self, n: i64) {
        self.value = self.value.saturating_add(n);
        self.total = self.total.saturating_add(n);
        self.peak = self.peak.max(self.value);
    }

    fn sub(&mut self, n: i64) {
        self.value = self.value.saturating_sub(n);
    }
}

impl Counter {
    /// Folds in the counter of the frame that was pushed on top of this one: the inner frame's
    /// peak happened on top of this frame's value at push time, which is still `self.value`
    /// because every change in between went to the inner frame.
    fn merge_inner(&mut self, inner: &Counter) {
        self.peak = self.peak.max(self.value.saturating_add(inner.peak));
        self.value = self.value.saturating_add(inner.value);
        self.total = self.total.saturating_add(inner.total);
    }
}

/// One frame of the counter stack: bytes and allocation counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CounterFrame {
    /// Bytes, counted as requested (not rounded up to the alignment).
    pub bytes: Counter,
    /// Number of allocations.
    pub allocations: Counter,
}

impl CounterFrame {
    fn merge_inner(&mut self, inner: &CounterFrame) {
        self.bytes.merge_inner(&inner.bytes);
        self.allocations.merge_inner(&inner.allocations);
    }
}

/// Counts bytes and allocations of its upstream's traffic: current value, peak and total.
///
/// Changes go to the top frame of a counter stack; [`push_counters`](Self::push_counters) starts a
/// fresh frame for a nested region and [`pop_counters`](Self::pop_counters) ends it, folding it into
/// the frame below. Only successful operations count: an allocation the upstream refuses and a free
/// the upstream rejects leave the counters as they were. As in RMM, a 0-byte request is passed to
/// the upstream and counted (one allocation of 0 bytes), and so is its free.
///
/// Threads count in slots of their own, merged when read: every query returns exactly what RMM's
/// adaptor would whenever no allocation or free is in flight, and a state the counters passed
/// through otherwise (see `statistics/slots.rs` for how the peak stays exact).
#[derive(Debug)]
pub struct StatisticsResourceAdaptor<U> {
    upstream: U,
    stack: Counters,
}

/// Sizes beyond `i64::MAX` cannot be allocated, so saturating here never loses a real count.
fn signed(bytes: usize) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

impl<U: MemoryResource> StatisticsResourceAdaptor<U> {
    /// Wraps `upstream` with one zeroed counter frame. Memory allocated from `upstream` before is
    /// not counted; do not free it through the adaptor.
    pub fn new(upstream: U) -> Self {
        StatisticsResourceAdaptor { upstream, stack: Counters::new() }
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }

    /// The byte counter of the top frame.
    pub fn bytes_counter(&self) -> Counter {
        self.stack.read(|_, top| top.bytes)
    }

    /// The allocation-count counter of the top frame.
    pub fn allocations_counter(&self) -> Counter {
        self.stack.read(|_, top| top.allocations)
    }

    /// Both counters of the top frame, read atomically together.
    pub fn counters(&self) -> CounterFrame {
        self.stack.read(|_, top| top)
    }

    /// Pushes a zeroed frame, which the getters report from now on. Returns the frame that was on
    /// top before the push.
    pub fn push_counters(&self) -> CounterFrame {
        self.stack.push()
    }

    /// Pops the top frame and returns it; the frame below inherits its counts (values and totals
    /// add, and the peak becomes the higher of its own and its value plus the popped peak).
    ///
    /// Errors with [`Error::InvalidArgument`] carrying [`POP_EMPTY_MESSAGE`] when only the first
    /// frame is left.
    pub fn pop_counters(&self) -> Result<CounterFrame> {
        self.stack.pop().ok_or_else(|| Error::InvalidArgument(POP_EMPTY_MESSAGE.into()))
    }
}

impl<U> StatisticsResourceAdaptor<U> {
    /// The bytes of the whole stack as one counter, as if no frame had been pushed: the value
    /// outstanding through the adaptor (every frame's value added), the peak reached since the top
    /// frame was pushed or its peaks reset (the frames below do not change meanwhile), and the
    /// total ever allocated.
    pub fn stack_bytes(&self) -> Counter {
        self.stack.read(|below, top| {
            let (value, total) = below
                .iter()
                .fold((0i64, 0i64), |(v, t), f| (v.saturating_add(f.bytes.value), t.saturating_add(f.bytes.total)));
            Counter {
                value: value.saturating_add(top.bytes.value),
                peak: value.saturating_add(top.bytes.peak),
                total: total.saturating_add(top.bytes.total),
            }
        })
    }

    /// Sets the peaks of the top frame to its current values (as `torch.cuda.reset_peak_memory_stats`
    /// does for PyTorch's counters); the frames below keep theirs.
    pub fn reset_peaks(&self) {
        self.stack.reset_peaks();
    }

    /// Counts an allocation the upstream made, as RMM does: after the upstream's call.
    #[inline]
    fn count_allocation(&self, bytes: usize) {
        self.stack.allocated(signed(bytes));
    }

    /// Counts a free the upstream took, as RMM does: after the upstream's call.
    #[inline]
    fn count_free(&self, bytes: usize) {
        self.stack.freed(signed(bytes));
    }
}

/// What [`StatisticsResourceAdaptor::pop_counters`] says when nothing was pushed: RMM's text, which
/// the C++ face throws as the `what()` of its `std::out_of_range`.
pub const POP_EMPTY_MESSAGE: &str = "cannot pop the last counter pair";

// SAFETY: blocks come from the upstream unchanged and go back to it; the accessibility answers
// are the upstream's.
unsafe impl<U: MemoryResource> MemoryResource for StatisticsResourceAdaptor<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<*mut u8> {
        // A 0-byte request goes to the upstream and counts as an allocation of 0 bytes, as in RMM.
        let ptr = self.upstream.allocate(bytes, alignment, stream)?;
        self.count_allocation(bytes);
        Ok(ptr)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<()> {
        if never_allocated(ptr, bytes) {
            return Ok(());
        }
        // Every other free counts, a null one of 0 bytes (what a 0-byte allocation may have
        // returned) included, as in RMM. Forward first: a free the upstream rejects as misuse
        // must leave the counters exact.
        self.upstream.deallocate(ptr, bytes, alignment, stream)?;
        self.count_free(bytes);
        Ok(())
    }

    /// The upstream's non-waiting allocation, counted as [`allocate`](Self::allocate) counts.
    /// Counted only after the upstream answered, in the calling thread's slot.
    #[inline]
    fn try_allocate_immediately(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Option<*mut u8> {
        let ptr = self.upstream.try_allocate_immediately(bytes, alignment, stream)?;
        self.count_allocation(bytes);
        Some(ptr)
    }

    /// The upstream's non-waiting free, counted as [`deallocate`](Self::deallocate) counts; false
    /// (nothing counted, nothing freed) where the upstream declines.
    #[inline]
    fn try_deallocate_immediately(&self, ptr: *mut u8, bytes: usize, alignment: usize, stream: CudaStreamView) -> bool {
        if never_allocated(ptr, bytes) {
            return false;
        }
        if !self.upstream.try_deallocate_immediately(ptr, bytes, alignment, stream) {
            return false;
        }
        self.count_free(bytes);
        true
    }

    adaptor_identity_and_access!(upstream);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(value: i64, peak: i64, total: i64) -> Counter {
        Counter { value, peak, total }
    }

    #[test]
    fn counter_arithmetic_matches_rmm() {
        let mut x = Counter::default();
        x.add(10);
        x.add(5);
        x.sub(12);
        assert_eq!(x, c(3, 15, 15));
        // The inner frame peaked at 7 on top of 3, and ended at -1 (freed outer memory).
        x.merge_inner(&c(-1, 7, 4));
        assert_eq!(x, c(2, 15, 19));
        x.merge_inner(&c(0, 20, 20));
        assert_eq!(x, c(2, 22, 39));
    }
}
