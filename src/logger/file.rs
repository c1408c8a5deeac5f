//! Opening the files the library logs to: the default logger's (`RMM_DEBUG_LOG_FILE`), the logging
//! adaptor's (`RMM_LOG_FILE` or a name given), the arena's dump, the C API's event log and the
//! history adaptor's snapshots and out-of-memory dumps.
//!
//! Log paths often sit in shared directories (`/tmp`, a job's scratch directory). Opening them as
//! `File::create` does would follow a symbolic link planted there by another local user and write
//! (or truncate) whatever it points to. Every log file is therefore opened with `O_NOFOLLOW`: a
//! link at the path is refused with an error naming it; links in the directories above it are
//! followed as usual.

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::path::Path;

/// What happens to a log file that exists already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFileMode {
    /// Emptied first (RMM's `RMM_LOG_FILE`, `RMM_DEBUG_LOG_FILE` and event log).
    Truncate,
    /// Written after what it holds (RMM's arena dump).
    Append,
}

/// The permission bits of a log file the library creates, before the umask narrows them.
///
/// 0644 rather than 0600: the files hold addresses, sizes, stream handles, thread ids and times,
/// nothing a program's user handed it, and RMM's own files (spdlog, `fopen`'s 0666 under the usual
/// umask 022) come out 0644, so tools and colleagues that read them today still can. A user who
/// wants them private sets a stricter umask; a file that exists keeps its mode.
pub const LOG_FILE_PERMISSIONS: u32 = 0o644;

/// Creates the missing folders above the log file at `path` (mode 0755 before the umask), as
/// RMM's file sinks do (spdlog makes the containing folder before it opens a file). A folder that
/// cannot be made is not an error here: opening the file then fails and names the path.
pub fn create_log_folders(path: &Path) {
    let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) else { return };
    if parent.is_dir() {
        return;
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o755);
    }
    let _ = builder.create(parent);
}

/// Opens the log file at `path` for writing, creating it with [`LOG_FILE_PERMISSIONS`] when
/// missing, without following a symbolic link at `path`.
///
/// Errors: [`Error::Io`] naming the path when it cannot be opened; for a symbolic link the message
/// says so.
pub fn open_log_file(path: &Path, mode: LogFileMode) -> Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create(true);
    match mode {
        LogFileMode::Truncate => options.truncate(true),
        LogFileMode::Append => options.append(true),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW).mode(LOG_FILE_PERMISSIONS);
    }
    options.open(path).map_err(|e| {
        let is_link = std::fs::symlink_metadata(path).map(|m| m.file_type().is_symlink()).unwrap_or(false);
        let message = if is_link {
            "it is a symbolic link, which log files are never opened through (name the target instead)".to_string()
        } else {
            e.to_string()
        };
        Error::Io { path: path.display().to_string(), message }
    })
}
