//! The default logger takes its file from `RMM_DEBUG_LOG_FILE` on first use, and lines from Rust
//! and from the C++ face (preformatted, through `Logger::write_line`) land in it in order. One
//! test in this binary, so that the variable is set before anything uses the logger.

use rmm::logger::{default_logger, Level, LOG_FILE_VAR};

#[test]
fn default_logger_writes_rust_and_cpp_lines_to_the_file_from_the_environment() {
    let path = std::env::temp_dir().join(format!("rmm-logger-env-{}.log", std::process::id()));
    std::fs::write(&path, "left over from an earlier run\n").unwrap();
    std::env::set_var(LOG_FILE_VAR, &path);

    let logger = default_logger();
    assert_eq!(logger.level(), Level::Info);
    rmm::log_debug!("hidden at the default level");
    rmm::log_warn!("from rust {}", 1);
    logger.write_line(Level::Error, "[    42][00:00:00:000000][error ] from c++");
    logger.set_level(Level::Error);
    rmm::log_warn!("hidden at level error");
    rmm::log_critical!("from rust {}", 2);
    logger.set_level(Level::Trace);
    rmm::log_trace!("from rust {}", 3);
    rmm::process_exit::mark_process_exiting(); // logs at debug
    logger.flush();

    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].ends_with("][warning] from rust 1"), "{text}");
    assert_eq!(lines[1], "[    42][00:00:00:000000][error ] from c++");
    assert!(lines[2].ends_with("][critical] from rust 2"), "{text}");
    assert!(lines[3].ends_with("][trace ] from rust 3"), "{text}");
    assert!(
        lines[4].ends_with("][debug ] process is exiting: resources leave the CUDA driver alone from now on"),
        "{text}"
    );
}
