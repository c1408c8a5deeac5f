//! `statistics_resource_adaptor` in the adaptor family: its constructor and its counters.

use super::adaptors::AdaptorResource;
use super::ffi::{self, CounterPair, ErrorKind, Outcome};
use super::outcome::{answer, Context, Failure};
use super::resource::AnyResource;
use rmm::adaptor::{Counter as StatCounter, CounterFrame, StatisticsResourceAdaptor};
use rmm::error::Result;
use rmm::resource::SharedResource;
use std::sync::Arc;

type Statistics = StatisticsResourceAdaptor<SharedResource>;

/// A statistics adaptor over `upstream`.
pub(crate) fn new_statistics_adaptor(upstream: &AnyResource) -> Box<AdaptorResource> {
    AdaptorResource::make("statistics_resource_adaptor", || {
        Ok(Arc::new(Statistics::new(upstream.shared()?.clone())) as SharedResource)
    })
}

fn frame_to_pair(f: CounterFrame) -> CounterPair {
    let c = |c: StatCounter| ffi::Counter { value: c.value, peak: c.peak, total: c.total };
    CounterPair { bytes: c(f.bytes), allocations: c(f.allocations) }
}

impl AdaptorResource {
    fn statistics(&self, query: &str) -> Result<&Statistics> {
        self.resource().kind::<Statistics>(query, "statistics_resource_adaptor")
    }

    /// Runs `f` on the adaptor and writes its counters to `out`.
    fn with_counters(
        &self,
        query: &'static str,
        out: &mut CounterPair,
        f: impl FnOnce(&Statistics) -> std::result::Result<CounterFrame, Failure>,
    ) -> Outcome {
        answer(query, Context::Construct, || {
            *out = frame_to_pair(f(self.statistics(query)?)?);
            Ok(0)
        })
    }

    /// The counters of the current region.
    pub(crate) fn statistics_counters(&self, counters: &mut CounterPair) -> Outcome {
        self.with_counters("counters", counters, |s| Ok(s.counters()))
    }

    /// Starts a new region; `counters` gets those of the enclosing region as they were.
    pub(crate) fn statistics_push_counters(&self, counters: &mut CounterPair) -> Outcome {
        self.with_counters("push_counters", counters, |s| Ok(s.push_counters()))
    }

    /// Ends the innermost region; `popped` gets its counters. With no region pushed: out of range.
    pub(crate) fn statistics_pop_counters(&self, popped: &mut CounterPair) -> Outcome {
        self.with_counters("pop_counters", popped, |s| {
            s.pop_counters().map_err(|e| Failure::As(ErrorKind::OutOfRange, e))
        })
    }
}
