//! Status codes, the thread-local last error message, the panic boundary, and argument checks.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use leasehold_core::{ErrorCode, LeaseError};

/// What every call of libleasehold returns.
///
/// Values 0 to 6 are the core's stable error codes (`ErrorCode`); values from 100 up are the
/// binding's own. The numbers never change once released; new ones are only appended.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum leasehold_status {
    /// Success.
    LEASEHOLD_STATUS_OK = 0,
    /// The lease is unknown to its grantor: never granted, cancelled, or expired.
    LEASEHOLD_STATUS_UNKNOWN_LEASE = 1,
    /// The grantor refused; a denied renewal leaves the lease as it was.
    LEASEHOLD_STATUS_LEASE_DENIED = 2,
    /// Some leases of a batch failed; each result says which and why.
    LEASEHOLD_STATUS_LEASE_MAP = 3,
    /// A bad argument: negative duration other than ANY, out-of-range value, oversized batch.
    LEASEHOLD_STATUS_INVALID_ARGUMENT = 4,
    /// Bytes or text that do not decode: malformed, truncated, oversized, another version.
    LEASEHOLD_STATUS_DECODE = 5,
    /// An indefinite failure (transport error, time-out): worth retrying.
    LEASEHOLD_STATUS_INDEFINITE = 6,
    /// A required pointer argument was NULL.
    LEASEHOLD_STATUS_NULL_ARGUMENT = 100,
    /// Text passed in is not valid UTF-8.
    LEASEHOLD_STATUS_INVALID_UTF8 = 101,
    /// A caller-supplied buffer is too small for the answer.
    LEASEHOLD_STATUS_BUFFER_TOO_SMALL = 102,
    /// The handle cannot take this call now: a callback freed it (the call that ran the
    /// callback is still on the stack; the memory goes when it returns), or its state is in use
    /// further up this thread's stack. Nothing was done.
    LEASEHOLD_STATUS_BUSY = 103,
    /// A durable landlord's store could not be read or written: a file operation failed, a
    /// store callback returned non-zero, or the directory is locked by another process. After a
    /// failed commit nothing more is acknowledged: free the landlord and open the store again.
    LEASEHOLD_STATUS_IO = 104,
    /// A bug inside libleasehold was caught at the boundary; the handle involved should be freed.
    LEASEHOLD_STATUS_PANIC = 199,
}

use leasehold_status as S;

impl leasehold_status {
    /// The status of a core error code.
    pub(crate) fn from_code(code: ErrorCode) -> leasehold_status {
        match code {
            ErrorCode::Ok => S::LEASEHOLD_STATUS_OK,
            ErrorCode::UnknownLease => S::LEASEHOLD_STATUS_UNKNOWN_LEASE,
            ErrorCode::LeaseDenied => S::LEASEHOLD_STATUS_LEASE_DENIED,
            ErrorCode::LeaseMap => S::LEASEHOLD_STATUS_LEASE_MAP,
            ErrorCode::InvalidArgument => S::LEASEHOLD_STATUS_INVALID_ARGUMENT,
            ErrorCode::Decode => S::LEASEHOLD_STATUS_DECODE,
            ErrorCode::Indefinite => S::LEASEHOLD_STATUS_INDEFINITE,
        }
    }

    /// The status of any number (unknown numbers read as DECODE, like the core's `from_code`).
    pub(crate) fn from_i32(n: i32) -> leasehold_status {
        match n {
            100 => S::LEASEHOLD_STATUS_NULL_ARGUMENT,
            101 => S::LEASEHOLD_STATUS_INVALID_UTF8,
            102 => S::LEASEHOLD_STATUS_BUFFER_TOO_SMALL,
            103 => S::LEASEHOLD_STATUS_BUSY,
            104 => S::LEASEHOLD_STATUS_IO,
            199 => S::LEASEHOLD_STATUS_PANIC,
            n => match ErrorCode::from_i32(n) {
                Some(c) => leasehold_status::from_code(c),
                None => S::LEASEHOLD_STATUS_DECODE,
            },
        }
    }

    fn name(self) -> &'static std::ffi::CStr {
        match self {
            S::LEASEHOLD_STATUS_OK => c"OK",
            S::LEASEHOLD_STATUS_UNKNOWN_LEASE => c"UNKNOWN_LEASE",
            S::LEASEHOLD_STATUS_LEASE_DENIED => c"LEASE_DENIED",
            S::LEASEHOLD_STATUS_LEASE_MAP => c"LEASE_MAP",
            S::LEASEHOLD_STATUS_INVALID_ARGUMENT => c"INVALID_ARGUMENT",
            S::LEASEHOLD_STATUS_DECODE => c"DECODE",
            S::LEASEHOLD_STATUS_INDEFINITE => c"INDEFINITE",
            S::LEASEHOLD_STATUS_NULL_ARGUMENT => c"NULL_ARGUMENT",
            S::LEASEHOLD_STATUS_INVALID_UTF8 => c"INVALID_UTF8",
            S::LEASEHOLD_STATUS_BUFFER_TOO_SMALL => c"BUFFER_TOO_SMALL",
            S::LEASEHOLD_STATUS_BUSY => c"BUSY",
            S::LEASEHOLD_STATUS_IO => c"IO",
            S::LEASEHOLD_STATUS_PANIC => c"PANIC",
        }
    }
}

/// A failed call: its status and message.
#[derive(Debug)]
pub(crate) struct Fail {
    pub status: leasehold_status,
    pub message: String,
}

impl Fail {
    pub fn new(status: leasehold_status, message: impl Into<String>) -> Fail {
        Fail { status, message: message.into() }
    }
    pub fn invalid(message: impl Into<String>) -> Fail {
        Fail::new(S::LEASEHOLD_STATUS_INVALID_ARGUMENT, message)
    }
}

impl From<LeaseError> for Fail {
    fn from(e: LeaseError) -> Fail {
        Fail { status: leasehold_status::from_code(e.code()), message: e.to_string() }
    }
}

impl From<&LeaseError> for Fail {
    fn from(e: &LeaseError) -> Fail {
        Fail { status: leasehold_status::from_code(e.code()), message: e.to_string() }
    }
}

pub(crate) type Res<T = ()> = Result<T, Fail>;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

pub(crate) fn set_last_error(message: &str) {
    // Interior NULs cannot appear in a C string: cut there.
    let bytes = message.as_bytes();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let c = CString::new(&bytes[..end]).unwrap_or_default();
    LAST_ERROR.with(|l| *l.borrow_mut() = c);
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panic inside libleasehold: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panic inside libleasehold: {s}")
    } else {
        "panic inside libleasehold".to_string()
    }
}

/// Runs the body of an exported function: turns its error into a status and the thread's last
/// error message, and catches any panic so that none crosses into C.
#[inline(always)]
pub(crate) fn guard(f: impl FnOnce() -> Res) -> leasehold_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => S::LEASEHOLD_STATUS_OK,
        Ok(Err(fail)) => {
            set_last_error(&fail.message);
            fail.status
        }
        Err(payload) => {
            set_last_error(&panic_message(payload.as_ref()));
            S::LEASEHOLD_STATUS_PANIC
        }
    }
}

/// Like [`guard`] for functions that return nothing (the `_free` functions): a panic is
/// swallowed and recorded as the last error.
pub(crate) fn guard_void(f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        set_last_error(&panic_message(payload.as_ref()));
    }
}

// ---------- argument checks ----------

pub(crate) fn null(name: &str) -> Fail {
    Fail::new(S::LEASEHOLD_STATUS_NULL_ARGUMENT, format!("{name} is NULL"))
}

/// A shared reference from a pointer the caller promises is valid or NULL.
///
/// # Safety
/// `p` is NULL or points to a live, properly aligned `T` for the duration of the call.
#[inline(always)]
pub(crate) unsafe fn arg<'a, T>(p: *const T, name: &str) -> Res<&'a T> {
    unsafe { p.as_ref() }.ok_or_else(|| null(name))
}

/// An exclusive reference from a pointer the caller promises is valid or NULL.
///
/// # Safety
/// `p` is NULL or points to a live, properly aligned `T` that nothing else uses during the call.
#[inline(always)]
pub(crate) unsafe fn arg_mut<'a, T>(p: *mut T, name: &str) -> Res<&'a mut T> {
    unsafe { p.as_mut() }.ok_or_else(|| null(name))
}

/// An output location, checked for NULL before any work is done and written only on success.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    #[inline(always)]
    pub fn new(p: *mut T, name: &str) -> Res<Out<T>> {
        if p.is_null() {
            Err(null(name))
        } else {
            Ok(Out(p))
        }
    }
    /// An optional output: NULL means the caller does not want it.
    #[inline(always)]
    pub fn optional(p: *mut T) -> Option<Out<T>> {
        if p.is_null() {
            None
        } else {
            Some(Out(p))
        }
    }
    /// Writes `v` to the optional output `p` (NULL: the caller does not want it).
    ///
    /// # Safety
    /// `p` is NULL or writable.
    #[inline(always)]
    pub unsafe fn put(p: *mut T, v: T) {
        if let Some(o) = Out::optional(p) {
            unsafe { o.write(v) }
        }
    }
    /// Writes the value without reading or dropping what was there.
    ///
    /// # Safety
    /// The pointer given to `new` points to writable memory for a `T`.
    #[inline(always)]
    pub unsafe fn write(self, v: T) {
        unsafe { self.0.write(v) }
    }
}

/// An optional answer: a flag that says whether there is one, and where the value goes.
/// Both pointers are checked for NULL before any work is done.
pub(crate) struct Maybe<T> {
    has: Out<bool>,
    value: Out<T>,
}

impl<T> Maybe<T> {
    #[inline(always)]
    pub fn new(has: *mut bool, has_name: &str, value: *mut T, value_name: &str) -> Res<Maybe<T>> {
        Ok(Maybe { has: Out::new(has, has_name)?, value: Out::new(value, value_name)? })
    }
    /// Writes the flag, and the value if there is one (else the value is left as it was).
    ///
    /// # Safety
    /// The pointers given to `new` point to writable memory.
    #[inline(always)]
    pub unsafe fn write(self, v: Option<T>) {
        unsafe {
            match v {
                Some(v) => {
                    self.value.write(v);
                    self.has.write(true);
                }
                None => self.has.write(false),
            }
        }
    }
}

/// A slice from a pointer and a count. A count of zero accepts any pointer, NULL included.
///
/// # Safety
/// Unless `n` is zero, `p` points to `n` readable, initialised `T`s for the duration of the call.
pub(crate) unsafe fn slice<'a, T>(p: *const T, n: usize, name: &str) -> Res<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null(name));
    }
    let fits = match n.checked_mul(std::mem::size_of::<T>().max(1)) {
        Some(bytes) => bytes <= isize::MAX as usize,
        None => false,
    };
    if !fits {
        return Err(Fail::invalid(format!("{name}: length {n} is out of range")));
    }
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// UTF-8 text from a pointer and a byte length (not NUL-terminated).
///
/// # Safety
/// As [`slice`].
pub(crate) unsafe fn text<'a>(p: *const c_char, n: usize, name: &str) -> Res<&'a str> {
    let b = unsafe { slice(p.cast::<u8>(), n, name) }?;
    std::str::from_utf8(b).map_err(|e| {
        Fail::new(S::LEASEHOLD_STATUS_INVALID_UTF8, format!("{name} is not valid UTF-8: {e}"))
    })
}

// ---------- exported ----------

/// The message of the last failed call on this thread, as a NUL-terminated UTF-8 string.
///
/// Never NULL; empty if no call has failed on this thread. The string belongs to the library and
/// stays valid until the next failing call on the same thread: copy it to keep it. Successful
/// calls leave it as it was.
#[no_mangle]
pub extern "C" fn leasehold_last_error_message() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().as_ptr())
}

/// A static name for a status number ("OK", "UNKNOWN_LEASE", ...; "UNKNOWN_STATUS" for a number
/// that is not one). Never NULL; do not free.
#[no_mangle]
pub extern "C" fn leasehold_status_name(status: i32) -> *const c_char {
    if ErrorCode::from_i32(status).is_none() && ![100, 101, 102, 103, 104, 199].contains(&status) {
        return c"UNKNOWN_STATUS".as_ptr();
    }
    leasehold_status::from_i32(status).name().as_ptr()
}

/// Whether an error code is definite (LR.2): retrying cannot help. Only
/// `LEASEHOLD_STATUS_INDEFINITE` is not; `OK` and unknown numbers give `INVALID_ARGUMENT`.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_status_is_definite(
    code: i32,
    out: *mut bool,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        match ErrorCode::from_i32(code) {
            Some(ErrorCode::Ok) | None => {
                Err(Fail::invalid(format!("{code} is not an error code of the core")))
            }
            Some(_) => {
                unsafe { out.write(LeaseError::from_code(code, "").is_definite()) };
                Ok(())
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_a_status_and_a_message() {
        let s = guard(|| panic!("boom"));
        assert_eq!(s, S::LEASEHOLD_STATUS_PANIC);
        let m = unsafe { std::ffi::CStr::from_ptr(leasehold_last_error_message()) };
        assert!(m.to_str().unwrap().contains("boom"));
    }

    #[test]
    fn status_numbers_mirror_the_core_codes() {
        for n in 0..=6 {
            let c = ErrorCode::from_i32(n).unwrap();
            assert_eq!(leasehold_status::from_code(c) as i32, n);
            assert_eq!(leasehold_status::from_i32(n) as i32, n);
        }
        for n in [100, 101, 102, 103, 104, 199] {
            assert_eq!(leasehold_status::from_i32(n) as i32, n);
        }
    }
}
