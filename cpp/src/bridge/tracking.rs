//! `tracking_resource_adaptor` in the adaptor family: its constructor, its allocated bytes and its map of outstanding
//! allocations (with the stacks captured for them).

use super::adaptors::AdaptorResource;
use super::ffi::{Outcome, TrackedAllocation};
use super::outcome::{answer, Context};
use super::resource::AnyResource;
use rmm::adaptor::tracking::AllocationRecord;
use rmm::adaptor::TrackingResourceAdaptor;
use rmm::resource::SharedResource;
use std::backtrace::Backtrace;
use std::sync::Arc;

type Tracking = TrackingResourceAdaptor<SharedResource>;

/// RMM's class name, which a query of it asked of another adaptor names.
const KIND: &str = "tracking_resource_adaptor";

/// A tracking adaptor over `upstream`, capturing a stack per allocation when `capture_stacks`.
pub(crate) fn new_tracking_adaptor(upstream: &AnyResource, capture_stacks: bool) -> Box<AdaptorResource> {
    AdaptorResource::make(KIND, || {
        Ok(Arc::new(Tracking::new(upstream.shared()?.clone(), capture_stacks)) as SharedResource)
    })
}

impl AdaptorResource {
    /// Bytes currently allocated through the adaptor.
    pub(crate) fn tracking_allocated_bytes(&self) -> Outcome {
        answer("get_allocated_bytes", Context::Construct, || {
            Ok(self.resource().kind::<Tracking>("get_allocated_bytes", KIND)?.allocated_bytes())
        })
    }

    /// The outstanding allocations, by address, into `out` (left empty on an error).
    pub(crate) fn tracked_allocations(&self, out: &mut Vec<TrackedAllocation>) -> Outcome {
        answer("get_outstanding_allocations", Context::Construct, || {
            let t = self.resource().kind::<Tracking>("get_outstanding_allocations", KIND)?;
            *out = t.outstanding_allocations().iter().map(tracked).collect();
            Ok(0)
        })
    }
}

fn tracked(r: &AllocationRecord) -> TrackedAllocation {
    TrackedAllocation {
        ptr: r.ptr,
        bytes: r.bytes,
        captured: r.stack.is_some(),
        frames: r.stack.as_deref().map_or_else(Vec::new, frames),
    }
}

/// The frames of `bt`, innermost first, each `symbol` or `symbol from file:line:column` (the
/// layout of RMM's stack_trace lines, `name from object`).
fn frames(bt: &Backtrace) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in bt.to_string().lines() {
        let line = line.trim();
        if let Some(at) = line.strip_prefix("at ") {
            if let Some(last) = out.last_mut() {
                last.push_str(" from ");
                last.push_str(at);
            }
        } else if let Some((index, symbol)) = line.split_once(": ") {
            if !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) {
                out.push(symbol.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_read_symbols_and_locations() {
        let bt = Backtrace::force_capture();
        let f = frames(&bt);
        let text = bt.to_string();
        let numbered =
            text.lines().filter(|l| l.trim().split_once(": ").is_some_and(|(i, _)| i.parse::<u32>().is_ok()));
        assert_eq!(f.len(), numbered.count(), "one entry per numbered frame: {text}");
        assert!(!f.is_empty());
        // A binary stripped of its symbols (the GPU package strips them) resolves no names, in
        // std's text as in ours: then only the frame count can be compared.
        if text.contains("frames_read_symbols_and_locations") {
            assert!(f.iter().any(|s| s.contains("frames_read_symbols_and_locations")), "{f:?}");
        }
    }
}
