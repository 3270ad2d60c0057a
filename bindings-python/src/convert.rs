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
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyInt, PyString, PyType};

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
#[inline]
pub fn i64_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    if let Some(v) = exact_int(obj) {
        return Ok(v);
    }
    int_like(obj, what)?;
    obj.extract::<i64>().map_err(|_| {
        PyValueError::new_err(format!("{what} does not fit in a signed 64-bit integer"))
    })
}

/// The value of an exact `int` that fits in 64 bits, read without pyo3's generic extraction
/// (the common case of every `now` and duration); `None` sends the caller to the full checks.
#[inline]
fn exact_int(obj: &Bound<'_, PyAny>) -> Option<i64> {
    let p = obj.as_ptr();
    // SAFETY: `p` is a live object; `PyLong_Type` is the interpreter's int type. An exact int is
    // never a bool (bool is a subclass). PyLong_AsLongLong only fails on overflow, whose error
    // is cleared here (the caller's slow path reports it).
    unsafe {
        if ffi::Py_TYPE(p) != std::ptr::addr_of_mut!(ffi::PyLong_Type) {
            return None;
        }
        let v = ffi::PyLong_AsLongLong(p);
        if v == -1 && !ffi::PyErr_Occurred().is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(v)
    }
}

/// Argument types read as the functions here read them, for a signature to take them directly
/// (`now: Now`): pyo3 adds the argument's name to an error as a note, the message is the same.
macro_rules! arg_types {
    ($($(#[$doc:meta])* $t:ident($inner:ty) = |$o:ident| $read:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $t(pub $inner);
        impl<'a, 'py> FromPyObject<'a, 'py> for $t {
            type Error = PyErr;
            #[inline]
            fn extract($o: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
                $read.map($t)
            }
        }
    )*};
}
arg_types! {
    /// `now` (milliseconds): an int, as [`i64_arg`] reads it.
    Now(i64) = |o| i64_arg(&o, "now");
    /// A `duration`, as [`duration_arg`] reads it.
    Dur(i64) = |o| duration_arg(&o, "duration");
    /// A cookie, as [`cookie_arg`] reads it.
    Ck(Cookie) = |o| cookie_arg(&o);
    /// A message `id`, as [`u64_arg`] reads it.
    Id(u64) = |o| u64_arg(&o, "id");
    /// A landlord id, as [`landlord_arg`] reads it.
    Ll(LandlordId) = |o| landlord_arg(&o);
    /// A wire encoding, as [`encoding_arg`] reads it.
    Enc(Encoding) = |o| encoding_arg(&o);
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
#[inline]
pub fn duration_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<i64> {
    if let Some(v) = exact_int(obj) {
        return Ok(v);
    }
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

/// A cookie: a `str` of 32 hex digits (either case), its 16 raw bytes (`bytes`, big-endian, as
/// `Grant.cookie_bytes` gives them), or the number itself (`int`).
///
/// A `str` is read in place (`PyUnicode_AsUTF8AndSize` hands out the ASCII it already holds) and
/// decoded with a table; anything unusual goes through the core's parser for its error message.
#[inline]
pub fn cookie_arg(obj: &Bound<'_, PyAny>) -> PyResult<Cookie> {
    let p = obj.as_ptr();
    // SAFETY: `p` is a live object. For an exact str, PyUnicode_AsUTF8AndSize returns a buffer
    // of `len` bytes owned by the str (alive while `obj` is), or NULL with an error set; for an
    // exact bytes object, PyBytes_AsString points at its `PyBytes_Size` bytes.
    unsafe {
        if ffi::Py_TYPE(p) == std::ptr::addr_of_mut!(ffi::PyUnicode_Type) {
            let mut len: ffi::Py_ssize_t = 0;
            let data = ffi::PyUnicode_AsUTF8AndSize(p, &mut len);
            if data.is_null() {
                let _ = PyErr::take(obj.py());
            } else if len == 32 {
                if let Some(v) = hex32(&*(data as *const [u8; 32])) {
                    return Ok(Cookie(v));
                }
            }
        } else if ffi::Py_TYPE(p) == std::ptr::addr_of_mut!(ffi::PyBytes_Type)
            && ffi::PyBytes_Size(p) == 16
        {
            let data = ffi::PyBytes_AsString(p) as *const [u8; 16];
            if !data.is_null() {
                return Ok(Cookie(u128::from_be_bytes(*data)));
            }
            let _ = PyErr::take(obj.py());
        }
    }
    cookie_slow(obj)
}

#[cold]
fn cookie_slow(obj: &Bound<'_, PyAny>) -> PyResult<Cookie> {
    if let Ok(s) = obj.cast::<PyString>() {
        let text = s.to_cow()?;
        return text.parse::<Cookie>().map_err(|e| to_py(obj.py(), &e));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return <[u8; 16]>::try_from(b.as_bytes()).map(|a| Cookie(u128::from_be_bytes(a))).map_err(
            |_| {
                to_py(
                    obj.py(),
                    &leasehold::LeaseError::InvalidArgument(format!(
                        "a cookie as bytes must be 16 bytes, got {}",
                        b.as_bytes().len()
                    )),
                )
            },
        );
    }
    if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>() {
        return obj.extract::<u128>().map(Cookie).map_err(|_| {
            to_py(
                obj.py(),
                &leasehold::LeaseError::InvalidArgument(
                    "a cookie as an int must be between 0 and 2**128 - 1".into(),
                ),
            )
        });
    }
    Err(PyTypeError::new_err(format!(
        "cookie must be a str of 32 hex digits, 16 bytes or an int, got {}",
        type_name(obj)
    )))
}

/// `b` in every byte of a `u64`.
const fn lanes(b: u8) -> u64 {
    b as u64 * 0x0101_0101_0101_0101
}

/// Eight hex digits (ASCII, either case, first digit most significant), eight at a time in a
/// `u64` (SWAR); `None` if any byte is not a hex digit.
#[inline]
fn hex8(chunk: [u8; 8]) -> Option<u32> {
    let x = u64::from_le_bytes(chunk);
    if x & lanes(0x80) != 0 {
        return None;
    }
    // With every byte below 0x80 no addition carries into the next byte: the top bit of
    // byte + (0x80 - lo) is set exactly when byte >= lo, of byte + (0x7f - hi) when byte > hi.
    let at_least = |lo: u8| x.wrapping_add(lanes(0x80 - lo));
    let above = |hi: u8| x.wrapping_add(lanes(0x7f - hi));
    let digit = at_least(b'0') & !above(b'9');
    let lower = at_least(b'a') & !above(b'f');
    let upper = at_least(b'A') & !above(b'F');
    if (digit | lower | upper) & lanes(0x80) != lanes(0x80) {
        return None;
    }
    // A digit's value is its low nibble; a letter's is its low nibble + 9 (letters have bit 6).
    let nibbles = (x & lanes(0x0f)) + ((x >> 6) & lanes(0x01)) * 9;
    // First digit to the top: byte 0 becomes the most significant, then pack nibble pairs.
    let n = nibbles.swap_bytes();
    let n = (n | (n >> 4)) & 0x00ff_00ff_00ff_00ff;
    let n = (n | (n >> 8)) & 0x0000_ffff_0000_ffff;
    let n = (n | (n >> 16)) & 0x0000_0000_ffff_ffff;
    Some(n as u32)
}

#[inline]
fn hex32(chars: &[u8; 32]) -> Option<u128> {
    let mut v: u128 = 0;
    for chunk in chars.chunks_exact(8) {
        let mut c = [0u8; 8];
        c.copy_from_slice(chunk);
        v = (v << 32) | u128::from(hex8(c)?);
    }
    Some(v)
}

/// The 16 raw bytes of a cookie (big-endian), as a Python `bytes`.
pub fn cookie_bytes(py: Python<'_>, cookie: Cookie) -> Bound<'_, PyBytes> {
    PyBytes::new(py, &cookie.0.to_be_bytes())
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

/// Reads keyword `settings` (the dict of a `**settings` signature) by name: `set(name, value)`
/// for each one given and not None (None keeps the default, as when not given); a name not in
/// `names` is a `TypeError`, as an unknown keyword argument is.
pub fn read_settings(
    settings: Option<&Bound<'_, PyDict>>,
    names: &[&str],
    mut set: impl FnMut(&str, &Bound<'_, PyAny>) -> PyResult<()>,
) -> PyResult<()> {
    for (k, v) in settings.iter().flat_map(|s| s.iter()) {
        let k: String = k.extract()?;
        if !names.contains(&k.as_str()) {
            return Err(PyTypeError::new_err(format!("unexpected keyword argument {k:?}")));
        }
        if !v.is_none() {
            set(&k, &v)?;
        }
    }
    Ok(())
}
