//! A stack source for Rust and C++ callers: the native call stack, captured by the standard
//! library's unwinder and resolved at once (slow: about a millisecond per event; for finding
//! where memory goes, not for timing). Frames come innermost first, without the recorder's own.

use super::event::Frame;
use std::backtrace::Backtrace;

/// The native call stack of the caller, innermost frame first: function names as the symbol
/// table gives them (Rust demangled, C++ mangled), file and line where debug information has
/// them. Install it with [`Recorder::set_stack_source`](super::Recorder::set_stack_source).
pub fn native_stack() -> Vec<Frame> {
    parse(&Backtrace::force_capture().to_string())
}

/// Frames of the standard library's rendering of a backtrace: `N: name` lines, each followed by
/// an optional `at file:line:column` line.
fn parse(rendered: &str) -> Vec<Frame> {
    let mut frames: Vec<Frame> = Vec::new();
    for line in rendered.lines().map(str::trim) {
        if let Some(location) = line.strip_prefix("at ") {
            let mut parts = location.rsplitn(3, ':');
            let (_column, line_no, file) = (parts.next(), parts.next(), parts.next());
            if let (Some(frame), Some(file), Some(Ok(n))) = (frames.last_mut(), file, line_no.map(str::parse)) {
                frame.filename = file.to_string();
                frame.line = n;
            }
        } else if let Some((index, name)) = line.split_once(": ") {
            if index.chars().all(|c| c.is_ascii_digit()) {
                frames.push(Frame { filename: String::new(), line: 0, name: name.to_string() });
            }
        }
    }
    // The capture's own frames and the recorder's, at the top of the stack, are of no interest
    // to the reader.
    let own = |f: &Frame| f.name.starts_with("std::backtrace") || f.name.contains("rmm::history::");
    let first = frames.iter().take(16).rposition(own).map_or(0, |i| i + 1);
    frames.split_off(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_files_and_lines() {
        let text = "   0: std::backtrace::Backtrace::force_capture\n             at /rustc/x/library/std/src/backtrace.rs:312:13\n   1: rmm::history::native_stack::native_stack\n   2: app::step\n             at /src/app.rs:42:9\n   3: main\n";
        let frames = parse(text);
        assert_eq!(frames.len(), 2);
        assert_eq!(
            (frames[0].name.as_str(), frames[0].filename.as_str(), frames[0].line),
            ("app::step", "/src/app.rs", 42)
        );
        assert_eq!((frames[1].name.as_str(), frames[1].line), ("main", 0));
    }

    #[test]
    fn captures_the_caller() {
        let frames = native_stack();
        assert!(!frames.is_empty());
        assert!(frames.iter().all(|f| !f.name.starts_with("std::backtrace")));
    }
}
