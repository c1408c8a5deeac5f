//! Reading an RMM allocation log into operations that can be replayed without a lookup.
//!
//! The format is what `LoggingResourceAdaptor` (ours) and RMM's `logging_resource_adaptor` write:
//! a header naming the columns `Thread,Time,Action,Pointer,Size,Stream`, then one row per event.
//! Accepted leniently, because logs come from different writers:
//! - columns in any order, names matched without regard to case or surrounding spaces; `Action`,
//!   `Pointer`, `Size` and `Stream` are required, `Thread` and `Time` are optional;
//! - spaces around every field, blank lines, a trailing `\r`;
//! - **Pointer** and **Stream** in hexadecimal with or without `0x` (RMM prints the default stream
//!   as `0`), and a null pointer as `(nil)`, `nil`, `null` or `nullptr` (glibc's `%p` prints
//!   `(nil)`);
//! - **Size** in decimal;
//! - **Thread** and **Time** are not interpreted (RMM writes `HH:MM:SS.ffffff`, older versions
//!   `HH:MM:SS:ffffff`; threads are counted by their distinct values);
//! - **Action** `allocate`, `free` or `allocate failure` (a failed request: skipped, counted).
//!
//! A free of a null pointer is skipped (counted). Everything else that does not describe a
//! possible sequence of events is an error naming the line: a free of a pointer that is not live,
//! an allocation returning a pointer that is still live, a free whose size differs from the
//! allocation's, an allocation of bytes returning a null pointer.
//!
//! Each logged pointer is mapped to a *slot* (an index into the replay's pointer table), so the
//! replay does no hashing.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::BufRead;

/// What an operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Allocate `size` bytes into `slot`.
    Allocate,
    /// Free the block in `slot`, of `size` bytes.
    Free,
}

/// One replayable operation.
#[derive(Debug, Clone, Copy)]
pub struct Op {
    pub kind: Kind,
    /// Index into the replay's pointer table.
    pub slot: u32,
    /// Index into [`Log::streams`].
    pub stream: u32,
    pub size: usize,
}

/// A parsed log.
#[derive(Debug, Default)]
pub struct Log {
    /// The operations in file order.
    pub ops: Vec<Op>,
    /// The line (1-based) each operation came from.
    pub lines: Vec<u32>,
    /// The distinct stream handles of the log, in order of first appearance.
    pub streams: Vec<usize>,
    /// Size of the pointer table the replay needs (the most blocks live at once).
    pub slots: usize,
    /// Blocks still live at the end of the log: the replay frees them afterwards, untimed.
    pub live_at_end: Vec<Op>,
    /// The largest sum of the requested sizes of live blocks.
    pub peak_live_bytes: usize,
    /// Data rows read (not counting the header and blank lines).
    pub rows: usize,
    /// `allocate failure` rows (skipped).
    pub failures: usize,
    /// Frees of a null pointer (skipped).
    pub null_frees: usize,
    /// Distinct values of the Thread column (0 when there is no such column).
    pub threads: usize,
}

impl Log {
    /// Number of allocations among the operations.
    pub fn allocations(&self) -> usize {
        self.ops.iter().filter(|o| o.kind == Kind::Allocate).count()
    }

    /// Requested bytes of the blocks live at the end.
    pub fn live_bytes_at_end(&self) -> usize {
        self.live_at_end.iter().map(|o| o.size).sum()
    }
}

/// Why a log cannot be replayed, with the line (1-based; 0 when not about one line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, LogError> {
    Err(LogError { line, message: message.into() })
}

/// Where the columns are.
struct Columns {
    count: usize,
    thread: Option<usize>,
    action: usize,
    pointer: usize,
    size: usize,
    stream: usize,
}

const HEADER: &str = "Thread,Time,Action,Pointer,Size,Stream";

impl Columns {
    fn from_header(line: usize, text: &str) -> Result<Self, LogError> {
        let names: Vec<String> = text.split(',').map(|f| f.trim().to_ascii_lowercase()).collect();
        let find = |name: &str| names.iter().position(|n| n == name);
        let need = |name: &str, shown: &str| {
            find(name).map_or_else(
                || err(line, format!("the header '{text}' lacks the column {shown} (expected {HEADER})")),
                Ok,
            )
        };
        Ok(Columns {
            count: names.len(),
            thread: find("thread"),
            action: need("action", "Action")?,
            pointer: need("pointer", "Pointer")?,
            size: need("size", "Size")?,
            stream: need("stream", "Stream")?,
        })
    }
}

/// A pointer or stream handle: hexadecimal with or without `0x`, or a spelling of null.
pub fn parse_handle(field: &str) -> Option<usize> {
    let f = field.trim();
    if matches!(f.to_ascii_lowercase().as_str(), "(nil)" | "nil" | "null" | "nullptr") {
        return Some(0);
    }
    let digits = f.strip_prefix("0x").or_else(|| f.strip_prefix("0X")).unwrap_or(f);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    usize::from_str_radix(digits, 16).ok()
}

/// A live block of the log.
struct Live {
    slot: u32,
    size: usize,
    stream: u32,
    line: usize,
}

/// Reads a whole log. `reader` yields the file's bytes; errors name the line.
pub fn parse(reader: impl BufRead) -> Result<Log, LogError> {
    let mut log = Log::default();
    let mut columns: Option<Columns> = None;
    let mut live: HashMap<usize, Live> = HashMap::new();
    let mut free_slots: Vec<u32> = Vec::new();
    let mut stream_index: HashMap<usize, u32> = HashMap::new();
    let mut threads: HashSet<String> = HashSet::new();
    let mut live_bytes = 0usize;

    for (i, text) in reader.lines().enumerate() {
        let line = i + 1;
        let text = match text {
            Ok(t) => t,
            Err(e) => return err(line, format!("cannot read: {e}")),
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let Some(cols) = &columns else {
            columns = Some(Columns::from_header(line, text)?);
            continue;
        };
        log.rows += 1;
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        if fields.len() != cols.count {
            return err(
                line,
                format!("expected {} fields as in the header, found {}: '{text}'", cols.count, fields.len()),
            );
        }
        if let Some(t) = cols.thread {
            if !threads.contains(fields[t]) {
                threads.insert(fields[t].to_string());
            }
        }
        let action = fields[cols.action].to_ascii_lowercase();
        let kind = match action.as_str() {
            "allocate" => Kind::Allocate,
            "free" => Kind::Free,
            "allocate failure" => {
                log.failures += 1;
                continue;
            }
            _ => {
                return err(
                    line,
                    format!("unknown action '{}' (expected allocate, free or allocate failure)", fields[cols.action]),
                )
            }
        };
        let Some(ptr) = parse_handle(fields[cols.pointer]) else {
            return err(
                line,
                format!("bad Pointer '{}' (expected hexadecimal, e.g. 0x7f2a40000000)", fields[cols.pointer]),
            );
        };
        let Ok(size) = fields[cols.size].parse::<usize>() else {
            return err(line, format!("bad Size '{}' (expected a decimal number of bytes)", fields[cols.size]));
        };
        let Some(handle) = parse_handle(fields[cols.stream]) else {
            return err(line, format!("bad Stream '{}' (expected hexadecimal, e.g. 0x0)", fields[cols.stream]));
        };
        let next_stream = stream_index.len() as u32;
        let stream = *stream_index.entry(handle).or_insert_with(|| {
            log.streams.push(handle);
            next_stream
        });

        match kind {
            Kind::Allocate => {
                if ptr == 0 && size > 0 {
                    return err(line, format!("allocate of {size} bytes logged with a null pointer"));
                }
                if let Some(old) = live.get(&ptr) {
                    return err(
                        line,
                        format!(
                            "allocate returned {ptr:#x}, which is still live (allocated at line {}, not freed)",
                            old.line
                        ),
                    );
                }
                let slot = free_slots.pop().unwrap_or_else(|| {
                    log.slots += 1;
                    (log.slots - 1) as u32
                });
                if ptr != 0 {
                    live.insert(ptr, Live { slot, size, stream, line });
                } else {
                    // A zero-byte allocation returning null: replayed (it returns null) but never
                    // freed, since a free of null is skipped.
                    free_slots.push(slot);
                }
                live_bytes += size;
                log.peak_live_bytes = log.peak_live_bytes.max(live_bytes);
                log.ops.push(Op { kind, slot, stream, size });
                log.lines.push(line as u32);
                if ptr == 0 {
                    live_bytes -= size;
                }
            }
            Kind::Free => {
                if ptr == 0 {
                    log.null_frees += 1;
                    continue;
                }
                let Some(block) = live.remove(&ptr) else {
                    return err(
                        line,
                        format!("free of unknown pointer {ptr:#x}: not allocated earlier in the log, or already freed"),
                    );
                };
                if block.size != size {
                    return err(
                        line,
                        format!(
                            "free of {ptr:#x} with {size} bytes, but it was allocated with {} bytes at line {}",
                            block.size, block.line
                        ),
                    );
                }
                live_bytes -= size;
                free_slots.push(block.slot);
                log.ops.push(Op { kind, slot: block.slot, stream, size });
                log.lines.push(line as u32);
            }
        }
    }
    if columns.is_none() {
        return err(0, format!("empty log: no header line (expected {HEADER})"));
    }
    let mut rest: Vec<Live> = live.into_values().collect();
    rest.sort_by_key(|l| l.line);
    log.live_at_end =
        rest.into_iter().map(|l| Op { kind: Kind::Free, slot: l.slot, stream: l.stream, size: l.size }).collect();
    log.threads = threads.len();
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Log, LogError> {
        parse(s.as_bytes())
    }

    #[test]
    fn handles() {
        assert_eq!(parse_handle("0x7f00"), Some(0x7f00));
        assert_eq!(parse_handle(" 7F00 "), Some(0x7f00));
        assert_eq!(parse_handle("0"), Some(0));
        assert_eq!(parse_handle("(nil)"), Some(0));
        assert_eq!(parse_handle("0x"), None);
        assert_eq!(parse_handle("12g"), None);
    }

    #[test]
    fn slots_are_reused_and_peak_is_tracked() {
        let log = parse_str(
            "Thread,Time,Action,Pointer,Size,Stream\n\
             1,00:00:00.000001,allocate,0x100,10,0x0\n\
             1,00:00:00.000002,allocate,0x200,20,0x0\n\
             1,00:00:00.000003,free,0x100,10,0x0\n\
             2,00:00:00.000004,allocate,0x300,5,0x5\n\
             2,00:00:00.000005,allocate,0x100,1,0x5\n",
        )
        .unwrap();
        assert_eq!(log.ops.len(), 5);
        assert_eq!(log.slots, 2 + 1);
        assert_eq!(log.ops[3].slot, 0, "the freed slot is reused");
        assert_eq!(log.peak_live_bytes, 30);
        assert_eq!(log.streams, vec![0, 5]);
        assert_eq!(log.threads, 2);
        assert_eq!(log.live_at_end.len(), 3);
        assert_eq!(log.live_bytes_at_end(), 26);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_str("Thread,Time,Action,Pointer,Size,Stream\n\n1,t,free,0x10,4,0\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("unknown pointer 0x10"), "{e}");
        let e = parse_str("Thread,Time,Action,Pointer,Size\n").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.message.contains("lacks the column Stream"), "{e}");
    }
}
