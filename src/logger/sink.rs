//! Where the logger's lines go.

use super::file::{create_log_folders, open_log_file, LogFileMode};
use crate::error::Result;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The destination of a [`Logger`](super::Logger). Each line is one `write` call, unbuffered, so
/// lines are whole and none is lost when the process ends without a flush.
#[derive(Debug)]
pub enum Sink {
    /// Standard error.
    Stderr,
    /// A file.
    File {
        /// Its path, for messages.
        path: PathBuf,
        /// The open file.
        file: File,
    },
    /// Discards everything.
    Null,
}

impl Sink {
    /// A file sink; the file is created, and emptied first when `truncate` (else appended to).
    /// Missing folders above it are created, as RMM's spdlog sinks do ([`create_log_folders`]).
    /// Opened as every log file is ([`open_log_file`]): never through a symbolic link.
    ///
    /// Errors: [`Error::Io`](crate::Error::Io) naming the path when it cannot be opened.
    pub fn file(path: impl AsRef<Path>, truncate: bool) -> Result<Sink> {
        let path = path.as_ref().to_path_buf();
        let mode = if truncate { LogFileMode::Truncate } else { LogFileMode::Append };
        create_log_folders(&path);
        let file = open_log_file(&path, mode)?;
        Ok(Sink::File { path, file })
    }

    /// The file named by the environment variable `var` (emptied), as RMM's default sink; standard
    /// error when it is unset or empty, or when the file cannot be opened (said on standard error).
    pub fn from_env(var: &str) -> Sink {
        match std::env::var_os(var) {
            Some(name) if !name.is_empty() => Sink::file(&name, true).unwrap_or_else(|e| {
                eprintln!("rmm: {e} (the log file from {var}); logging to stderr");
                Sink::Stderr
            }),
            _ => Sink::Stderr,
        }
    }

    /// Writes `line` and an end of line in one call. Errors are dropped: logging never fails
    /// the operation that logs.
    pub(crate) fn write_line(&mut self, line: &str) {
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        let _ = match self {
            Sink::Stderr => io::stderr().lock().write_all(&buf),
            Sink::File { file, .. } => file.write_all(&buf),
            Sink::Null => Ok(()),
        };
    }

    /// Flushes what the destination buffers (nothing is buffered here).
    pub(crate) fn flush(&mut self) {
        let _ = match self {
            Sink::Stderr => io::stderr().flush(),
            Sink::File { file, .. } => file.flush(),
            Sink::Null => Ok(()),
        };
    }
}
