//! The lease value (the holder's view of a lease) and its serial forms.

use std::ffi::c_char;

use leasehold_core::lease::{LandlordId, Lease, SerialFormat};

use crate::common::{bytes_out, c_string, leasehold_cookie};
use crate::error::{arg, guard, leasehold_status, slice, text, Out, Res};

/// Serial format DURATION: the time left is stored and read back against the reader's `now`.
pub const LEASEHOLD_SERIAL_DURATION: i32 = 1;
/// Serial format ABSOLUTE: the expiration itself is stored (needs synchronised clocks).
pub const LEASEHOLD_SERIAL_ABSOLUTE: i32 = 2;

/// A lease as its holder sees it. A plain value: copy it freely, nothing to free.
///
/// Functions taking a lease check `serial_format` and answer `INVALID_ARGUMENT` for a value
/// other than `LEASEHOLD_SERIAL_DURATION` or `LEASEHOLD_SERIAL_ABSOLUTE`.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct leasehold_lease {
    /// The landlord that granted it.
    pub landlord: u64,
    /// The landlord's key for it.
    pub cookie: leasehold_cookie,
    /// When it expires, in ms on the holder's clock (`LEASEHOLD_FOREVER` if never).
    pub expiration: i64,
    /// `LEASEHOLD_SERIAL_DURATION` or `LEASEHOLD_SERIAL_ABSOLUTE`.
    pub serial_format: i32,
}

impl From<Lease> for leasehold_lease {
    fn from(l: Lease) -> Self {
        leasehold_lease {
            landlord: l.landlord().0,
            cookie: l.cookie().into(),
            expiration: l.expiration(),
            serial_format: l.serial_format() as i32,
        }
    }
}

impl leasehold_lease {
    pub(crate) fn to_core(self) -> Res<Lease> {
        let format = SerialFormat::from_i32(self.serial_format)?;
        Ok(Lease::new(LandlordId(self.landlord), self.cookie.into(), self.expiration)
            .with_serial_format(format))
    }
}

/// # Safety
/// `p` is NULL or points to a valid `leasehold_lease`.
unsafe fn lease_arg(p: *const leasehold_lease, name: &str) -> Res<Lease> {
    unsafe { arg(p, name) }?.to_core()
}

/// A lease of `landlord` with `cookie`, granted `granted` ms by a reply to a request the holder
/// sent at `sent_at` (the holder counts from its send time; FOREVER stays FOREVER). DURATION format.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_from_grant(
    landlord: u64,
    cookie: leasehold_cookie,
    sent_at: i64,
    granted: i64,
    out: *mut leasehold_lease,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let l = Lease::from_grant(LandlordId(landlord), cookie.into(), sent_at, granted);
        unsafe { out.write(l.into()) };
        Ok(())
    })
}

/// Time left on `lease` at `now` (negative once expired; `LEASEHOLD_FOREVER` if perpetual).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_remaining(
    lease: *const leasehold_lease,
    now: i64,
    out: *mut i64,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let l = unsafe { lease_arg(lease, "lease") }?;
        unsafe { out.write(l.remaining(now)) };
        Ok(())
    })
}

/// Whether `lease` has expired at `now` on the holder's clock.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_is_expired(
    lease: *const leasehold_lease,
    now: i64,
    out: *mut bool,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let l = unsafe { lease_arg(lease, "lease") }?;
        unsafe { out.write(l.is_expired(now)) };
        Ok(())
    })
}

/// Jini `canBatch`: whether both leases belong to the same landlord.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_can_batch(
    a: *const leasehold_lease,
    b: *const leasehold_lease,
    out: *mut bool,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let a = unsafe { lease_arg(a, "a") }?;
        let b = unsafe { lease_arg(b, "b") }?;
        unsafe { out.write(a.can_batch(&b)) };
        Ok(())
    })
}

/// The canonical JSON form of `lease`, written at `now` (DURATION stores the time left at `now`).
/// `*out` is a NUL-terminated string to free with `leasehold_string_free`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_to_json(
    lease: *const leasehold_lease,
    now: i64,
    out: *mut *mut c_char,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let l = unsafe { lease_arg(lease, "lease") }?;
        let s = c_string(l.to_json(now))?;
        unsafe { out.write(s) };
        Ok(())
    })
}

/// Reads the canonical JSON form (`len` bytes of `json`, no NUL needed) at the reader's `now`.
///
/// # Safety
/// `json` is NULL or points to `len` readable bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_from_json(
    json: *const c_char,
    len: usize,
    now: i64,
    out: *mut leasehold_lease,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let s = unsafe { text(json, len, "json") }?;
        let l = Lease::from_json(s, now)?;
        unsafe { out.write(l.into()) };
        Ok(())
    })
}

/// The compact binary form of `lease` (36 bytes), written at `now`. Free `*out_data` with
/// `leasehold_bytes_free(*out_data, *out_len)`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_to_bytes(
    lease: *const leasehold_lease,
    now: i64,
    out_data: *mut *mut u8,
    out_len: *mut usize,
) -> leasehold_status {
    unsafe { bytes_out(out_data, out_len, || Ok(lease_arg(lease, "lease")?.to_bytes(now))) }
}

/// Reads the compact binary form (`len` bytes of `data`) at the reader's `now`.
///
/// # Safety
/// `data` is NULL or points to `len` readable bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_lease_from_bytes(
    data: *const u8,
    len: usize,
    now: i64,
    out: *mut leasehold_lease,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let b = unsafe { slice(data, len, "data") }?;
        let l = Lease::from_bytes(b, now)?;
        unsafe { out.write(l.into()) };
        Ok(())
    })
}
