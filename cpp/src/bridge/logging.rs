//! `logging_resource_adaptor` in the adaptor family: its constructors (to a file, or to C++ sinks: a `std::ostream` or
//! rapids_logger sinks) and its flush.

use super::adaptors::AdaptorResource;
use super::ffi::{self, Outcome};
use super::outcome::{answer, Context};
use super::resource::AnyResource;
use rmm::adaptor::logging::LogSink;
use rmm::adaptor::LoggingResourceAdaptor;
use rmm::error::Error;
use rmm::resource::SharedResource;
use std::path::Path;
use std::sync::Arc;

// SAFETY: the C++ sink is only called under the logging adaptor's lock, one thread at a time, and
// what it writes to (a std::ostream, rapids_logger sinks) may be used from any thread in turn.
unsafe impl Send for ffi::CppLogSink {}

type Logging = LoggingResourceAdaptor<SharedResource>;

/// RMM's class name, which a query of it asked of another adaptor names.
const KIND: &str = "logging_resource_adaptor";

/// Logs to the file `path`; as with RMM, a path that cannot be opened (the empty one too) fails.
pub(crate) fn new_logging_adaptor(upstream: &AnyResource, path: &str, auto_flush: bool) -> Box<AdaptorResource> {
    AdaptorResource::make(KIND, || {
        let log = Logging::new(upstream.shared()?.clone(), Some(Path::new(path)))?;
        Ok(Arc::new(log.with_auto_flush(auto_flush)) as SharedResource)
    })
}

impl AdaptorResource {
    /// Writes buffered lines out; the first failed write (since the last flush) is the error.
    pub(crate) fn logging_flush(&self) -> Outcome {
        answer("flush", Context::Construct, || {
            self.resource().kind::<Logging>("flush", KIND)?.flush()?;
            Ok(0)
        })
    }
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
    upstream: &AnyResource,
    sink: cxx::UniquePtr<ffi::CppLogSink>,
    auto_flush: bool,
) -> Box<AdaptorResource> {
    AdaptorResource::make(KIND, || {
        if sink.is_null() {
            return Err(Error::InvalidArgument("null log sink".into()));
        }
        let log = Logging::with_log_sink(upstream.shared()?.clone(), Box::new(CppSink(sink)), "<C++ sink>".into());
        Ok(Arc::new(log.with_auto_flush(auto_flush)) as SharedResource)
    })
}
