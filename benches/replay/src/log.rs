//! Reading an RMM allocation log into operations that can be replayed without a lookup.
//!
//! The format is what `LoggingResourceAdaptor` (ours) and RMM's `logging_resource_adaptor` write:
//! a header naming the columns `Thread,Time,Action,Pointer,Size,Stream`, then one row per event.
//! Accepted leniently, because logs come from different writers:
//! - columns in any order, names matched without regard to case or surrounding spaces; `Action`,
//!   `Pointer`, `Size` and `Stream` are required, `Thread` and `Time` are optional;
//! - CSV quoting (read by the `csv` crate): quoted names and fields (`"Thread","Time",...`), also
//!   with spaces before the opening quote; a quoted field may hold commas or line breaks;
//! - spaces around every field, blank lines, `\r\n` line ends, a UTF-8 byte order mark;
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
//! Line numbers count the file's lines (blank ones and those inside quoted fields included); a
//! row's line is the one it starts on.
//!
//! Each logged pointer is mapped to a *slot* (an index into the replay's pointer table), so the
//! replay does no hashing.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::io::Read;

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
    fn from_header(line: usize, fields: &[&str]) -> Result<Self, LogError> {
        let text = fields.join(",");
        let names: Vec<String> = fields.iter().map(|f| f.to_ascii_lowercase()).collect();
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

/// A field without its quotes where spaces came before the opening quote (`Thread, "Time"`): the
/// CSV reader keeps such quotes as text.
fn unquote(field: &str) -> &str {
    field.strip_prefix('"').and_then(|f| f.strip_suffix('"')).map_or(field, str::trim)
}

/// Hands the log's bytes to the CSV reader and notes where its line ends lie, so that a row gets
/// the line it starts on: the reader's own line count leaves out blank lines before a row and
/// counts `\r\n` wrongly.
struct LineCounter<R> {
    inner: R,
    /// Bytes read so far.
    offset: u64,
    /// Offsets of the `\n` and `\r` bytes not yet passed, with the byte.
    ends: VecDeque<(u64, u8)>,
    /// `\n` bytes passed.
    newlines: usize,
}

impl<R: Read> Read for LineCounter<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        for (i, &b) in buf[..n].iter().enumerate() {
            if b == b'\n' || b == b'\r' {
                self.ends.push_back((self.offset + i as u64, b));
            }
        }
        self.offset += n as u64;
        Ok(n)
    }
}

impl<R> LineCounter<R> {
    fn new(inner: R) -> Self {
        LineCounter { inner, offset: 0, ends: VecDeque::new(), newlines: 0 }
    }

    /// The line (1-based) of the first byte at or after `byte` that ends no line: the CSV reader
    /// places a record after the previous record's end, before any line ends it skips. Calls
    /// come with `byte` never decreasing.
    fn line_at(&mut self, byte: u64) -> usize {
        while let Some(&(at, b)) = self.ends.front() {
            if at >= byte {
                break;
            }
            self.newlines += usize::from(b == b'\n');
            self.ends.pop_front();
        }
        let mut line = self.newlines + 1;
        for (expected, &(at, b)) in (byte..).zip(&self.ends) {
            if at != expected {
                break;
            }
            line += usize::from(b == b'\n');
        }
        line
    }
}

/// Why the CSV reader stopped.
fn read_error<R>(e: &csv::Error, lines: &mut LineCounter<R>, at: u64) -> LogError {
    match e.kind() {
        csv::ErrorKind::Utf8 { pos, err } => LogError {
            line: lines.line_at(pos.as_ref().map_or(at, |p| p.byte())),
            message: format!("field {} is not UTF-8 text", err.field() + 1),
        },
        csv::ErrorKind::Io(io) => LogError { line: lines.line_at(at), message: format!("cannot read: {io}") },
        _ => LogError { line: lines.line_at(at), message: format!("cannot read: {e}") },
    }
}

/// A live block of the log.
struct Live {
    slot: u32,
    size: usize,
    stream: u32,
    line: usize,
}

/// Reads a whole log. `reader` yields the file's bytes; errors name the line.
pub fn parse(reader: impl Read) -> Result<Log, LogError> {
    let mut log = Log::default();
    let mut columns: Option<Columns> = None;
    let mut live: HashMap<usize, Live> = HashMap::new();
    let mut free_slots: Vec<u32> = Vec::new();
    let mut stream_index: HashMap<usize, u32> = HashMap::new();
    let mut threads: HashSet<String> = HashSet::new();
    let mut live_bytes = 0usize;

    // Headerless and flexible: the header is matched leniently here, and rows of the wrong length
    // get an error naming the header.
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(LineCounter::new(reader));
    let mut record = csv::StringRecord::new();
    loop {
        let at = csv.position().byte();
        match csv.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(read_error(&e, csv.get_mut(), at)),
        }
        let line = csv.get_mut().line_at(record.position().map_or(at, |p| p.byte()));
        let fields: Vec<&str> = record.iter().map(unquote).collect();
        if fields.len() == 1 && fields[0].is_empty() {
            // A line of spaces.
            continue;
        }
        let Some(cols) = &columns else {
            columns = Some(Columns::from_header(line, &fields)?);
            continue;
        };
        log.rows += 1;
        if fields.len() != cols.count {
            return err(
                line,
                format!(
                    "expected {} fields as in the header, found {}: '{}'",
                    cols.count,
                    fields.len(),
                    fields.join(",")
                ),
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

    #[test]
    fn quoted_header_and_fields() {
        let log = parse_str(
            "\"Thread\",\"Time\",\"Action\",\"Pointer\",\"Size\",\"Stream\"\n\
             \"1\",\"00:00:00.000001\",\"allocate\",\"0x100\",\"10\",\"0x0\"\n\
             2,\"t, with a comma\", \"free\", \"0x100\" ,10,\" 0x0 \"\n",
        )
        .unwrap();
        assert_eq!((log.ops.len(), log.threads, log.peak_live_bytes), (2, 2, 10));
        assert_eq!(log.ops[1].kind, Kind::Free);
        let e = parse_str("\"Thread\",\"Action\",\"Pointer\",\"Size\"\n").unwrap_err();
        assert_eq!(e.to_string(), "line 1: the header 'Thread,Action,Pointer,Size' lacks the column Stream (expected Thread,Time,Action,Pointer,Size,Stream)");
    }

    #[test]
    fn crlf_files() {
        let log = parse_str(
            "Thread,Time,Action,Pointer,Size,Stream\r\n1,t,allocate,0x100,10,0x0\r\n\r\n1,t,free,0x100,10,0x0\r\n",
        )
        .unwrap();
        assert_eq!(log.lines, vec![2, 4]);
        let e = parse_str("Thread,Time,Action,Pointer,Size,Stream\r\n\r\n1,t,allocate,0x100,ten,0x0\r\n").unwrap_err();
        assert_eq!(e.to_string(), "line 3: bad Size 'ten' (expected a decimal number of bytes)");
        // As some Windows programs write it: a byte order mark first.
        let log = parse_str("\u{feff}Thread,Time,Action,Pointer,Size,Stream\r\n1,t,allocate,0x100,10,0x0\r\n").unwrap();
        assert_eq!((log.lines.clone(), log.threads), (vec![2], 1));
    }

    #[test]
    fn line_numbers_count_blank_lines_and_quoted_line_breaks() {
        let text = "\n  \nThread,Time,Action,Pointer,Size,Stream\n\n\
                    1,\"a time\nover two lines\",allocate,0x100,10,0x0\n   \n\
                    1,t,allocate,0x200,10,0x0\n\
                    1,\"\n\",free,0x300,10,0x0\n";
        let e = parse_str(text).unwrap_err();
        assert_eq!(e.line, 9, "{e}");
        assert!(e.message.contains("unknown pointer 0x300"), "{e}");
        let log = parse_str(&text.replace("0x300", "0x200")).unwrap();
        assert_eq!(log.lines, vec![5, 8, 9]);
        assert_eq!(log.rows, 3);
        let e = parse_str("Thread,Time,Action,Pointer,Size,Stream\n\n\"1\",t,allocate,0x100,10\n").unwrap_err();
        assert_eq!(e.to_string(), "line 3: expected 6 fields as in the header, found 5: '1,t,allocate,0x100,10'");
    }

    #[test]
    fn bytes_that_are_not_text_name_the_line() {
        let e =
            parse(&b"Thread,Time,Action,Pointer,Size,Stream\n1,t,allocate,0x100,10,0\n1,\xff,free,0x100,10,0\n"[..])
                .unwrap_err();
        assert_eq!(e.to_string(), "line 3: field 2 is not UTF-8 text");
    }
}
