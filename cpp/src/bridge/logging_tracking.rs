//! Bridge functions of the tracking adaptor's outstanding-allocation map and of the logging
//! adaptor writing to C++ (a `std::ostream` or rapids_logger sinks).

use super::ffi::{self, TrackedAllocation};
use super::outcome::guard;
use super::resources::RustResource;
use rmm::adaptor::logging::LogSink;
use rmm::adaptor::tracking::AllocationRecord;
use rmm::adaptor::{LoggingResourceAdaptor, TrackingResourceAdaptor};
use rmm::error::Error;
use rmm::resource::SharedResource;
use std::backtrace::Backtrace;
use std::sync::Arc;

// SAFETY: the C++ sink is only called under the logging adaptor's lock, one thread at a time, and
// what it writes to (a std::ostream, rapids_logger sinks) may be used from any thread in turn.
unsafe impl Send for ffi::CppLogSink {}

type Tracking = TrackingResourceAdaptor<SharedResource>;
type Logging = LoggingResourceAdaptor<SharedResource>;

pub(crate) fn tracked_allocations(resource: &RustResource) -> Vec<TrackedAllocation> {
    guard(
        "tracked_allocations",
        |_| Vec::new(),
        || {
            resource
                .downcast::<Tracking>()
                .map_or_else(Vec::new, |t| t.outstanding_allocations().iter().map(tracked).collect())
        },
    )
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

/// Hands the log's lines to a C++ sink.
struct CppSink(cxx::UniquePtr<ffi::CppLogSink>);

fn sink_error(what: &str) -> std::io::Error {
    std::io::Error::other(format!("the C++ log sink threw while {what}"))
}

impl LogSink for CppSink {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        let sink = self.0.as_ref().ok_or_else(|| sink_error("writing (null sink)"))?;
        // The C++ side reads the `len` bytes at `data` during the call only.
        if sink.write_line(line.as_ptr() as usize, line.len()) {
            Ok(())
        } else {
            Err(sink_error("writing"))
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let sink = self.0.as_ref().ok_or_else(|| sink_error("flushing (null sink)"))?;
        if sink.flush() {
            Ok(())
        } else {
            Err(sink_error("flushing"))
        }
    }
}

pub(crate) fn new_logging_adaptor_to_sink(
    upstream: &RustResource,
    sink: cxx::UniquePtr<ffi::CppLogSink>,
    auto_flush: bool,
) -> Box<RustResource> {
    RustResource::make("logging_resource_adaptor", || {
        if sink.is_null() {
            return Err(Error::InvalidArgument("null log sink".into()));
        }
        let log = Logging::with_log_sink(upstream.shared()?.clone(), Box::new(CppSink(sink)), "<C++ sink>".into());
        Ok(Arc::new(log.with_auto_flush(auto_flush)) as SharedResource)
    })
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
