//! The wire protocol: request and reply messages, JSON and binary, for any transport.

use std::ffi::c_char;

use leasehold_core::lease::Cookie;
use leasehold_core::wire::{Outcome, Reply, ReplyBody, Request, RequestBody, WireError};
use leasehold_core::{Encoding, LeaseError, Limits};

use crate::common::{bytes_out, c_string, leasehold_cookie, leasehold_limits, limits_or_default};
use crate::error::{arg, guard, leasehold_status, slice, Fail, Out, Res};
use crate::handle::give_box;
use crate::landlord::{leasehold_batch_result, leasehold_landlord, leasehold_renewal};

/// What a request asks (the numbers are the binary op codes).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum leasehold_request_op {
    /// A new lease on a resource.
    LEASEHOLD_REQUEST_GRANT = 1,
    /// Renew one lease.
    LEASEHOLD_REQUEST_RENEW = 2,
    /// Cancel one lease.
    LEASEHOLD_REQUEST_CANCEL = 3,
    /// Renew several leases.
    LEASEHOLD_REQUEST_RENEW_ALL = 4,
    /// Cancel several leases.
    LEASEHOLD_REQUEST_CANCEL_ALL = 5,
}

/// What a reply answers (the numbers are the binary op codes).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum leasehold_reply_op {
    /// A lease was granted: cookie and duration.
    LEASEHOLD_REPLY_GRANTED = 1,
    /// A lease was renewed: duration.
    LEASEHOLD_REPLY_RENEWED = 2,
    /// A lease was cancelled.
    LEASEHOLD_REPLY_CANCELLED = 3,
    /// Per-lease results of a renew_all.
    LEASEHOLD_REPLY_RENEWED_ALL = 4,
    /// Per-lease results of a cancel_all.
    LEASEHOLD_REPLY_CANCELLED_ALL = 5,
    /// The whole request failed: an error code and message.
    LEASEHOLD_REPLY_ERROR = 6,
}

/// A request message (opaque, immutable). Free with `leasehold_request_free`.
#[allow(non_camel_case_types)]
pub struct leasehold_request {
    pub(crate) inner: Request,
}

/// A reply message (opaque, immutable). Free with `leasehold_reply_free`.
#[allow(non_camel_case_types)]
pub struct leasehold_reply {
    pub(crate) inner: Reply,
}

/// What the message handles share (these two, and the discovery service's): decoding,
/// encoding, the id. A new message handle is `pub struct leasehold_x { inner: Core }` and
/// `message!(leasehold_x, Core, "x");`.
pub(crate) trait Message: Sized {
    const ARG: &'static str;
    fn decode(b: &[u8], enc: Encoding, limits: &Limits) -> Result<Self, LeaseError>;
    fn encode(&self, enc: Encoding) -> Vec<u8>;
    fn id(&self) -> u64;
}

macro_rules! message {
    ($c:ident, $inner:ty, $arg:literal) => {
        impl $crate::wire::Message for $c {
            const ARG: &'static str = $arg;
            fn decode(
                b: &[u8],
                enc: leasehold_core::Encoding,
                limits: &leasehold_core::Limits,
            ) -> Result<Self, leasehold_core::LeaseError> {
                Ok($c { inner: <$inner>::decode(b, enc, limits)? })
            }
            fn encode(&self, enc: leasehold_core::Encoding) -> Vec<u8> {
                self.inner.encode(enc)
            }
            fn id(&self) -> u64 {
                self.inner.id
            }
        }
    };
}
message!(leasehold_request, Request, "request");
message!(leasehold_reply, Reply, "reply");

/// `_decode`: `len` bytes in `encoding`, within `limits` (NULL: the defaults).
///
/// # Safety
/// `data` is NULL or points to `len` bytes; `limits` is NULL or valid; `out` is NULL or writable.
pub(crate) unsafe fn decode<M: Message>(
    data: *const u8,
    len: usize,
    encoding: i32,
    limits: *const leasehold_limits,
    out: *mut *mut M,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let enc = crate::common::encoding(encoding)?;
        let b = unsafe { slice(data, len, "data") }?;
        give_box(M::decode(b, enc, &unsafe { limits_or_default(limits) })?, out);
        Ok(())
    })
}

/// `_encode`: the message in `encoding`, for the caller to free with `leasehold_bytes_free`.
///
/// # Safety
/// `m` is NULL or live; the outputs are NULL or writable.
pub(crate) unsafe fn encode<M: Message>(
    m: *const M,
    encoding: i32,
    out_data: *mut *mut u8,
    out_len: *mut usize,
) -> leasehold_status {
    unsafe {
        bytes_out(out_data, out_len, || {
            let enc = crate::common::encoding(encoding)?;
            Ok(arg(m, M::ARG)?.encode(enc))
        })
    }
}

/// The body of a call that reads a field of a message into `*out`.
///
/// # Safety
/// `m` is NULL or live; `out` is NULL or writable.
unsafe fn field<M: Message, T>(
    m: *const M,
    out: *mut T,
    f: impl FnOnce(&M) -> Res<T>,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        let v = f(unsafe { arg(m, M::ARG) }?)?;
        unsafe { out.write(v) };
        Ok(())
    })
}

pub(crate) fn give_reply(r: Reply, out: Out<*mut leasehold_reply>) {
    give_box(leasehold_reply { inner: r }, out)
}

/// The body of a call that makes a request: `f` builds it, `*out` gets it.
///
/// # Safety
/// `out` is NULL or writable.
pub(crate) unsafe fn request_out(
    out: *mut *mut leasehold_request,
    f: impl FnOnce() -> Res<Request>,
) -> leasehold_status {
    guard(|| {
        let out = Out::new(out, "out")?;
        give_box(leasehold_request { inner: f()? }, out);
        Ok(())
    })
}

// ---------- building requests ----------

/// The body of the `leasehold_request_new_*` calls: request `id` asking `body`.
///
/// # Safety
/// `out` is NULL or writable.
unsafe fn build(
    id: u64,
    out: *mut *mut leasehold_request,
    body: impl FnOnce() -> Res<RequestBody>,
) -> leasehold_status {
    unsafe { request_out(out, || Ok(Request { id, body: body()? })) }
}

/// A grant request: a lease on `resource` (`resource_len` bytes, copied) for `duration` ms.
///
/// # Safety
/// `resource` is NULL or points to `resource_len` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_new_grant(
    id: u64,
    resource: *const u8,
    resource_len: usize,
    duration: i64,
    out: *mut *mut leasehold_request,
) -> leasehold_status {
    unsafe {
        build(id, out, || {
            let resource = slice(resource, resource_len, "resource")?.to_vec();
            Ok(RequestBody::Grant { resource, duration })
        })
    }
}

/// A renew request for one lease.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_new_renew(
    id: u64,
    cookie: leasehold_cookie,
    duration: i64,
    out: *mut *mut leasehold_request,
) -> leasehold_status {
    unsafe { build(id, out, || Ok(RequestBody::Renew { cookie: cookie.into(), duration })) }
}

/// A cancel request for one lease.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_new_cancel(
    id: u64,
    cookie: leasehold_cookie,
    out: *mut *mut leasehold_request,
) -> leasehold_status {
    unsafe { build(id, out, || Ok(RequestBody::Cancel { cookie: cookie.into() })) }
}

/// A renew_all request for `count` leases (copied).
///
/// # Safety
/// `items` is NULL or points to `count` elements; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_new_renew_all(
    id: u64,
    items: *const leasehold_renewal,
    count: usize,
    out: *mut *mut leasehold_request,
) -> leasehold_status {
    unsafe {
        build(id, out, || {
            let items = slice(items, count, "items")?;
            let items = items.iter().map(|i| (Cookie::from(i.cookie), i.duration)).collect();
            Ok(RequestBody::RenewAll { items })
        })
    }
}

/// A cancel_all request for `count` leases (copied).
///
/// # Safety
/// `cookies` is NULL or points to `count` elements; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_new_cancel_all(
    id: u64,
    cookies: *const leasehold_cookie,
    count: usize,
    out: *mut *mut leasehold_request,
) -> leasehold_status {
    unsafe {
        build(id, out, || {
            let cookies = slice(cookies, count, "cookies")?.iter().map(|&c| c.into()).collect();
            Ok(RequestBody::CancelAll { cookies })
        })
    }
}

/// Decodes a request (`len` bytes in `encoding`), enforcing `limits` (NULL: the defaults).
///
/// # Safety
/// `data` is NULL or points to `len` bytes; `limits` is NULL or valid; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_decode(
    data: *const u8,
    len: usize,
    encoding: i32,
    limits: *const leasehold_limits,
    out: *mut *mut leasehold_request,
) -> leasehold_status {
    unsafe { decode(data, len, encoding, limits, out) }
}

/// Encodes a request in `encoding`; free the bytes with `leasehold_bytes_free`.
///
/// # Safety
/// `request` is NULL or live; outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_encode(
    request: *const leasehold_request,
    encoding: i32,
    out_data: *mut *mut u8,
    out_len: *mut usize,
) -> leasehold_status {
    unsafe { encode(request, encoding, out_data, out_len) }
}

/// The request's id (echoed by the reply).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_id(
    request: *const leasehold_request,
    out: *mut u64,
) -> leasehold_status {
    unsafe { field(request, out, |r| Ok(r.id())) }
}

/// What the request asks.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_get_op(
    request: *const leasehold_request,
    out: *mut leasehold_request_op,
) -> leasehold_status {
    use leasehold_request_op as O;
    unsafe {
        field(request, out, |r| {
            Ok(match r.inner.body {
                RequestBody::Grant { .. } => O::LEASEHOLD_REQUEST_GRANT,
                RequestBody::Renew { .. } => O::LEASEHOLD_REQUEST_RENEW,
                RequestBody::Cancel { .. } => O::LEASEHOLD_REQUEST_CANCEL,
                RequestBody::RenewAll { .. } => O::LEASEHOLD_REQUEST_RENEW_ALL,
                RequestBody::CancelAll { .. } => O::LEASEHOLD_REQUEST_CANCEL_ALL,
            })
        })
    }
}

pub(crate) fn wrong_op(what: &str) -> Fail {
    Fail::invalid(format!("this message has no {what}"))
}

/// The cookie of a renew or cancel request (`INVALID_ARGUMENT` for other ops).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_cookie(
    request: *const leasehold_request,
    out: *mut leasehold_cookie,
) -> leasehold_status {
    unsafe {
        field(request, out, |r| match r.inner.body {
            RequestBody::Renew { cookie, .. } | RequestBody::Cancel { cookie } => Ok(cookie.into()),
            _ => Err(wrong_op("single cookie")),
        })
    }
}

/// The requested duration of a grant or renew request (`INVALID_ARGUMENT` for other ops).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_duration(
    request: *const leasehold_request,
    out: *mut i64,
) -> leasehold_status {
    unsafe {
        field(request, out, |r| match r.inner.body {
            RequestBody::Grant { duration, .. } | RequestBody::Renew { duration, .. } => {
                Ok(duration)
            }
            _ => Err(wrong_op("single duration")),
        })
    }
}

/// A copy of the resource of a grant request; free with `leasehold_bytes_free`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_resource(
    request: *const leasehold_request,
    out_data: *mut *mut u8,
    out_len: *mut usize,
) -> leasehold_status {
    unsafe {
        bytes_out(out_data, out_len, || match &arg(request, "request")?.inner.body {
            RequestBody::Grant { resource, .. } => Ok(resource.clone()),
            _ => Err(wrong_op("resource")),
        })
    }
}

/// Leases in a renew_all or cancel_all request (0 for the single-lease ops).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_count(
    request: *const leasehold_request,
    out: *mut usize,
) -> leasehold_status {
    unsafe {
        field(request, out, |r| match &r.inner.body {
            RequestBody::RenewAll { items } => Ok(items.len()),
            RequestBody::CancelAll { cookies } => Ok(cookies.len()),
            _ => Ok(0),
        })
    }
}

/// Lease `index` of a renew_all (cookie and duration) or cancel_all (cookie, duration 0) request.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_item(
    request: *const leasehold_request,
    index: usize,
    out: *mut leasehold_renewal,
) -> leasehold_status {
    unsafe {
        field(request, out, |r| {
            let item = match &r.inner.body {
                RequestBody::RenewAll { items } => items.get(index).copied(),
                RequestBody::CancelAll { cookies } => cookies.get(index).map(|&c| (c, 0)),
                _ => return Err(wrong_op("batch")),
            };
            let (c, d) = item.ok_or_else(|| out_of_range(index))?;
            Ok(leasehold_renewal { cookie: c.into(), duration: d })
        })
    }
}

/// Frees a request. NULL is ignored.
///
/// # Safety
/// `request` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_request_free(request: *mut leasehold_request) {
    unsafe { crate::handle::free_box(request) }
}

// ---------- landlord answers ----------

/// Answers a request message at `now`; `*out` is the reply, to free with `leasehold_reply_free`.
///
/// # Safety
/// `landlord` and `request` are NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_landlord_handle_request(
    landlord: *mut leasehold_landlord,
    request: *const leasehold_request,
    now: i64,
    out: *mut *mut leasehold_reply,
) -> leasehold_status {
    unsafe { crate::sansio::answer_request(landlord, request, now, out) }
}

// ---------- replies ----------

/// Decodes a reply (`len` bytes in `encoding`), enforcing `limits` (NULL: the defaults).
///
/// # Safety
/// `data` is NULL or points to `len` bytes; `limits` is NULL or valid; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_reply_decode(
    data: *const u8,
    len: usize,
    encoding: i32,
    limits: *const leasehold_limits,
    out: *mut *mut leasehold_reply,
) -> leasehold_status {
    unsafe { decode(data, len, encoding, limits, out) }
}

/// Encodes a reply in `encoding`; free the bytes with `leasehold_bytes_free`.
///
/// # Safety
/// `reply` is NULL or live; outputs are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn leasehold_reply_encode(
    reply: *const leasehold_reply,
    encoding: i32,
    out_data: *mut *mut u8,
    out_len: *mut usize,
) -> leasehold_status {
    unsafe { encode(reply, encoding, out_data, out_len) }
}

/// The id of the request this reply answers.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_reply_id(
    reply: *const leasehold_reply,
    out: *mut u64,
) -> leasehold_status {
    unsafe { field(reply, out, |r| Ok(r.id())) }
}

/// The id of the landlord that answered.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_reply_landlord(
    reply: *const leasehold_reply,
    out: *mut u64,
) -> leasehold_status {
    unsafe { field(reply, out, |r| Ok(r.inner.landlord.0)) }
}

/// What the reply answers.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_reply_get_op(
    reply: *const leasehold_reply,
    out: *mut leasehold_reply_op,
) -> leasehold_status {
    use leasehold_reply_op as O;
    unsafe {
        field(reply, out, |r| {
            Ok(match r.inner.body {
                ReplyBody::Granted { .. } => O::LEASEHOLD_REPLY_GRANTED,
                ReplyBody::Renewed { .. } => O::LEASEHOLD_REPLY_RENEWED,
                ReplyBody::Cancelled => O::LEASEHOLD_REPLY_CANCELLED,
                ReplyBody::RenewedAll { .. } => O::LEASEHOLD_REPLY_RENEWED_ALL,
                ReplyBody::CancelledAll { .. } => O::LEASEHOLD_REPLY_CANCELLED_ALL,
                ReplyBody::Error(_) => O::LEASEHOLD_REPLY_ERROR,
            })
        })
    }
}

/// The cookie of a GRANTED reply (`INVALID_ARGUMENT` for other ops).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_reply_cookie(
    reply: *const leasehold_reply,
    out: *mut leasehold_cookie,
) -> leasehold_status {
    unsafe {
        field(reply, out, |r| match r.inner.body {
            ReplyBody::Granted { cookie, .. } => Ok(cookie.into()),
            _ => Err(wrong_op("cookie")),
        })
    }
}

/// The granted duration of a GRANTED or RENEWED reply (`INVALID_ARGUMENT` for other ops).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_reply_duration(
    reply: *const leasehold_reply,
    out: *mut i64,
) -> leasehold_status {
    unsafe {
        field(reply, out, |r| match r.inner.body {
            ReplyBody::Granted { duration, .. } | ReplyBody::Renewed { duration } => Ok(duration),
            _ => Err(wrong_op("duration")),
        })
    }
}

/// The error of an ERROR reply: its code as sent (the `leasehold_status` numbers for the known
/// ones; a newer peer may send others) and, optionally (pass NULL to skip), its message, to free
/// with `leasehold_string_free`. `INVALID_ARGUMENT` for other ops.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_reply_error(
    reply: *const leasehold_reply,
    out_code: *mut i32,
    out_message: *mut *mut c_char,
) -> leasehold_status {
    guard(|| {
        let (code, msg) = (Out::new(out_code, "out_code")?, Out::optional(out_message));
        let ReplyBody::Error(e) = &unsafe { arg(reply, "reply") }?.inner.body else {
            return Err(wrong_op("error"));
        };
        if let Some(msg) = msg {
            unsafe { msg.write(c_string(e.message.clone())?) };
        }
        unsafe { code.write(e.code) };
        Ok(())
    })
}

/// Outcome `index` of a batch reply: the granted duration (0 for a cancellation) or the error.
fn result_at(body: &ReplyBody, index: usize) -> Res<Result<i64, &WireError>> {
    let r = match body {
        ReplyBody::RenewedAll { results } => results.get(index).map(|o| match o {
            Outcome::Ok(d) => Ok(*d),
            Outcome::Err(e) => Err(e),
        }),
        ReplyBody::CancelledAll { results } => results.get(index).map(|o| match o {
            Outcome::Ok(()) => Ok(0),
            Outcome::Err(e) => Err(e),
        }),
        _ => return Err(wrong_op("batch results")),
    };
    r.ok_or_else(|| out_of_range(index))
}

fn out_of_range(index: usize) -> Fail {
    Fail::invalid(format!("index {index} is out of range"))
}

/// Results in a RENEWED_ALL or CANCELLED_ALL reply (0 for other ops).
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_reply_count(
    reply: *const leasehold_reply,
    out: *mut usize,
) -> leasehold_status {
    unsafe {
        field(reply, out, |r| match &r.inner.body {
            ReplyBody::RenewedAll { results } => Ok(results.len()),
            ReplyBody::CancelledAll { results } => Ok(results.len()),
            _ => Ok(0),
        })
    }
}

/// Result `index` of a batch reply: status and granted duration, and optionally (NULL to skip)
/// the error message (empty when OK), to free with `leasehold_string_free`.
///
/// # Safety
/// Pointers are NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn leasehold_reply_result(
    reply: *const leasehold_reply,
    index: usize,
    out: *mut leasehold_batch_result,
    out_message: *mut *mut c_char,
) -> leasehold_status {
    guard(|| {
        let (out, msg) = (Out::new(out, "out")?, Out::optional(out_message));
        let (res, m) = match result_at(&unsafe { arg(reply, "reply") }?.inner.body, index)? {
            Ok(d) => ((leasehold_status::LEASEHOLD_STATUS_OK, d), String::new()),
            Err(e) => ((leasehold_status::from_i32(e.code), 0), e.message.clone()),
        };
        if let Some(msg) = msg {
            unsafe { msg.write(c_string(m)?) };
        }
        unsafe { out.write(leasehold_batch_result { status: res.0, duration: res.1 }) };
        Ok(())
    })
}

/// Frees a reply. NULL is ignored.
///
/// # Safety
/// `reply` was made by libleasehold and not freed before.
#[no_mangle]
pub unsafe extern "C" fn leasehold_reply_free(reply: *mut leasehold_reply) {
    unsafe { crate::handle::free_box(reply) }
}
