//! Wire messages of coordination: acquire (with a wait), watch, poll a watch's events, list
//! an exclusive resource's holders.
//!
//! The conventions are those of [`crate::wire`] and [`crate::codec`]: two encodings, canonical
//! JSON and compact binary, both versioned ([`WIRE_VERSION`](crate::wire::WIRE_VERSION)); decoding never panics and checks
//! [`Limits`] before it allocates (the whole message against `max_message_bytes`, every list
//! against `max_batch` and the bytes actually left, every resource, holder label and handback
//! against `max_resource_bytes`); every failure is a [`LeaseError::Decode`].
//! `core/tests/vectors/coord.json` has an example of every message in both encodings.
//!
//! These are messages of their own (not new ops of [`crate::wire::RequestBody`]), so that a
//! reader of the landlord protocol never meets a field it does not know: the leases they grant
//! and the watch registrations are renewed and cancelled with the landlord messages of
//! [`crate::wire`], by cookie, like any lease.
//!
//! # Binary form, version 1
//!
//! As in [`crate::codec`]: big-endian integers, a cookie in 16 bytes, a duration an `i64`, a
//! count a `u32`, a byte string a `u32` length and the bytes, an error an `i32` code and a byte
//! string of UTF-8.
//!
//! | field | request | reply |
//! |---|---|---|
//! | magic | `0x4C` | `0x4C` |
//! | version | `0x01` | `0x01` |
//! | kind | `0x30` | `0x31` |
//! | id | `u64` | `u64` (the request's) |
//! | landlord | (none) | `u64` |
//! | op | `u8`, see below | `u8`, see below |
//!
//! Request ops: `1` acquire: resource, duration, wait (`i64` ms), holder (byte string);
//! `2` watch: resource, flags (`u8`: bit 0 prefix, bit 1 renewals), duration, handback;
//! `3` poll: cookie, since (`u64`), wait (`i64` ms), max (`u32`); `4` holders: resource,
//! prefix (`u8` 0 or 1).
//!
//! Reply ops: `1` acquired: cookie, duration, token (`u64`), resource, waited (`i64`);
//! `2` watching: cookie, duration, event id (`u64`), sequence (`u64`), holders;
//! `3` events: event id (`u64`), handback, last (`u64`), `0x00` or `0x01` and missed from and
//! to (`u64` each), `0x00` or `0x01` and holders, a count and that many events; `4` holders:
//! holders; `5` error: an error. *Holders* are a count and that many of: resource, token
//! (`u64`), holder label, remaining (`i64`). An *event* is: sequence (`u64`), kind (`u8`: 1
//! granted, 2 renewed, 3 cancelled, 4 expired), resource, token (`u64`), holder label,
//! duration (`i64`).
//!
//! Nothing may follow the last field.
//!
//! # JSON form, version 1
//!
//! One object, keys in this order when written, no white space; 64-bit integers as decimal
//! strings, cookies and landlord ids as hex, byte strings (resources, labels, handbacks) as hex:
//!
//! ```text
//! {"v":1,"id":"1","body":{"op":"acquire","resource":"6c6f636b","duration":"10000","wait":"5000","holder":""}}
//! {"v":1,"id":"1","landlord":"0000000000000001","body":{"op":"acquired","cookie":"<32 hex>","duration":"10000","token":"7","resource":"6c6f636b","waited":"0"}}
//! ```
//!
//! Request bodies by `op`: `acquire` {`resource`, `duration`, `wait`, `holder`}; `watch`
//! {`resource`, `prefix`, `renewals`, `duration`, `handback`}; `poll` {`cookie`, `since`,
//! `wait`, `max`}; `holders` {`resource`, `prefix`}. Reply bodies: `acquired` {`cookie`,
//! `duration`, `token`, `resource`, `waited`}; `watching` {`cookie`, `duration`, `event_id`,
//! `sequence`, `current`: [holder...]}; `events` {`event_id`, `handback`, `last`, `missed`
//! (optional: {`from`, `to`}), `current` (optional: [holder...]), `events`: [event...]};
//! `holders` {`holders`: [holder...]}; `error` {`code`, `message`}. A holder is {`resource`,
//! `token`, `holder`, `remaining`}; an event {`sequence`, `kind` (`"granted"`, `"renewed"`,
//! `"cancelled"`, `"expired"`), `resource`, `token`, `holder`, `duration`}. Unknown keys
//! anywhere are rejected.

use serde::{Deserialize, Serialize};

use super::{EventKind, Events, Holder, LeaseEvent, Missed};
use crate::codec::{decode_err, decode_message, encode_message, ReplyJson, RequestJson, R, W};
use crate::error::{LeaseError, Result};
use crate::event::EventId;
use crate::lease::{Cookie, LandlordId};
use crate::time::Duration;
use crate::wire::{Encoding, Limits, WireError};

/// Binary kind of a coordination request.
pub const KIND_REQUEST: u8 = 0x30;
/// Binary kind of a coordination reply.
pub const KIND_REPLY: u8 = 0x31;

/// A coordination request. `id` is chosen by the sender and echoed in the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordRequest {
    /// Correlates the reply with this request.
    pub id: u64,
    /// What is asked.
    pub body: CoordRequestBody,
}

/// The coordination operations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum CoordRequestBody {
    /// A lease on `resource` (or on a free member, if it names a pool) with its fencing token;
    /// if it is exclusive and held, wait up to `wait` ms for it (0: do not wait).
    Acquire {
        /// The resource or pool.
        #[serde(with = "crate::wire::hex_bytes")]
        resource: Vec<u8>,
        /// Requested duration (positive, FOREVER or ANY).
        #[serde(with = "crate::time::dec::i64")]
        duration: Duration,
        /// Longest wait, in ms.
        #[serde(with = "crate::time::dec::i64")]
        wait: Duration,
        /// A label for the holder that watchers see (empty for none).
        #[serde(with = "crate::wire::hex_bytes")]
        holder: Vec<u8>,
    },
    /// A watch registration (leased) on `resource`, or on every resource under it if `prefix`.
    Watch {
        /// The resource or prefix.
        #[serde(with = "crate::wire::hex_bytes")]
        resource: Vec<u8>,
        /// Whether `resource` is a prefix.
        prefix: bool,
        /// Whether renewals are events too.
        renewals: bool,
        /// Requested duration of the registration's lease.
        #[serde(with = "crate::time::dec::i64")]
        duration: Duration,
        /// Returned with the events, byte for byte.
        #[serde(with = "crate::wire::hex_bytes")]
        handback: Vec<u8>,
    },
    /// The events of a watch after number `since`; if there are none, wait up to `wait` ms for
    /// one. At most `max` events (and never more than the message limits allow).
    Poll {
        /// The registration's cookie.
        cookie: Cookie,
        /// The last number the watcher has.
        #[serde(with = "crate::time::dec::u64")]
        since: u64,
        /// Longest wait, in ms.
        #[serde(with = "crate::time::dec::i64")]
        wait: Duration,
        /// Most events wanted.
        max: u32,
    },
    /// The holders of an exclusive resource, or of every exclusive resource under a prefix.
    Holders {
        /// The resource or prefix.
        #[serde(with = "crate::wire::hex_bytes")]
        resource: Vec<u8>,
        /// Whether `resource` is a prefix.
        prefix: bool,
    },
}

/// A landlord's answer to a [`CoordRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordReply {
    /// The `id` of the request answered.
    pub id: u64,
    /// The landlord that answered (renew and cancel the leases there).
    pub landlord: LandlordId,
    /// The answer.
    pub body: CoordReplyBody,
}

/// The coordination answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum CoordReplyBody {
    /// A lease was granted.
    Acquired {
        /// The lease's cookie.
        cookie: Cookie,
        /// Granted duration (relative; the holder adds its send time and `waited`).
        #[serde(with = "crate::time::dec::i64")]
        duration: Duration,
        /// The fencing token.
        #[serde(with = "crate::time::dec::u64")]
        token: u64,
        /// What was granted (a member, for a pool).
        #[serde(with = "crate::wire::hex_bytes")]
        resource: Vec<u8>,
        /// How long the request waited at the landlord.
        #[serde(with = "crate::time::dec::i64")]
        waited: Duration,
    },
    /// A watch registration was made.
    Watching {
        /// The registration's lease cookie.
        cookie: Cookie,
        /// Granted duration of the registration's lease.
        #[serde(with = "crate::time::dec::i64")]
        duration: Duration,
        /// The event id of its events.
        #[serde(with = "crate::time::dec::u64")]
        event_id: EventId,
        /// The number the first event follows.
        #[serde(with = "crate::time::dec::u64")]
        sequence: u64,
        /// The selected exclusive resources held when the watch was made.
        current: Vec<Holder>,
    },
    /// A watch's events.
    Events(Events),
    /// Holders of exclusive resources.
    Holders {
        /// In resource order.
        holders: Vec<Holder>,
    },
    /// The request failed (denied: the resource is held, the wait ran out; unknown lease: the
    /// watch is gone; invalid argument; an undecodable request).
    Error(WireError),
}

impl CoordReply {
    /// The acquired lease, or the error this reply carries (anything else is a decode error).
    pub fn acquired(&self) -> Result<super::Acquired> {
        match &self.body {
            CoordReplyBody::Acquired { cookie, duration, token, resource, waited } => {
                Ok(super::Acquired {
                    cookie: *cookie,
                    duration: *duration,
                    token: *token,
                    resource: resource.clone(),
                    waited: *waited,
                })
            }
            CoordReplyBody::Error(e) => Err(e.to_error()),
            other => Err(LeaseError::Decode(format!("expected acquired, got {}", op_of(other)))),
        }
    }

    /// The events, or the error this reply carries.
    pub fn events(&self) -> Result<&Events> {
        match &self.body {
            CoordReplyBody::Events(e) => Ok(e),
            CoordReplyBody::Error(e) => Err(e.to_error()),
            other => Err(LeaseError::Decode(format!("expected events, got {}", op_of(other)))),
        }
    }
}

fn op_of(b: &CoordReplyBody) -> &'static str {
    match b {
        CoordReplyBody::Acquired { .. } => "acquired",
        CoordReplyBody::Watching { .. } => "watching",
        CoordReplyBody::Events(_) => "events",
        CoordReplyBody::Holders { .. } => "holders",
        CoordReplyBody::Error(_) => "error",
    }
}

// ---------- checks shared by both encodings ----------

fn check_count(n: usize, limits: &Limits, what: &str) -> Result<()> {
    if n > limits.max_batch {
        return Err(decode_err(format!("{n} {what}, more than the {} allowed", limits.max_batch)));
    }
    Ok(())
}

fn check_bytes(b: &[u8], limits: &Limits, what: &str) -> Result<()> {
    if b.len() > limits.max_resource_bytes {
        return Err(decode_err(format!(
            "{what} is {} bytes, more than the {} allowed",
            b.len(),
            limits.max_resource_bytes
        )));
    }
    Ok(())
}

fn check_holders(hs: &[Holder], limits: &Limits) -> Result<()> {
    check_count(hs.len(), limits, "holders")?;
    for h in hs {
        check_bytes(&h.resource, limits, "a resource")?;
        check_bytes(&h.holder, limits, "a holder label")?;
    }
    Ok(())
}

fn check_request(body: &CoordRequestBody, limits: &Limits) -> Result<()> {
    match body {
        CoordRequestBody::Acquire { resource, holder, .. } => {
            check_bytes(resource, limits, "resource")?;
            check_bytes(holder, limits, "holder label")
        }
        CoordRequestBody::Watch { resource, handback, .. } => {
            check_bytes(resource, limits, "resource")?;
            check_bytes(handback, limits, "handback")
        }
        CoordRequestBody::Holders { resource, .. } => check_bytes(resource, limits, "resource"),
        CoordRequestBody::Poll { .. } => Ok(()),
    }
}

fn check_reply(body: &CoordReplyBody, limits: &Limits) -> Result<()> {
    match body {
        CoordReplyBody::Acquired { resource, .. } => check_bytes(resource, limits, "resource"),
        CoordReplyBody::Watching { current, .. } => check_holders(current, limits),
        CoordReplyBody::Events(e) => {
            check_bytes(&e.handback, limits, "handback")?;
            if let Some(c) = &e.current {
                check_holders(c, limits)?;
            }
            check_count(e.events.len(), limits, "events")?;
            for ev in &e.events {
                check_bytes(&ev.resource, limits, "a resource")?;
                check_bytes(&ev.holder, limits, "a holder label")?;
            }
            Ok(())
        }
        CoordReplyBody::Holders { holders } => check_holders(holders, limits),
        CoordReplyBody::Error(_) => Ok(()),
    }
}

// ---------- binary pieces ----------

/// Smallest encodings, to check counts against the bytes left.
const MIN_HOLDER: usize = 4 + 8 + 4 + 8;
const MIN_EVENT: usize = 8 + 1 + 4 + 8 + 4 + 8;

fn put_holders(w: &mut W, hs: &[Holder]) {
    w.u32(hs.len() as u32);
    for h in hs {
        w.bytes(&h.resource);
        w.u64(h.token);
        w.bytes(&h.holder);
        w.i64(h.remaining);
    }
}

fn list(r: &mut R<'_>, limits: &Limits, each: usize, what: &str) -> Result<usize> {
    let n = r.u32()? as usize;
    check_count(n, limits, what)?;
    if n.saturating_mul(each) > r.b.len() - r.at {
        return Err(decode_err(format!(
            "truncated message: {n} {what} announced, only {} byte(s) left",
            r.b.len() - r.at
        )));
    }
    Ok(n)
}

fn holders(r: &mut R<'_>, limits: &Limits) -> Result<Vec<Holder>> {
    let n = list(r, limits, MIN_HOLDER, "holders")?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(Holder {
            resource: r.bytes(limits.max_resource_bytes, "a resource")?.to_vec(),
            token: r.u64()?,
            holder: r.bytes(limits.max_resource_bytes, "a holder label")?.to_vec(),
            remaining: r.i64()?,
        });
    }
    Ok(v)
}

fn flag(r: &mut R<'_>, what: &str) -> Result<bool> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        t => Err(decode_err(format!("{what} is {t}, not 0 or 1"))),
    }
}

// ---------- requests ----------

impl CoordRequest {
    /// Encodes the request.
    pub fn encode(&self, encoding: Encoding) -> Vec<u8> {
        use CoordRequestBody as B;
        let json = || RequestJson::new(self.id, &self.body);
        encode_message(encoding, json, KIND_REQUEST, &[self.id], 64, |w| match &self.body {
            B::Acquire { resource, duration, wait, holder } => {
                w.u8(1);
                w.bytes(resource);
                w.i64(*duration);
                w.i64(*wait);
                w.bytes(holder);
            }
            B::Watch { resource, prefix, renewals, duration, handback } => {
                w.u8(2);
                w.bytes(resource);
                w.u8(u8::from(*prefix) | u8::from(*renewals) << 1);
                w.i64(*duration);
                w.bytes(handback);
            }
            B::Poll { cookie, since, wait, max } => {
                w.u8(3);
                w.cookie(*cookie);
                w.u64(*since);
                w.i64(*wait);
                w.u32(*max);
            }
            B::Holders { resource, prefix } => {
                w.u8(4);
                w.bytes(resource);
                w.u8(u8::from(*prefix));
            }
        })
    }

    /// Decodes a request, enforcing `limits`.
    pub fn decode(bytes: &[u8], encoding: Encoding, limits: &Limits) -> Result<CoordRequest> {
        use CoordRequestBody as B;
        let json = |j: RequestJson<_>| {
            check_request(&j.body, limits)?;
            Ok(CoordRequest { id: j.id, body: j.body })
        };
        decode_message(
            bytes,
            encoding,
            limits,
            "coordination request",
            KIND_REQUEST,
            json,
            |r, id| {
                let max = limits.max_resource_bytes;
                let body = match r.u8()? {
                    1 => B::Acquire {
                        resource: r.bytes(max, "resource")?.to_vec(),
                        duration: r.i64()?,
                        wait: r.i64()?,
                        holder: r.bytes(max, "holder label")?.to_vec(),
                    },
                    2 => {
                        let resource = r.bytes(max, "resource")?.to_vec();
                        let flags = r.u8()?;
                        if flags > 3 {
                            return Err(decode_err(format!("watch flags 0x{flags:02x}")));
                        }
                        B::Watch {
                            resource,
                            prefix: flags & 1 != 0,
                            renewals: flags & 2 != 0,
                            duration: r.i64()?,
                            handback: r.bytes(max, "handback")?.to_vec(),
                        }
                    }
                    3 => B::Poll {
                        cookie: r.cookie()?,
                        since: r.u64()?,
                        wait: r.i64()?,
                        max: r.u32()?,
                    },
                    4 => B::Holders {
                        resource: r.bytes(max, "resource")?.to_vec(),
                        prefix: flag(r, "prefix")?,
                    },
                    op => return Err(decode_err(format!("unknown coordination request op {op}"))),
                };
                Ok(CoordRequest { id, body })
            },
        )
    }
}

// ---------- replies ----------

impl CoordReply {
    /// Encodes the reply.
    pub fn encode(&self, encoding: Encoding) -> Vec<u8> {
        use CoordReplyBody as B;
        let json = || ReplyJson::new(self.id, self.landlord, &self.body);
        let head = [self.id, self.landlord.0];
        encode_message(encoding, json, KIND_REPLY, &head, 64, |w| match &self.body {
            B::Acquired { cookie, duration, token, resource, waited } => {
                w.u8(1);
                w.cookie(*cookie);
                w.i64(*duration);
                w.u64(*token);
                w.bytes(resource);
                w.i64(*waited);
            }
            B::Watching { cookie, duration, event_id, sequence, current } => {
                w.u8(2);
                w.cookie(*cookie);
                w.i64(*duration);
                w.u64(*event_id);
                w.u64(*sequence);
                put_holders(w, current);
            }
            B::Events(e) => {
                w.u8(3);
                w.u64(e.event_id);
                w.bytes(&e.handback);
                w.u64(e.last);
                match e.missed {
                    None => w.u8(0),
                    Some(m) => {
                        w.u8(1);
                        w.u64(m.from);
                        w.u64(m.to);
                    }
                }
                match &e.current {
                    None => w.u8(0),
                    Some(c) => {
                        w.u8(1);
                        put_holders(w, c);
                    }
                }
                w.u32(e.events.len() as u32);
                for ev in &e.events {
                    w.u64(ev.sequence);
                    w.u8(ev.kind.code());
                    w.bytes(&ev.resource);
                    w.u64(ev.token);
                    w.bytes(&ev.holder);
                    w.i64(ev.duration);
                }
            }
            B::Holders { holders } => {
                w.u8(4);
                put_holders(w, holders);
            }
            B::Error(e) => {
                w.u8(5);
                w.error(e);
            }
        })
    }

    /// Decodes a reply, enforcing `limits`.
    pub fn decode(bytes: &[u8], encoding: Encoding, limits: &Limits) -> Result<CoordReply> {
        use CoordReplyBody as B;
        let json = |j: ReplyJson<_>| {
            check_reply(&j.body, limits)?;
            Ok(CoordReply { id: j.id, landlord: j.landlord, body: j.body })
        };
        decode_message(bytes, encoding, limits, "coordination reply", KIND_REPLY, json, |r, id| {
            let landlord = LandlordId(r.u64()?);
            let max = limits.max_resource_bytes;
            let body = match r.u8()? {
                1 => B::Acquired {
                    cookie: r.cookie()?,
                    duration: r.i64()?,
                    token: r.u64()?,
                    resource: r.bytes(max, "resource")?.to_vec(),
                    waited: r.i64()?,
                },
                2 => B::Watching {
                    cookie: r.cookie()?,
                    duration: r.i64()?,
                    event_id: r.u64()?,
                    sequence: r.u64()?,
                    current: holders(r, limits)?,
                },
                3 => {
                    let event_id = r.u64()?;
                    let handback = r.bytes(max, "handback")?.to_vec();
                    let last = r.u64()?;
                    let missed = if flag(r, "missed tag")? {
                        Some(Missed { from: r.u64()?, to: r.u64()? })
                    } else {
                        None
                    };
                    let current =
                        if flag(r, "current tag")? { Some(holders(r, limits)?) } else { None };
                    let n = list(r, limits, MIN_EVENT, "events")?;
                    let mut events = Vec::with_capacity(n);
                    for _ in 0..n {
                        let sequence = r.u64()?;
                        let k = r.u8()?;
                        let kind = EventKind::from_code(k)
                            .ok_or_else(|| decode_err(format!("unknown event kind {k}")))?;
                        events.push(LeaseEvent {
                            sequence,
                            kind,
                            resource: r.bytes(max, "a resource")?.to_vec(),
                            token: r.u64()?,
                            holder: r.bytes(max, "a holder label")?.to_vec(),
                            duration: r.i64()?,
                        });
                    }
                    B::Events(Events { event_id, handback, last, missed, current, events })
                }
                4 => B::Holders { holders: holders(r, limits)? },
                5 => B::Error(r.error(limits)?),
                op => return Err(decode_err(format!("unknown coordination reply op {op}"))),
            };
            Ok(CoordReply { id, landlord, body })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips_in_both_encodings() {
        let holder = Holder {
            resource: b"locks/a".to_vec(),
            token: 9,
            holder: b"me".to_vec(),
            remaining: 1234,
        };
        let requests = [
            CoordRequestBody::Acquire {
                resource: b"x".to_vec(),
                duration: -1,
                wait: 500,
                holder: vec![],
            },
            CoordRequestBody::Watch {
                resource: b"p/".to_vec(),
                prefix: true,
                renewals: true,
                duration: 30_000,
                handback: vec![1, 2],
            },
            CoordRequestBody::Poll { cookie: Cookie(5), since: 3, wait: 0, max: 10 },
            CoordRequestBody::Holders { resource: vec![], prefix: true },
        ];
        for body in requests {
            let req = CoordRequest { id: u64::MAX, body };
            for enc in [Encoding::Json, Encoding::Binary] {
                let b = req.encode(enc);
                assert_eq!(CoordRequest::decode(&b, enc, &Limits::default()).unwrap(), req);
            }
        }
        let replies = [
            CoordReplyBody::Acquired {
                cookie: Cookie(7),
                duration: 10,
                token: 3,
                resource: b"m".to_vec(),
                waited: 2,
            },
            CoordReplyBody::Watching {
                cookie: Cookie(8),
                duration: 5,
                event_id: 2,
                sequence: 0,
                current: vec![holder.clone()],
            },
            CoordReplyBody::Events(Events {
                event_id: 2,
                handback: vec![],
                last: 9,
                missed: Some(Missed { from: 1, to: 4 }),
                current: Some(vec![holder.clone()]),
                events: vec![LeaseEvent {
                    sequence: 5,
                    kind: EventKind::Expired,
                    resource: b"r".to_vec(),
                    token: 4,
                    holder: vec![],
                    duration: 0,
                }],
            }),
            CoordReplyBody::Holders { holders: vec![holder] },
            CoordReplyBody::Error(WireError { code: 2, message: "held".into() }),
        ];
        for body in replies {
            let rep = CoordReply { id: 1, landlord: LandlordId(3), body };
            for enc in [Encoding::Json, Encoding::Binary] {
                let b = rep.encode(enc);
                assert_eq!(CoordReply::decode(&b, enc, &Limits::default()).unwrap(), rep);
            }
        }
    }
}
