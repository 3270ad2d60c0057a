//! Encoding and decoding of wire messages, JSON and binary, with size limits.
//!
//! Both encodings carry the same messages ([`Request`], [`Reply`]) and are versioned
//! ([`WIRE_VERSION`], currently 1). Decoding never panics and never allocates more than the
//! input justifies: the whole message is checked against [`Limits::max_message_bytes`] first,
//! every count against [`Limits::max_batch`] and against the bytes actually left, every
//! resource against [`Limits::max_resource_bytes`]. Every failure is a [`LeaseError::Decode`].
//!
//! # Binary form, version 1
//!
//! Integers are big-endian; `i64` and `i32` are two's complement. A cookie is 16 bytes, a
//! duration an `i64` (ms, or FOREVER `0x7fffffffffffffff`, or ANY `0xffffffffffffffff` in a
//! request), a count a `u32`, a byte string a `u32` length and then the bytes. An error is an
//! `i32` code ([`crate::ErrorCode`]) and a byte string of UTF-8 text.
//!
//! | field | request | reply |
//! |---|---|---|
//! | magic | `0x4C` | `0x4C` |
//! | version | `0x01` | `0x01` |
//! | kind | `0x10` | `0x11` |
//! | id | `u64` | `u64` (the request's) |
//! | landlord | (none) | `u64` |
//! | op | `u8`, see below | `u8`, see below |
//!
//! Request ops and their fields:
//! - `1` grant: duration, resource (byte string);
//! - `2` renew: cookie, duration;
//! - `3` cancel: cookie;
//! - `4` renew_all: count, then count times (cookie, duration);
//! - `5` cancel_all: count, then count times cookie.
//!
//! Reply ops and their fields:
//! - `1` granted: cookie, duration;
//! - `2` renewed: duration;
//! - `3` cancelled: nothing;
//! - `4` renewed_all: count, then per lease `0x00` and a duration, or `0x01` and an error;
//! - `5` cancelled_all: count, then per lease `0x00`, or `0x01` and an error;
//! - `6` error: an error.
//!
//! Nothing may follow the last field.
//!
//! # JSON form, version 1
//!
//! UTF-8 text, one object, keys in this order when written, no white space:
//!
//! ```text
//! {"v":1,"id":"7","body":{"op":"renew","cookie":"<32 hex>","duration":"30000"}}
//! {"v":1,"id":"7","landlord":"<16 hex>","body":{"op":"renewed","duration":"30000"}}
//! ```
//!
//! `id` and every duration are 64-bit integers written as decimal strings (exact in
//! JavaScript); readers also accept JSON integers. Cookies and landlord ids are hex strings,
//! a grant's resource is hex (any length up to the limit, even digits). Bodies, by `op`:
//!
//! - requests: `grant` {`resource`, `duration`}; `renew` {`cookie`, `duration`};
//!   `cancel` {`cookie`}; `renew_all` {`items`: [{`cookie`, `duration`}...]};
//!   `cancel_all` {`cookies`: [cookie...]};
//! - replies: `granted` {`cookie`, `duration`}; `renewed` {`duration`}; `cancelled` {};
//!   `renewed_all` {`results`: [{`duration`} or {`error`}...]};
//!   `cancelled_all` {`results`: [{} or {`error`}...]}; `error` {`code`, `message`}.
//!
//! An error object is `{"code":N,"message":"..."}`. Unknown keys anywhere are rejected.
//!
//! ```
//! use leasehold::wire::{Encoding, Limits, Request, RequestBody};
//! use leasehold::{Cookie, FOREVER};
//! let req = Request { id: 7, body: RequestBody::Renew { cookie: Cookie(1), duration: FOREVER } };
//! let text = req.encode(Encoding::Json);
//! assert_eq!(
//!     std::str::from_utf8(&text).unwrap(),
//!     r#"{"v":1,"id":"7","body":{"op":"renew","cookie":"00000000000000000000000000000001","duration":"9223372036854775807"}}"#
//! );
//! assert_eq!(Request::decode(&text, Encoding::Json, &Limits::default()).unwrap(), req);
//! ```

use serde::{Deserialize, Serialize};

use crate::error::{LeaseError, Result};
use crate::lease::{Cookie, LandlordId};
use crate::serial::MAGIC;
use crate::wire::{
    Encoding, Limits, Outcome, Reply, ReplyBody, Request, RequestBody, WireError, WIRE_VERSION,
};

const KIND_REQUEST: u8 = 0x10;
const KIND_REPLY: u8 = 0x11;

/// A request's JSON form, every protocol's: `{"v":1,"id":"7","body":{...}}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RequestJson<B> {
    pub(crate) v: u32,
    #[serde(with = "crate::time::dec::u64")]
    pub(crate) id: u64,
    pub(crate) body: B,
}

/// A reply's JSON form, every protocol's: a request's with the landlord that answered.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReplyJson<B> {
    pub(crate) v: u32,
    #[serde(with = "crate::time::dec::u64")]
    pub(crate) id: u64,
    pub(crate) landlord: LandlordId,
    pub(crate) body: B,
}

/// A JSON message form that carries the wire version `v`, checked by [`decode_message`].
pub(crate) trait Versioned {
    /// The message's `v`.
    fn version(&self) -> u32;
}

impl<B> Versioned for RequestJson<B> {
    fn version(&self) -> u32 {
        self.v
    }
}

impl<B> Versioned for ReplyJson<B> {
    fn version(&self) -> u32 {
        self.v
    }
}

impl<B> RequestJson<B> {
    pub(crate) fn new(id: u64, body: B) -> Self {
        RequestJson { v: WIRE_VERSION as u32, id, body }
    }
}

impl<B> ReplyJson<B> {
    pub(crate) fn new(id: u64, landlord: LandlordId, body: B) -> Self {
        ReplyJson { v: WIRE_VERSION as u32, id, landlord, body }
    }
}

/// Encodes a message: as JSON, the form `json` makes; in binary, the header of `kind`, the
/// `head` fields (the id, and what else leads the message), then what `body` writes, into a
/// buffer of `capacity` bytes to begin with.
pub(crate) fn encode_message<J: Serialize>(
    encoding: Encoding,
    json: impl FnOnce() -> J,
    kind: u8,
    head: &[u64],
    capacity: usize,
    body: impl FnOnce(&mut W),
) -> Vec<u8> {
    match encoding {
        Encoding::Json => serde_json::to_vec(&json()).expect("message JSON cannot fail"),
        Encoding::Binary => {
            let mut w = W(Vec::with_capacity(capacity));
            w.header(kind);
            for &x in head {
                w.u64(x);
            }
            body(&mut w);
            w.0
        }
    }
}

/// Decodes a message, at most `limits`' size: as JSON, the form `J` (`what` names the message
/// in its errors), its version checked, made a message by `json`; in binary, the header of `kind` and the id after
/// it, the rest read by `binary` (given the id), with nothing left over.
pub(crate) fn decode_message<J: serde::de::DeserializeOwned + Versioned, T>(
    bytes: &[u8],
    encoding: Encoding,
    limits: &Limits,
    what: &str,
    kind: u8,
    json: impl FnOnce(J) -> Result<T>,
    binary: impl FnOnce(&mut R<'_>, u64) -> Result<T>,
) -> Result<T> {
    check_size(bytes.len(), limits)?;
    match encoding {
        Encoding::Json => {
            let j: J = serde_json::from_slice(bytes)
                .map_err(|e| decode_err(format!("{what} JSON: {e}")))?;
            check_version(j.version())?;
            json(j)
        }
        Encoding::Binary => {
            let mut r = R { b: bytes, at: 0 };
            let id = r.header(kind)?;
            let m = binary(&mut r, id)?;
            r.finish()?;
            Ok(m)
        }
    }
}

pub(crate) fn decode_err(msg: impl Into<String>) -> LeaseError {
    LeaseError::Decode(msg.into())
}

pub(crate) fn check_size(len: usize, limits: &Limits) -> Result<()> {
    limits.check_message_size(len)
}

pub(crate) fn check_version(v: u32) -> Result<()> {
    if v != WIRE_VERSION as u32 {
        return Err(decode_err(format!(
            "wire version {v} is not supported (expected {WIRE_VERSION})"
        )));
    }
    Ok(())
}

fn check_request_limits(body: &RequestBody, limits: &Limits) -> Result<()> {
    let n = match body {
        RequestBody::RenewAll { items } => items.len(),
        RequestBody::CancelAll { cookies } => cookies.len(),
        RequestBody::Grant { resource, .. } => {
            if resource.len() > limits.max_resource_bytes {
                return Err(decode_err(format!(
                    "resource is {} bytes, more than the {} allowed",
                    resource.len(),
                    limits.max_resource_bytes
                )));
            }
            0
        }
        _ => 0,
    };
    check_batch(n, limits)
}

fn check_batch(n: usize, limits: &Limits) -> Result<()> {
    if n > limits.max_batch {
        return Err(decode_err(format!(
            "batch of {n} leases is more than the {} allowed",
            limits.max_batch
        )));
    }
    Ok(())
}

fn check_reply_limits(body: &ReplyBody, limits: &Limits) -> Result<()> {
    let n = match body {
        ReplyBody::RenewedAll { results } => results.len(),
        ReplyBody::CancelledAll { results } => results.len(),
        _ => 0,
    };
    check_batch(n, limits)
}

// ---------- binary writer ----------

pub(crate) struct W(pub(crate) Vec<u8>);
impl W {
    pub(crate) fn u8(&mut self, x: u8) {
        self.0.push(x)
    }
    pub(crate) fn u32(&mut self, x: u32) {
        self.0.extend_from_slice(&x.to_be_bytes())
    }
    pub(crate) fn u64(&mut self, x: u64) {
        self.0.extend_from_slice(&x.to_be_bytes())
    }
    pub(crate) fn i64(&mut self, x: i64) {
        self.0.extend_from_slice(&x.to_be_bytes())
    }
    pub(crate) fn cookie(&mut self, c: Cookie) {
        self.0.extend_from_slice(&c.0.to_be_bytes())
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.u32(u32::try_from(b.len()).unwrap_or(u32::MAX));
        self.0.extend_from_slice(b)
    }
    pub(crate) fn error(&mut self, e: &WireError) {
        self.0.extend_from_slice(&e.code.to_be_bytes());
        self.bytes(e.message.as_bytes());
    }
    /// The start of every binary message: magic byte, wire version, message kind.
    pub(crate) fn header(&mut self, kind: u8) {
        self.u8(MAGIC);
        self.u8(WIRE_VERSION);
        self.u8(kind);
    }
}

// ---------- binary reader ----------

pub(crate) struct R<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) at: usize,
}
impl<'a> R<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.b.len() - self.at < n {
            return Err(decode_err(format!(
                "truncated message: wanted {n} more byte(s) at offset {}, have {}",
                self.at,
                self.b.len() - self.at
            )));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    pub(crate) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    pub(crate) fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(self.array()?))
    }
    pub(crate) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array()?))
    }
    pub(crate) fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(self.array()?))
    }
    pub(crate) fn cookie(&mut self) -> Result<Cookie> {
        Ok(Cookie(u128::from_be_bytes(self.array()?)))
    }
    pub(crate) fn bytes(&mut self, max: usize, what: &str) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        if n > max {
            return Err(decode_err(format!("{what} is {n} bytes, more than the {max} allowed")));
        }
        self.take(n)
    }
    pub(crate) fn count(&mut self, limits: &Limits, each: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        check_batch(n, limits)?;
        // Never trust a count further than the bytes that are actually there.
        if n.saturating_mul(each) > self.b.len() - self.at {
            return Err(decode_err(format!(
                "truncated message: {n} entries announced, only {} byte(s) left",
                self.b.len() - self.at
            )));
        }
        Ok(n)
    }
    pub(crate) fn error(&mut self, limits: &Limits) -> Result<WireError> {
        let code = self.i32()?;
        let msg = self.bytes(limits.max_message_bytes, "error message")?;
        let message = std::str::from_utf8(msg)
            .map_err(|_| decode_err("error message is not UTF-8"))?
            .to_string();
        Ok(WireError { code, message })
    }
    /// Reads what [`W::header`] wrote and checks it.
    pub(crate) fn kind(&mut self, kind: u8) -> Result<()> {
        let magic = self.u8()?;
        if magic != MAGIC {
            return Err(decode_err(format!("bad magic byte 0x{magic:02x}")));
        }
        check_version(self.u8()? as u32)?;
        let k = self.u8()?;
        if k != kind {
            return Err(decode_err(format!("message kind 0x{k:02x}, expected 0x{kind:02x}")));
        }
        Ok(())
    }
    /// The header and the 64-bit number after it (the message's id).
    pub(crate) fn header(&mut self, kind: u8) -> Result<u64> {
        self.kind(kind)?;
        self.u64()
    }
    pub(crate) fn finish(&self) -> Result<()> {
        if self.at != self.b.len() {
            return Err(decode_err(format!(
                "{} trailing byte(s) after the message",
                self.b.len() - self.at
            )));
        }
        Ok(())
    }
}

impl Request {
    /// Encodes the request.
    pub fn encode(&self, encoding: Encoding) -> Vec<u8> {
        let json = || RequestJson::new(self.id, &self.body);
        encode_message(encoding, json, KIND_REQUEST, &[self.id], 32, |w| match &self.body {
            RequestBody::Grant { resource, duration } => {
                w.u8(1);
                w.i64(*duration);
                w.bytes(resource);
            }
            RequestBody::Renew { cookie, duration } => {
                w.u8(2);
                w.cookie(*cookie);
                w.i64(*duration);
            }
            RequestBody::Cancel { cookie } => {
                w.u8(3);
                w.cookie(*cookie);
            }
            RequestBody::RenewAll { items } => {
                w.u8(4);
                w.u32(items.len() as u32);
                for (c, d) in items {
                    w.cookie(*c);
                    w.i64(*d);
                }
            }
            RequestBody::CancelAll { cookies } => {
                w.u8(5);
                w.u32(cookies.len() as u32);
                for c in cookies {
                    w.cookie(*c);
                }
            }
        })
    }

    /// Decodes a request, enforcing `limits`.
    pub fn decode(bytes: &[u8], encoding: Encoding, limits: &Limits) -> Result<Request> {
        let json = |j: RequestJson<_>| {
            check_request_limits(&j.body, limits)?;
            Ok(Request { id: j.id, body: j.body })
        };
        decode_message(bytes, encoding, limits, "request", KIND_REQUEST, json, |r, id| {
            let body = match r.u8()? {
                1 => {
                    let duration = r.i64()?;
                    let resource = r.bytes(limits.max_resource_bytes, "resource")?.to_vec();
                    RequestBody::Grant { resource, duration }
                }
                2 => RequestBody::Renew { cookie: r.cookie()?, duration: r.i64()? },
                3 => RequestBody::Cancel { cookie: r.cookie()? },
                4 => {
                    let n = r.count(limits, 24)?;
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push((r.cookie()?, r.i64()?));
                    }
                    RequestBody::RenewAll { items }
                }
                5 => {
                    let n = r.count(limits, 16)?;
                    let mut cookies = Vec::with_capacity(n);
                    for _ in 0..n {
                        cookies.push(r.cookie()?);
                    }
                    RequestBody::CancelAll { cookies }
                }
                op => return Err(decode_err(format!("unknown request op {op}"))),
            };
            Ok(Request { id, body })
        })
    }
}

impl Reply {
    /// Encodes the reply.
    pub fn encode(&self, encoding: Encoding) -> Vec<u8> {
        let json = || ReplyJson::new(self.id, self.landlord, &self.body);
        let head = [self.id, self.landlord.0];
        encode_message(encoding, json, KIND_REPLY, &head, 40, |w| match &self.body {
            ReplyBody::Granted { cookie, duration } => {
                w.u8(1);
                w.cookie(*cookie);
                w.i64(*duration);
            }
            ReplyBody::Renewed { duration } => {
                w.u8(2);
                w.i64(*duration);
            }
            ReplyBody::Cancelled => w.u8(3),
            ReplyBody::RenewedAll { results } => {
                w.u8(4);
                w.u32(results.len() as u32);
                for r in results {
                    match r {
                        Outcome::Ok(d) => {
                            w.u8(0);
                            w.i64(*d);
                        }
                        Outcome::Err(e) => {
                            w.u8(1);
                            w.error(e);
                        }
                    }
                }
            }
            ReplyBody::CancelledAll { results } => {
                w.u8(5);
                w.u32(results.len() as u32);
                for r in results {
                    match r {
                        Outcome::Ok(()) => w.u8(0),
                        Outcome::Err(e) => {
                            w.u8(1);
                            w.error(e);
                        }
                    }
                }
            }
            ReplyBody::Error(e) => {
                w.u8(6);
                w.error(e);
            }
        })
    }

    /// Decodes a reply, enforcing `limits`.
    pub fn decode(bytes: &[u8], encoding: Encoding, limits: &Limits) -> Result<Reply> {
        let json = |j: ReplyJson<_>| {
            check_reply_limits(&j.body, limits)?;
            Ok(Reply { id: j.id, landlord: j.landlord, body: j.body })
        };
        decode_message(bytes, encoding, limits, "reply", KIND_REPLY, json, |r, id| {
            let landlord = LandlordId(r.u64()?);
            let body = match r.u8()? {
                1 => ReplyBody::Granted { cookie: r.cookie()?, duration: r.i64()? },
                2 => ReplyBody::Renewed { duration: r.i64()? },
                3 => ReplyBody::Cancelled,
                4 => {
                    let n = r.count(limits, 9)?;
                    let mut results = Vec::with_capacity(n);
                    for _ in 0..n {
                        results.push(match r.u8()? {
                            0 => Outcome::Ok(r.i64()?),
                            1 => Outcome::Err(r.error(limits)?),
                            t => return Err(decode_err(format!("bad outcome tag {t}"))),
                        });
                    }
                    ReplyBody::RenewedAll { results }
                }
                5 => {
                    let n = r.count(limits, 1)?;
                    let mut results = Vec::with_capacity(n);
                    for _ in 0..n {
                        results.push(match r.u8()? {
                            0 => Outcome::Ok(()),
                            1 => Outcome::Err(r.error(limits)?),
                            t => return Err(decode_err(format!("bad outcome tag {t}"))),
                        });
                    }
                    ReplyBody::CancelledAll { results }
                }
                6 => ReplyBody::Error(r.error(limits)?),
                op => return Err(decode_err(format!("unknown reply op {op}"))),
            };
            Ok(Reply { id, landlord, body })
        })
    }
}
