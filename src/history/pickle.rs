//! A Python pickle writer for the values a snapshot holds: `None`, booleans, integers, floats,
//! strings, lists, tuples and dictionaries, in protocol 2 (read by every Python 3).
//!
//! Each value is written without the memo: containers open with their empty form (`]`, `}`),
//! a `MARK`, their items and one `APPENDS`/`SETITEMS`; integers take the shortest of `BININT1`,
//! `BININT` and `LONG1` (little-endian two's complement), so 48-bit device addresses stay exact.

use std::borrow::Cow;

/// A value to pickle.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Python's `None`.
    None,
    /// `True` or `False`.
    Bool(bool),
    /// An integer (wide enough for every address and size).
    Int(i128),
    /// A float.
    Float(f64),
    /// A `str` (a dictionary key or a constant is borrowed, not copied).
    Str(Cow<'static, str>),
    /// A `list`.
    List(Vec<Value>),
    /// A `tuple`.
    Tuple(Vec<Value>),
    /// A `dict`, its entries in this order.
    Dict(Vec<(Value, Value)>),
}

impl Value {
    /// A `str`.
    pub fn str(s: impl Into<Cow<'static, str>>) -> Value {
        Value::Str(s.into())
    }

    /// An integer from any unsigned count or address.
    pub fn int(n: impl Into<i128>) -> Value {
        Value::Int(n.into())
    }

    /// A dictionary with string keys.
    pub fn dict(entries: impl IntoIterator<Item = (&'static str, Value)>) -> Value {
        Value::Dict(entries.into_iter().map(|(k, v)| (Value::str(k), v)).collect())
    }
}

const PROTO: u8 = 0x80;
const STOP: u8 = b'.';
const NONE: u8 = b'N';
const NEWTRUE: u8 = 0x88;
const NEWFALSE: u8 = 0x89;
const BININT1: u8 = b'K';
const BININT: u8 = b'J';
const LONG1: u8 = 0x8a;
const BINFLOAT: u8 = b'G';
const BINUNICODE: u8 = b'X';
const EMPTY_LIST: u8 = b']';
const EMPTY_DICT: u8 = b'}';
const EMPTY_TUPLE: u8 = b')';
const MARK: u8 = b'(';
const APPENDS: u8 = b'e';
const SETITEMS: u8 = b'u';
const TUPLE: u8 = b't';

/// `value` as a complete pickle (protocol 2), ready for `pickle.loads`.
pub fn to_pickle(value: &Value) -> Vec<u8> {
    let mut out = vec![PROTO, 2];
    write(&mut out, value);
    out.push(STOP);
    out
}

fn write(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::None => out.push(NONE),
        Value::Bool(b) => out.push(if *b { NEWTRUE } else { NEWFALSE }),
        Value::Int(n) => write_int(out, *n),
        Value::Float(x) => {
            out.push(BINFLOAT);
            out.extend_from_slice(&x.to_be_bytes());
        }
        Value::Str(s) => {
            out.push(BINUNICODE);
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        Value::List(items) => {
            out.push(EMPTY_LIST);
            if !items.is_empty() {
                out.push(MARK);
                items.iter().for_each(|v| write(out, v));
                out.push(APPENDS);
            }
        }
        Value::Tuple(items) => {
            if items.is_empty() {
                out.push(EMPTY_TUPLE);
            } else {
                out.push(MARK);
                items.iter().for_each(|v| write(out, v));
                out.push(TUPLE);
            }
        }
        Value::Dict(entries) => {
            out.push(EMPTY_DICT);
            if !entries.is_empty() {
                out.push(MARK);
                for (k, v) in entries {
                    write(out, k);
                    write(out, v);
                }
                out.push(SETITEMS);
            }
        }
    }
}

fn write_int(out: &mut Vec<u8>, n: i128) {
    if (0..256).contains(&n) {
        out.extend_from_slice(&[BININT1, n as u8]);
    } else if let Ok(small) = i32::try_from(n) {
        out.push(BININT);
        out.extend_from_slice(&small.to_le_bytes());
    } else {
        // The fewest little-endian bytes whose top bit is the sign.
        let bytes = n.to_le_bytes();
        let mut len = bytes.len();
        while len > 1 {
            let top = bytes[len - 1];
            let next_sign = bytes[len - 2] & 0x80;
            if (top == 0 && next_sign == 0) || (top == 0xff && next_sign != 0) {
                len -= 1;
            } else {
                break;
            }
        }
        out.extend_from_slice(&[LONG1, len as u8]);
        out.extend_from_slice(&bytes[..len]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_take_the_shortest_form() {
        let mut out = Vec::new();
        write_int(&mut out, 7);
        assert_eq!(out, [BININT1, 7]);
        out.clear();
        write_int(&mut out, -1);
        assert_eq!(out, [BININT, 0xff, 0xff, 0xff, 0xff]);
        out.clear();
        write_int(&mut out, 0x7f00_0000_0000);
        assert_eq!(out, [LONG1, 6, 0, 0, 0, 0, 0, 0x7f]);
        out.clear();
        write_int(&mut out, 0x8000_0000);
        assert_eq!(out, [LONG1, 5, 0, 0, 0, 0x80, 0]);
        out.clear();
        write_int(&mut out, -0x8000_0001);
        assert_eq!(out, [LONG1, 5, 0xff, 0xff, 0xff, 0x7f, 0xff]);
    }

    #[test]
    fn containers_open_mark_and_close() {
        let v = Value::dict([("a", Value::List(vec![Value::None, Value::Bool(true)])), ("t", Value::Tuple(vec![]))]);
        let p = to_pickle(&v);
        assert_eq!(&p[..3], &[PROTO, 2, EMPTY_DICT]);
        assert_eq!(*p.last().unwrap(), STOP);
    }
}
