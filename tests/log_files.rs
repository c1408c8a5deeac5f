//! Every log file the library creates is opened without following a symbolic link at its path
//! and is created with mode 0644: the default logger's (`Sink::file`, `RMM_DEBUG_LOG_FILE`), the
//! logging adaptor's, and the arena's dump (the C API's event log: the C face's tests). A link at the path is an
//! `Error::Io` naming the path, and what it points to is left as it was.
//!
//! The arena test changes the working directory (the dump's name is relative, as RMM's); every
//! other test here uses absolute paths only.

use rmm::adaptor::LoggingResourceAdaptor;
use rmm::logger::{open_log_file, LogFileMode, Sink, LOG_FILE_PERMISSIONS};
use rmm::resource::{ArenaMemoryResource, HostMemoryResource};
use rmm::{CudaStreamView, Error, MemoryResource};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The arena's dump file, in the working directory (RMM's name).
const DUMP_FILE: &str = "rmm_arena_memory_dump.log";

/// Serialises the tests that change the umask or the working directory (process-wide).
static PROCESS_WIDE: Mutex<()> = Mutex::new(());

/// A fresh directory of its own for `name`.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rmm-log-files-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// In `dir`: `victim` holding `KEPT`, and `log` a symbolic link to it.
const KEPT: &str = "another user's file\n";
fn planted_link(dir: &Path) -> (PathBuf, PathBuf) {
    let (victim, log) = (dir.join("victim"), dir.join("rmm.log"));
    std::fs::write(&victim, KEPT).unwrap();
    std::os::unix::fs::symlink(&victim, &log).unwrap();
    (victim, log)
}

fn assert_refused_link(err: &Error, log: &Path) {
    match err {
        Error::Io { path, message } => {
            assert_eq!(path, &log.display().to_string());
            assert!(message.contains("symbolic link"), "{message}");
        }
        other => panic!("expected Io, got {other:?}"),
    }
}

#[test]
fn the_open_helper_refuses_a_link_in_both_modes() {
    let dir = fresh_dir("helper");
    let (victim, log) = planted_link(&dir);
    for mode in [LogFileMode::Truncate, LogFileMode::Append] {
        assert_refused_link(&open_log_file(&log, mode).unwrap_err(), &log);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), KEPT);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn logger_sinks_refuse_a_link() {
    let dir = fresh_dir("sink");
    let (victim, log) = planted_link(&dir);
    for truncate in [true, false] {
        assert_refused_link(&Sink::file(&log, truncate).unwrap_err(), &log);
    }
    // RMM_DEBUG_LOG_FILE naming a link: the default sink falls back to stderr.
    let var = "RMM_TEST_LINKED_DEBUG_LOG_FILE";
    std::env::set_var(var, &log);
    let sink = Sink::from_env(var);
    std::env::remove_var(var);
    assert!(matches!(sink, Sink::Stderr), "{sink:?}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), KEPT);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_logging_adaptor_refuses_a_link() {
    let dir = fresh_dir("adaptor");
    let (victim, log) = planted_link(&dir);
    let err = LoggingResourceAdaptor::new(HostMemoryResource::new(), Some(&log)).unwrap_err();
    assert_refused_link(&err, &log);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), KEPT, "not truncated through the link");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn new_log_files_get_mode_0644_whatever_the_umask_allows() {
    let _serial = PROCESS_WIDE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = fresh_dir("mode");
    // With no umask the mode asked for shows as it is (File::create would ask for 0666).
    // SAFETY: umask only swaps the process's mask; it is put back below.
    let old_mask = unsafe { libc::umask(0) };
    let sink = Sink::file(dir.join("sink.log"), false);
    let adaptor = LoggingResourceAdaptor::new(HostMemoryResource::new(), Some(&dir.join("adaptor.csv")));
    let helper = open_log_file(&dir.join("helper.log"), LogFileMode::Truncate);
    // SAFETY: as above.
    unsafe { libc::umask(old_mask) };
    let (_sink, _adaptor, _helper) = (sink.unwrap(), adaptor.unwrap(), helper.unwrap());
    assert_eq!(LOG_FILE_PERMISSIONS, 0o644);
    for name in ["sink.log", "adaptor.csv", "helper.log"] {
        let mode = std::fs::metadata(dir.join(name)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "{name}: {mode:o}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn truncate_and_append_are_kept() {
    let dir = fresh_dir("modes");
    let path = dir.join("rmm.log");
    std::fs::write(&path, "earlier\n").unwrap();
    {
        use std::io::Write;
        let mut f = open_log_file(&path, LogFileMode::Append).unwrap();
        f.write_all(b"appended\n").unwrap();
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "earlier\nappended\n");
    drop(LoggingResourceAdaptor::new(HostMemoryResource::new(), Some(&path)).unwrap());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "Thread,Time,Action,Pointer,Size,Stream\n", "emptied");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_arena_dump_is_not_written_through_a_link() {
    let _serial = PROCESS_WIDE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = fresh_dir("arena");
    let victim = dir.join("victim");
    std::fs::write(&victim, KEPT).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join(DUMP_FILE)).unwrap();
    let before = std::env::current_dir().unwrap();
    std::env::set_current_dir(&dir).unwrap();
    let arena = ArenaMemoryResource::new(HostMemoryResource::new(), Some(4 << 20), true).unwrap();
    let err = arena.allocate(64 << 20, 256, CudaStreamView::DEFAULT).unwrap_err();
    std::env::set_current_dir(&before).unwrap();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), KEPT, "the dump did not follow the link");

    // Without the link the dump is written (appended) as before.
    std::fs::remove_file(dir.join(DUMP_FILE)).unwrap();
    std::env::set_current_dir(&dir).unwrap();
    let err = arena.allocate(64 << 20, 256, CudaStreamView::DEFAULT).unwrap_err();
    std::env::set_current_dir(&before).unwrap();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
    let dump = std::fs::read_to_string(dir.join(DUMP_FILE)).unwrap();
    assert!(dump.contains(&format!("Failed to allocate {} bytes", 64 << 20)), "{dump}");
    std::fs::remove_dir_all(&dir).ok();
}
