//! `statistics_resource_adaptor`: its constructor and its counters.

use super::ffi::{self, CounterPair, ErrorKind, Outcome};
use super::handle::RustResource;
use super::outcome::{guard_outcome, what_of, Context};
use rmm::adaptor::{Counter as StatCounter, CounterFrame, StatisticsResourceAdaptor};
use rmm::error::Result;
use rmm::resource::SharedResource;
use std::sync::Arc;

type Statistics = StatisticsResourceAdaptor<SharedResource>;

/// A statistics adaptor over `upstream`.
pub(crate) fn new_statistics_adaptor(upstream: &RustResource) -> Box<RustResource> {
    RustResource::make("statistics_resource_adaptor", || {
        Ok(Arc::new(Statistics::new(upstream.shared()?.clone())) as SharedResource)
    })
}

fn statistics<'a>(r: &'a RustResource, query: &str) -> Result<&'a Statistics> {
    r.kind::<Statistics>(query, "statistics_resource_adaptor")
}

fn frame_to_pair(f: CounterFrame) -> CounterPair {
    let c = |c: StatCounter| ffi::Counter { value: c.value, peak: c.peak, total: c.total };
    CounterPair { bytes: c(f.bytes), allocations: c(f.allocations) }
}

/// Runs `f` on the adaptor and writes its counters to `out`; the wrong kind is a logic error.
fn with_counters(
    query: &'static str,
    r: &RustResource,
    out: &mut CounterPair,
    f: impl FnOnce(&Statistics) -> Result<CounterFrame>,
    kind_of_failure: ErrorKind,
) -> Outcome {
    guard_outcome(query, ErrorKind::Logic, || {
        let s = match statistics(r, query) {
            Ok(s) => s,
            Err(e) => return Outcome::from_error(&e, Context::Construct),
        };
        match f(s) {
            Ok(frame) => {
                *out = frame_to_pair(frame);
                Outcome::ok(0)
            }
            Err(e) => Outcome::error(kind_of_failure, what_of(&e)),
        }
    })
}

/// The counters of the current region.
pub(crate) fn statistics_counters(r: &RustResource, counters: &mut CounterPair) -> Outcome {
    with_counters("counters", r, counters, |s| Ok(s.counters()), ErrorKind::Logic)
}

/// Starts a new region; `counters` gets those of the enclosing region as they were.
pub(crate) fn statistics_push_counters(r: &RustResource, counters: &mut CounterPair) -> Outcome {
    with_counters("push_counters", r, counters, |s| Ok(s.push_counters()), ErrorKind::Logic)
}

/// Ends the innermost region; `popped` gets its counters. With no region pushed: out of range.
pub(crate) fn statistics_pop_counters(r: &RustResource, popped: &mut CounterPair) -> Outcome {
    with_counters("pop_counters", r, popped, |s| s.pop_counters(), ErrorKind::OutOfRange)
}
