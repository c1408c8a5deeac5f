//! `rmm.pylibrmm.helper.parse_bytes`: sizes given as ints or as strings such as `"1GiB"`.

use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt, PyString};

/// A `size_t` (or `uintptr_t`) argument converted as RMM's Cython signatures convert one: an int
/// as it is (negative or too large: `OverflowError`); any other object through its `__int__`
/// (so a float is truncated: `1.5` is 1; NaN is a `ValueError`, infinity an `OverflowError`);
/// an object without `__int__` (a string, `None`) is a `TypeError`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CSize(pub usize);

impl<'a, 'py> FromPyObject<'a, 'py> for CSize {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_instance_of::<PyInt>() {
            return int_to_size(&obj);
        }
        let as_int = if obj.is_instance_of::<PyFloat>() || obj.get_type().hasattr("__int__")? {
            obj.call_method0("__int__")?
        } else {
            // Cython's own message for an object it cannot make an int of.
            return Err(PyTypeError::new_err("an integer is required"));
        };
        int_to_size(&as_int)
    }
}

/// A `bool` argument converted as Cython converts one: any object, for its truth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CBool(pub bool);

impl<'a, 'py> FromPyObject<'a, 'py> for CBool {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        obj.is_truthy().map(CBool)
    }
}

/// An int as a `size_t`: negative values and values past `usize::MAX` are `OverflowError`s.
fn int_to_size(obj: &Bound<'_, PyAny>) -> PyResult<CSize> {
    match obj.extract::<usize>() {
        Ok(n) => Ok(CSize(n)),
        Err(_) if obj.lt(0i32)? => Err(PyOverflowError::new_err("can't convert negative value to size_t")),
        Err(_) => Err(PyOverflowError::new_err("value too large to convert to size_t")),
    }
}

/// The multiplier of a (lower-case) byte suffix: SI (`kb` = 1000) and binary (`kib` = 1024).
fn multiplier(suffix: &str) -> Option<u64> {
    let (prefix, binary) = match suffix {
        "" | "b" => return Some(1),
        s if s.ends_with("ib") && s.len() == 3 => (&s[..1], true),
        s if s.ends_with('b') && s.len() == 2 => (&s[..1], false),
        _ => return None,
    };
    let power = "kmgtp".find(prefix)? as u32 + 1;
    Some(if binary { 1024u64.pow(power) } else { 1000u64.pow(power) })
}

/// Parses `"<number>[ ]<suffix>"`: a decimal number with an optional fraction, optional blanks,
/// and an optional case-insensitive suffix. Fractions are kept until the multiplication, so
/// `"1.5 KiB"` is 1536.
pub fn parse_size_str(s: &str) -> Option<u64> {
    let digits_end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (number, rest) = s.split_at(digits_end);
    if number.is_empty() || !number.starts_with(|c: char| c.is_ascii_digit()) || number.matches('.').count() > 1 {
        return None;
    }
    let suffix = rest.trim_start_matches([' ', '\t']).to_ascii_lowercase();
    let factor = multiplier(&suffix)?;
    let value: f64 = number.parse().ok()?;
    let bytes = value * factor as f64;
    (bytes.is_finite() && bytes < u64::MAX as f64).then_some(bytes as u64)
}

/// A size argument: an int (returned as it is) or a string parsed as above.
#[pyfunction]
pub fn parse_bytes(s: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    if s.is_instance_of::<PyInt>() {
        return Ok(s.clone().unbind());
    }
    // RMM matches a regular expression against anything not an int: other types are a TypeError.
    let text = s.cast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!(
            "expected string or bytes-like object, got '{}'",
            s.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    let text = text.to_str()?;
    match parse_size_str(text) {
        Some(n) => Ok(n.into_pyobject(s.py())?.into_any().unbind()),
        None => Err(PyValueError::new_err(format!("Could not parse {text} as a byte specification"))),
    }
}

/// A size argument as a `usize` (negative ints are an `OverflowError`, as for C's `size_t`).
pub fn size_arg(s: &Bound<'_, PyAny>) -> PyResult<usize> {
    let v = parse_bytes(s)?;
    size_t_arg(v.bind(s.py()))
}

/// An argument as a `usize`, converted as Cython converts a `size_t` (see [`CSize`]).
pub fn size_t_arg(v: &Bound<'_, PyAny>) -> PyResult<usize> {
    v.extract::<CSize>().map(|CSize(n)| n)
}

/// An int argument as an `i32`, failing as Cython's conversion to `int` does: `TypeError`
/// "an integer is required" for a non-int, `OverflowError` for one out of range.
pub fn c_int_arg(v: &Bound<'_, PyAny>) -> PyResult<i32> {
    let int = v.call_method0("__index__").map_err(|_| PyTypeError::new_err("an integer is required"))?;
    int.extract::<i32>().map_err(|_| PyOverflowError::new_err("value too large to convert to int"))
}

/// An optional size argument: `None` stays `None`.
pub fn optional_size_arg(s: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    match s {
        Some(s) if !s.is_none() => size_arg(s).map(Some),
        _ => Ok(None),
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_bytes, m)?)
}

#[cfg(test)]
mod tests {
    use super::parse_size_str;

    #[test]
    fn sizes_parse_as_rmm_documents() {
        assert_eq!(parse_size_str("100"), Some(100));
        assert_eq!(parse_size_str("1GiB"), Some(1 << 30));
        assert_eq!(parse_size_str("1 GB"), Some(1_000_000_000));
        assert_eq!(parse_size_str("1.5\tkib"), Some(1536));
        assert_eq!(parse_size_str("2mb"), Some(2_000_000));
        assert_eq!(parse_size_str("7B"), Some(7));
        assert_eq!(parse_size_str("1.kB"), Some(1000));
        for bad in ["", "GiB", "-1", "1 GiBs", "1xb", "1..2", ".5kb", "1 g"] {
            assert_eq!(parse_size_str(bad), None, "{bad}");
        }
    }
}
