//! What every section shares: time constants, cookies, library-owned buffers and strings,
//! decoding limits, the version, and a clock for hosts that want one.

use std::ffi::{c_char, CString};

use leasehold_core::lease::Cookie;
use leasehold_core::wire::Limits;

use crate::error::{guard, guard_void, leasehold_status, text, Fail, Out, Res};

/// `Lease.FOREVER`: a lease or duration that never ends (`INT64_MAX`).
pub const LEASEHOLD_FOREVER: i64 = i64::MAX;
/// `Lease.ANY`: a requested duration that lets the landlord choose.
pub const LEASEHOLD_ANY: i64 = -1;

/// Length of a cookie's text form: 32 lower-case hex digits, plus the terminating NUL.
pub const LEASEHOLD_COOKIE_HEX_SIZE: usize = 33;

/// Wire encoding: canonical JSON text.
pub const LEASEHOLD_ENCODING_JSON: i32 = 1;
/// Wire encoding: compact binary.
pub const LEASEHOLD_ENCODING_BINARY: i32 = 2;

/// A lease's key on its landlord: 128 unguessable bits, most significant byte first
/// (the order of the binary forms and of the hex text).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct leasehold_cookie {
    /// The 16 bytes, big-endian.
    pub bytes: [u8; 16],
}

impl From<Cookie> for leasehold_cookie {
    #[inline(always)]
    fn from(c: Cookie) -> Self {
        leasehold_cookie { bytes: c.0.to_be_bytes() }
    }
}

impl From<leasehold_cookie> for Cookie {
    #[inline(always)]
    fn from(c: leasehold_cookie) -> Self {
        Cookie(u128::from_be_bytes(c.bytes))
    }
}

/// Bounds enforced when decoding wire messages (and on the batches a landlord accepts from C).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct leasehold_limits {
    /// Largest encoded message accepted, in bytes.
    pub max_message_bytes: usize,
    /// Most leases in one batch.
    pub max_batch: usize,
    /// Largest resource description in a grant, in bytes.
    pub max_resource_bytes: usize,
}

impl From<Limits> for leasehold_limits {
    fn from(l: Limits) -> Self {
        leasehold_limits {
            max_message_bytes: l.max_message_bytes,
            max_batch: l.max_batch,
            max_resource_bytes: l.max_resource_bytes,
        }
    }
}

impl From<leasehold_limits> for Limits {
    fn from(l: leasehold_limits) -> Self {
        Limits {
            max_message_bytes: l.max_message_bytes,
            max_batch: l.max_batch,
            max_resource_bytes: l.max_resource_bytes,
        }
    }
}

/// Limits from an optional pointer: NULL means the defaults.
///
/// # Safety
/// `p` is NULL or points to a valid `leasehold_limits`.
pub(crate) unsafe fn limits_or_default(p: *const leasehold_limits) -> Limits {
    match unsafe { p.as_ref() } {
        Some(l) => Limits::from(*l),
        None => Limits::default(),
    }
}

/// The wire encoding of a number.
pub(crate) fn encoding(n: i32) -> Res<leasehold_core::Encoding> {
    match n {
        LEASEHOLD_ENCODING_JSON => Ok(leasehold_core::Encoding::Json),
        LEASEHOLD_ENCODING_BINARY => Ok(leasehold_core::Encoding::Binary),
        _ => Err(Fail::invalid(format!(
            "encoding must be LEASEHOLD_ENCODING_JSON (1) or LEASEHOLD_ENCODING_BINARY (2), got {n}"
        ))),
    }
}

/// A byte vector as C will own it: the pointer and length, to be freed by
/// `leasehold_bytes_free`.
pub(crate) fn take_bytes(v: Vec<u8>) -> (*mut u8, usize) {
    let b = v.into_boxed_slice();
    let n = b.len();
    (Box::into_raw(b).cast::<u8>(), n)
}

/// Hands a byte vector to C through two outputs (see [`take_bytes`]).
///
/// # Safety
/// The outputs point to writable memory.
pub(crate) unsafe fn give_bytes(v: Vec<u8>, data: Out<*mut u8>, len: Out<usize>) {
    let (p, n) = take_bytes(v);
    unsafe {
        data.write(p);
        len.write(n);
    }
}

/// Hands a string to C, to be freed by `leasehold_string_free`.
pub(crate) fn c_string(s: String) -> Res<*mut c_char> {
    CString::new(s).map(CString::into_raw).map_err(|_| Fail::invalid("text contains a NUL byte"))
}

/// The body of a call that answers with bytes for the caller: `out_data` and `out_len` are
/// checked for NULL first, then `f` runs, and its bytes are handed over.
///
/// # Safety
/// The outputs are NULL or writable.
pub(crate) unsafe fn bytes_out(
    out_data: *mut *mut u8,
    out_len: *mut usize,
    f: impl FnOnce() -> Res<Vec<u8>>,
) -> leasehold_status {
    guard(|| {
        let d = Out::new(out_data, "out_data")?;
        let n = Out::new(out_len, "out_len")?;
        let v = f()?;
        unsafe { give_bytes(v, d, n) };
        Ok(())
    })
}

/// Frees a buffer that libleasehold returned (`data` and the length it gave). NULL is ignored.
///
/// # Safety
/// `data` and `len` are exactly a pair returned by libleasehold, not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_bytes_free(data: *mut u8, len: usize) {
    guard_void(|| {
        if !data.is_null() {
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(data, len)) });
        }
    })
}

/// Frees a string that libleasehold returned. NULL is ignored.
///
/// # Safety
/// `s` was returned by libleasehold as an owned string and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_string_free(s: *mut c_char) {
    guard_void(|| {
        if !s.is_null() {
            drop(unsafe { CString::from_raw(s) });
        }
    })
}

/// The library's version, e.g. "0.1.0". Static; do not free.
#[no_mangle]
pub extern "C" fn leasehold_version() -> *const c_char {
    static V: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    V.as_ptr().cast()
}

/// The default decoding limits (1 MiB messages, 10 000 leases per batch, 64 KiB resources).
///
/// # Safety
/// `out` is NULL or points to writable memory for a `leasehold_limits`.
#[no_mangle]
pub unsafe extern "C" fn leasehold_limits_default(out: *mut leasehold_limits) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        unsafe { out.write(Limits::default().into()) };
        Ok(())
    })
}

/// Writes a cookie as 32 lower-case hex digits and a NUL into `buf` of `buf_len` bytes
/// (at least `LEASEHOLD_COOKIE_HEX_SIZE`, else `BUFFER_TOO_SMALL`).
///
/// # Safety
/// `buf` is NULL or points to `buf_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn leasehold_cookie_to_hex(
    cookie: leasehold_cookie,
    buf: *mut c_char,
    buf_len: usize,
) -> leasehold_status {
    guard(|| {
        if buf.is_null() {
            return Err(crate::error::null("buf"));
        }
        if buf_len < LEASEHOLD_COOKIE_HEX_SIZE {
            return Err(Fail::new(
                leasehold_status::LEASEHOLD_STATUS_BUFFER_TOO_SMALL,
                format!("a cookie needs {LEASEHOLD_COOKIE_HEX_SIZE} bytes, buffer has {buf_len}"),
            ));
        }
        let hex = Cookie::from(cookie).to_string();
        unsafe {
            std::ptr::copy_nonoverlapping(hex.as_ptr(), buf.cast::<u8>(), hex.len());
            *buf.add(hex.len()) = 0;
        }
        Ok(())
    })
}

/// Reads a cookie from exactly 32 hex digits (`len` bytes of `hex`, no NUL needed).
///
/// # Safety
/// `hex` is NULL or points to `len` readable bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_cookie_from_hex(
    hex: *const c_char,
    len: usize,
    out: *mut leasehold_cookie,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let s = unsafe { text(hex, len, "hex") }?;
        let c: Cookie = s.parse()?;
        unsafe { out.write(c.into()) };
        Ok(())
    })
}

/// Milliseconds since the Unix epoch on the system clock: a ready `now` for hosts that use epoch
/// time. The core itself never reads a clock; every call takes `now` from the host.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_clock_now_ms(out: *mut i64) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| Fail::invalid(format!("system clock is before 1970: {e}")))?;
        unsafe { out.write(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)) };
        Ok(())
    })
}
