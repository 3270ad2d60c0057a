//! Conversions between Python values and core types: integers, durations, cookies, bytes.
//!
//! Every function here turns a wrong type into `TypeError` and a wrong value into `ValueError` (or
//! one of leasehold's `ValueError` subclasses); none of them panics.

use std::borrow::Cow;

use leasehold::{Cookie, Encoding, LandlordId, SerialFormat};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyInt, PyString, PyType};

use crate::errors::to_py;

static TIMEDELTA: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn int_like(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<()> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("{what} must be an int, got {}", type_name(obj))));
    }
    Ok(())
}

/// The Python type name of `obj`, for messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".into())
}

/// A signed 64-bit integer argument (`now`, an expiration, an id). Out of range is `ValueError`.
pub fn i64_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    int_like(obj, what)?;
    obj.extract::<i64>().map_err(|_| {
        PyValueError::new_err(format!("{what} does not fit in a signed 64-bit integer"))
    })
}

/// An unsigned 64-bit integer argument.
pub fn u64_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    int_like(obj, what)?;
    obj.extract::<u64>()
        .map_err(|_| PyValueError::new_err(format!("{what} must be between 0 and 2**64 - 1")))
}

/// A count (`usize`) argument.
pub fn usize_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<usize> {
    int_like(obj, what)?;
    obj.extract::<usize>()
        .map_err(|_| PyValueError::new_err(format!("{what} must be a non-negative integer")))
}

/// A duration: int milliseconds (including `FOREVER` and `ANY`) or a non-negative `datetime.timedelta`.
pub fn duration_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>() {
        return obj.extract::<i64>().map_err(|_| {
            PyValueError::new_err(format!(
                "{what} does not fit in a signed 64-bit integer (use FOREVER)"
            ))
        });
    }
    let py = obj.py();
    let td = TIMEDELTA.import(py, "datetime", "timedelta")?;
    if obj.is_instance(td)? {
        let days: i64 = obj.getattr("days")?.extract()?;
        let seconds: i64 = obj.getattr("seconds")?.extract()?;
        let micros: i64 = obj.getattr("microseconds")?.extract()?;
        let ms =
            i128::from(days) * 86_400_000 + i128::from(seconds) * 1000 + i128::from(micros) / 1000;
        if ms < 0 {
            return Err(PyValueError::new_err(format!(
                "{what} must not be a negative timedelta (use ANY to let the landlord choose)"
            )));
        }
        return i64::try_from(ms).map_err(|_| {
            PyValueError::new_err(format!(
                "{what} is longer than a signed 64-bit millisecond count"
            ))
        });
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be int milliseconds or datetime.timedelta, got {}",
        type_name(obj)
    )))
}

/// A cookie: 32 hex digits (either case).
///
/// The common case reads the 32 characters straight out of the `str` (no UTF-8 copy, which the
/// limited API of Python 3.9 would otherwise need); anything else goes through the core's parser
/// for its error message.
pub fn cookie_arg(obj: &Bound<'_, PyAny>) -> PyResult<Cookie> {
    let s = obj.cast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!(
            "cookie must be a str of 32 hex digits, got {}",
            type_name(obj)
        ))
    })?;
    // SAFETY: `s` is a live str; the buffer holds exactly the 32 characters asked for and
    // PyUnicode_AsUCS4 writes at most `buflen` of them.
    unsafe {
        if ffi::PyUnicode_GetLength(s.as_ptr()) == 32 {
            let mut buf = [0 as ffi::Py_UCS4; 32];
            if ffi::PyUnicode_AsUCS4(s.as_ptr(), buf.as_mut_ptr(), 32, 0).is_null() {
                let _ = PyErr::take(obj.py());
            } else if let Some(v) = hex32(&buf) {
                return Ok(Cookie(v));
            }
        }
    }
    let text = s.to_cow()?;
    text.parse::<Cookie>().map_err(|e| to_py(obj.py(), &e))
}

fn hex32(chars: &[ffi::Py_UCS4; 32]) -> Option<u128> {
    let mut v: u128 = 0;
    for &ch in chars {
        let d = match ch {
            0x30..=0x39 => ch - 0x30,
            0x61..=0x66 => ch - 0x61 + 10,
            0x41..=0x46 => ch - 0x41 + 10,
            _ => return None,
        };
        v = (v << 4) | u128::from(d);
    }
    Some(v)
}

/// The text form of a cookie (32 lower-case hex digits), as the core writes it.
pub fn cookie_str(cookie: Cookie) -> String {
    cookie.to_string()
}

/// The text form of a cookie as a Python `str`, without going through the formatter.
pub fn cookie_py(py: Python<'_>, cookie: Cookie) -> Bound<'_, PyString> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 32];
    let v = cookie.0;
    for (i, b) in buf.iter_mut().enumerate() {
        *b = HEX[((v >> (124 - 4 * i)) & 0xf) as usize];
    }
    // ASCII hex digits are valid UTF-8.
    PyString::new(py, std::str::from_utf8(&buf).unwrap_or_default())
}

/// A landlord id: an int between 0 and 2**64 - 1.
pub fn landlord_arg(obj: &Bound<'_, PyAny>) -> PyResult<LandlordId> {
    u64_arg(obj, "landlord id").map(LandlordId)
}

/// A serial format: 1 (DURATION), 2 (ABSOLUTE), or the names "duration" and "absolute".
pub fn serial_format_arg(obj: &Bound<'_, PyAny>) -> PyResult<SerialFormat> {
    if let Ok(s) = obj.cast::<PyString>() {
        return match s.to_cow()?.to_ascii_lowercase().as_str() {
            "duration" => Ok(SerialFormat::Duration),
            "absolute" => Ok(SerialFormat::Absolute),
            other => Err(to_py(
                obj.py(),
                &leasehold::LeaseError::InvalidArgument(format!(
                    "serial format must be \"duration\" or \"absolute\", got {:?}",
                    other.chars().take(40).collect::<String>()
                )),
            )),
        };
    }
    let n = i64_arg(obj, "serial format")?;
    let n = i32::try_from(n).unwrap_or(0);
    SerialFormat::from_i32(n).map_err(|e| to_py(obj.py(), &e))
}

/// A wire encoding: "json" or "binary".
pub fn encoding_arg(obj: &Bound<'_, PyAny>) -> PyResult<Encoding> {
    let s = obj.cast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!(
            "encoding must be \"json\" or \"binary\", got {}",
            type_name(obj)
        ))
    })?;
    match s.to_cow()?.as_ref() {
        "json" => Ok(Encoding::Json),
        "binary" => Ok(Encoding::Binary),
        other => Err(PyValueError::new_err(format!(
            "encoding must be \"json\" or \"binary\", got {:?}",
            other.chars().take(40).collect::<String>()
        ))),
    }
}

/// Bytes from `bytes`, `bytearray` or `memoryview` (anything with the buffer protocol that
/// `bytes()` accepts is copied once).
pub fn bytes_arg<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Cow::Owned(b.to_vec()));
    }
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be bytes, bytearray or memoryview, got {}",
            type_name(obj)
        )));
    }
    let py = obj.py();
    let converted = py.get_type::<PyBytes>().call1((obj,)).map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be bytes, bytearray or memoryview, got {}",
            type_name(obj)
        ))
    })?;
    let b = converted.cast::<PyBytes>()?;
    Ok(Cow::Owned(b.as_bytes().to_vec()))
}

/// Text from `str`, or UTF-8 `bytes`.
pub fn text_arg<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Cow<'a, str>> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Cow::Owned(s.to_cow()?.into_owned()));
    }
    let b = bytes_arg(obj, what).map_err(|_| {
        PyTypeError::new_err(format!("{what} must be str or UTF-8 bytes, got {}", type_name(obj)))
    })?;
    match b {
        Cow::Borrowed(b) => std::str::from_utf8(b).map(Cow::Borrowed),
        Cow::Owned(v) => String::from_utf8(v).map(Cow::Owned).map_err(|e| e.utf8_error()),
    }
    .map_err(|_| to_py(obj.py(), &leasehold::LeaseError::Decode(format!("{what} is not UTF-8"))))
}
