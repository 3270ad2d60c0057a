//! Wire messages of a renewal service reached over a network: the client's set operations
//! ([`SetRequest`], [`SetReply`]) and the events it delivers to listeners
//! ([`SetEventMessage`]).
//!
//! They follow the conventions of [`crate::wire`]: canonical JSON, versioned ([`WIRE_VERSION`]),
//! 64-bit integers as decimal strings, cookies and landlord ids as hex, byte strings as hex;
//! decoding never panics, checks [`Limits`] and rejects unknown keys; every failure is a
//! [`LeaseError::Decode`]. `core/tests/vectors/renewal.json` has an example of every message.
//! Each also has a binary form, laid out like the landlord messages' (see [Binary
//! form](#binary-form)); both are in the vectors.
//!
//! These are messages of their own, not new ops of [`crate::wire::RequestBody`]: a set's own
//! lease is renewed and cancelled with the landlord messages of [`crate::wire`] (its landlord
//! is the service; [`super::RenewalService::handle_request`] answers them), so every lease
//! client can keep a set alive.
//!
//! # Sets and client leases on the wire
//!
//! A set is named by its lease's cookie (`set`): the cookie is unguessable, so knowing it is
//! the right to use the set, as for any lease. The set's landlord (the service's id) routes the
//! message (`POST /renewal?landlord=<16 hex digits>` on `leasehold-server`), as a lease's
//! landlord routes a renewal.
//!
//! A client lease travels as its landlord id, its cookie, the time it has left when the
//! message is written (`remaining`, the DURATION serial form's rule: the reader adds its own
//! clock, so hosts whose clocks differ agree; [`crate::FOREVER`] stays FOREVER) and `urls`:
//! where its landlord is reached (the servers of a `leasehold-server` cluster, or any host that
//! answers the landlord messages of [`crate::wire`] at `POST <url>/lease?landlord=...`).
//! Landlord ids are only unique within one cluster, so the service tells client leases apart
//! by landlord id *and* URLs (see [`super::RenewalService::handle_set_request`]).
//!
//! # Requests (`op`)
//!
//! - `create_set` {`duration`}: a new set whose lease lasts at most `duration` (positive,
//!   FOREVER or ANY). Answer: `set_created` {`set` (the set's number, the `object` of its
//!   events), `cookie`, `duration` (granted, relative: the client adds its send time)}.
//! - `add` {`set`, `lease`, `membership`, `renew`}: renew `lease` (a [`ClientLease`] without
//!   membership fields) until `membership` ms from now (FOREVER: until removed), asking for
//!   `renew` each time (positive, FOREVER, or ANY with a FOREVER membership). Adding a lease
//!   the set holds updates its membership. Answer: `done`.
//! - `remove` {`set`, `landlord`, `cookie`, `urls`}: take the lease out of the set (it is not
//!   cancelled). Answer: `removed` {`lease`: the lease as last renewed, or absent if the set
//!   did not hold it}.
//! - `leases` {`set`}: the set's client leases. Answer: `leases` {`leases`: [lease...]}, each
//!   with its membership (`membership`: time left until its desired expiration, `renew`).
//! - `listen` {`set`, `event`, `min_warning`, `url`, `handback`}: register `url` for the set's
//!   `"expiration_warning"` events (`min_warning` ms before the set's lease expires) or its
//!   `"renewal_failure"` events (`min_warning` 0); replaces an earlier registration of that
//!   event. Answer: `registered` {`event_id`, `sequence`}.
//! - `unlisten` {`set`, `event`}: ends that registration. Answer: `done`.
//!
//! Any request may be answered `error` {`code`, `message`}: unknown lease (the set is gone),
//! invalid argument, denied (the set-lease policy), decode.
//!
//! # Events
//!
//! The service POSTs each event to its registration's URL as one [`SetEventMessage`]
//! (`Content-Type: application/json`): {`v`, `event_id`, `sequence`, `service`, `set`,
//! `handback`, `body`}, `body` being `expiration_warning` {`remaining`} (the set's lease's time
//! left) or `renewal_failure` {`lease`, `error` (absent when the lease simply ran out)}.
//! Sequence numbers increase strictly per `event_id`; a listener that sees a gap has missed
//! events. A listener answers 2xx when it took the event, 404 or 410 when it knows no such
//! registration (the registration then ends, as Jini's `UnknownEventException` ends it).

//!
//! # Binary form
//!
//! Big-endian, as [`crate::wire`]'s: the magic byte, the wire version, the kind
//! ([`KIND_SET_REQUEST`], [`KIND_SET_REPLY`], [`KIND_SET_EVENT`]), then the `id` (an event:
//! its `event_id`) as a u64 and the fields in the order of the JSON form. A byte string or a
//! text is a u32 length and its bytes (URLs at most [`MAX_URL_BYTES`], UTF-8); a list is a u32
//! count and its items; an optional value a byte 0 (absent) or 1 and the value; a cookie 16
//! bytes, a landlord id 8, a duration an i64, an error an i32 code and a text. A body starts
//! with its op (or event kind) as a byte, numbered in the order of the lists above from 1
//! (`create_set` 1 ... `unlisten` 6; `set_created` 1, `done` 2, `removed` 3, `leases` 4,
//! `registered` 5, `error` 6; `expiration_warning` 1, `renewal_failure` 2); an event type is a
//! byte, `expiration_warning` 1, `renewal_failure` 2. A [`ClientLease`] is `landlord`,
//! `cookie`, `remaining`, `urls`, then `membership` and `renew` as optional values.

use serde::{Deserialize, Serialize};

use crate::codec::{
    decode_err, decode_message, encode_message, ReplyJson, RequestJson, Versioned, R, W,
};
use crate::error::{LeaseError, Result};
use crate::event::EventId;
use crate::lease::{Cookie, LandlordId};
use crate::time::Duration;
use crate::wire::{Encoding, Limits, WireError, WIRE_VERSION};

/// Kind byte of a binary [`SetRequest`].
pub const KIND_SET_REQUEST: u8 = 0x40;
/// Kind byte of a binary [`SetReply`].
pub const KIND_SET_REPLY: u8 = 0x41;
/// Kind byte of a binary [`SetEventMessage`].
pub const KIND_SET_EVENT: u8 = 0x42;

/// Most URLs a client lease's landlord may be given.
pub const MAX_URLS: usize = 16;
/// Longest URL accepted (a landlord's, a listener's).
pub const MAX_URL_BYTES: usize = 1024;

/// A client lease as it travels: where its landlord is and how long it has left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientLease {
    /// The landlord's id (as its cluster numbers it).
    pub landlord: LandlordId,
    /// The lease's cookie.
    pub cookie: Cookie,
    /// Time left when the message was written (negative: expired; FOREVER: never ends).
    #[serde(with = "crate::time::dec::i64")]
    pub remaining: Duration,
    /// Where the landlord is reached: base URLs (`http://host:port`), tried in turn.
    pub urls: Vec<String>,
    /// In a `leases` answer: time left until the lease's desired expiration (FOREVER for
    /// none).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::time::dec::opt_i64")]
    pub membership: Option<Duration>,
    /// In a `leases` answer: the duration each renewal asks for.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::time::dec::opt_i64")]
    pub renew: Option<Duration>,
}

/// Which event of a set a registration is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetEventType {
    /// The set's lease is about to expire.
    ExpirationWarning,
    /// A client lease could not be renewed.
    RenewalFailure,
}

/// A request to a renewal service. `id` is chosen by the sender and echoed in the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetRequest {
    /// Correlates the reply with this request.
    pub id: u64,
    /// What is asked.
    pub body: SetRequestBody,
}

/// The set operations (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum SetRequestBody {
    /// A new set, leased for at most `duration`.
    CreateSet {
        /// Requested duration of the set's lease (positive, FOREVER or ANY).
        #[serde(with = "crate::time::dec::i64")]
        duration: Duration,
    },
    /// Puts a client lease into a set (or updates its membership).
    Add {
        /// The set's lease cookie.
        set: Cookie,
        /// The client lease (without membership fields).
        lease: ClientLease,
        /// How long to keep it renewed, from now (FOREVER: until removed).
        #[serde(with = "crate::time::dec::i64")]
        membership: Duration,
        /// What each renewal asks for.
        #[serde(with = "crate::time::dec::i64")]
        renew: Duration,
    },
    /// Takes a client lease out of a set, without cancelling it.
    Remove {
        /// The set's lease cookie.
        set: Cookie,
        /// The client lease's landlord.
        landlord: LandlordId,
        /// The client lease's cookie.
        cookie: Cookie,
        /// Where its landlord is reached, as given when it was added.
        urls: Vec<String>,
    },
    /// The client leases of a set.
    Leases {
        /// The set's lease cookie.
        set: Cookie,
    },
    /// Registers a listener URL for one of the set's events.
    Listen {
        /// The set's lease cookie.
        set: Cookie,
        /// Which event.
        event: SetEventType,
        /// For expiration warnings: how long before the set's lease expires (0 otherwise).
        #[serde(with = "crate::time::dec::i64")]
        min_warning: Duration,
        /// Where to POST the events.
        url: String,
        /// Returned with every event, byte for byte.
        #[serde(with = "crate::wire::hex_bytes")]
        handback: Vec<u8>,
    },
    /// Ends a registration.
    Unlisten {
        /// The set's lease cookie.
        set: Cookie,
        /// Which event.
        event: SetEventType,
    },
}

/// A renewal service's answer to a [`SetRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetReply {
    /// The `id` of the request answered.
    pub id: u64,
    /// The service (the landlord of set leases) that answered.
    pub landlord: LandlordId,
    /// The answer.
    pub body: SetReplyBody,
}

/// The answers (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum SetReplyBody {
    /// A set was made.
    SetCreated {
        /// The set's number (the `object` of its events).
        #[serde(with = "crate::time::dec::u64")]
        set: u64,
        /// Its lease's cookie (the reply's `landlord` is its landlord).
        cookie: Cookie,
        /// Granted duration (relative: the client adds the time it sent the request).
        #[serde(with = "crate::time::dec::i64")]
        duration: Duration,
    },
    /// Done.
    Done,
    /// A lease was taken out of a set (`None`: the set did not hold it).
    Removed {
        /// The lease as last renewed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease: Option<ClientLease>,
    },
    /// The client leases of a set, with their memberships.
    Leases {
        /// In landlord, then cookie order.
        leases: Vec<ClientLease>,
    },
    /// A listener was registered.
    Registered {
        /// The registration's event id.
        #[serde(with = "crate::time::dec::u64")]
        event_id: EventId,
        /// The sequence number its next event follows.
        #[serde(with = "crate::time::dec::u64")]
        sequence: u64,
    },
    /// The request failed.
    Error(WireError),
}

impl SetReply {
    /// The error this reply carries, if it is one.
    pub fn error(&self) -> Option<LeaseError> {
        match &self.body {
            SetReplyBody::Error(e) => Some(e.to_error()),
            _ => None,
        }
    }
}

/// An event of a set, as the service POSTs it to a listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetEventMessage {
    /// The registration's event id.
    pub event_id: EventId,
    /// Strictly increasing per `event_id`.
    pub sequence: u64,
    /// The service (the landlord of set leases).
    pub service: LandlordId,
    /// The set's number.
    pub set: u64,
    /// The registration's handback, byte for byte.
    pub handback: Vec<u8>,
    /// What happened.
    pub body: SetEventBody,
}

/// What a set's event reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SetEventBody {
    /// The set's lease expires in `remaining` ms: renew it or lose the set.
    ExpirationWarning {
        /// Time left on the set's lease when the event was written.
        #[serde(with = "crate::time::dec::i64")]
        remaining: Duration,
    },
    /// A client lease could not be renewed and left the set.
    RenewalFailure {
        /// The lease, with the time it had left (negative once expired).
        lease: ClientLease,
        /// The last renewal attempt's error; absent when the lease simply ran out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<WireError>,
    },
}

// ---------- JSON envelopes ----------

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventJson {
    v: u32,
    #[serde(with = "crate::time::dec::u64")]
    event_id: EventId,
    #[serde(with = "crate::time::dec::u64")]
    sequence: u64,
    service: LandlordId,
    #[serde(with = "crate::time::dec::u64")]
    set: u64,
    #[serde(with = "crate::wire::hex_bytes")]
    handback: Vec<u8>,
    body: SetEventBody,
}

impl Versioned for EventJson {
    fn version(&self) -> u32 {
        self.v
    }
}

// ---------- checks ----------

/// Checks a URL given for a landlord or a listener: `http://` or `https://`, a host, at most
/// [`MAX_URL_BYTES`], no white space or control characters.
pub fn check_url(url: &str) -> Result<()> {
    let bad = |why: &str| LeaseError::InvalidArgument(format!("URL {url:?}: {why}"));
    if url.len() > MAX_URL_BYTES {
        return Err(bad(&format!("longer than {MAX_URL_BYTES} bytes")));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("white space or a control character"));
    }
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| bad("not http:// or https://"))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(bad("no host"));
    }
    Ok(())
}

pub(super) fn check_landlord_urls(urls: &[String]) -> Result<()> {
    if urls.is_empty() {
        return Err(LeaseError::InvalidArgument("a client lease needs its landlord's URLs".into()));
    }
    if urls.len() > MAX_URLS {
        return Err(LeaseError::InvalidArgument(format!(
            "{} landlord URLs, at most {MAX_URLS}",
            urls.len()
        )));
    }
    urls.iter().try_for_each(|u| check_url(u))
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

/// What a decoder refuses in a message that parses (URLs are checked where they are used, so
/// that a bad one is an invalid argument, not an undecodable message).
fn check_request(body: &SetRequestBody, limits: &Limits) -> Result<()> {
    let urls = |u: &[String]| {
        if u.len() > MAX_URLS {
            Err(decode_err(format!("{} URLs, at most {MAX_URLS}", u.len())))
        } else if u.iter().any(|x| x.len() > MAX_URL_BYTES) {
            Err(decode_err(format!("a URL longer than {MAX_URL_BYTES} bytes")))
        } else {
            Ok(())
        }
    };
    match body {
        SetRequestBody::Add { lease, .. } => urls(&lease.urls),
        SetRequestBody::Remove { urls: u, .. } => urls(u),
        SetRequestBody::Listen { url, handback, .. } => {
            urls(std::slice::from_ref(url))?;
            check_bytes(handback, limits, "handback")
        }
        SetRequestBody::CreateSet { .. }
        | SetRequestBody::Leases { .. }
        | SetRequestBody::Unlisten { .. } => Ok(()),
    }
}

// ---------- binary pieces ----------

/// Smallest encodings, to check counts against the bytes left: a URL, a client lease.
const MIN_URL: usize = 4;
const MIN_LEASE: usize = 8 + 16 + 8 + 4 + 1 + 1;

impl W {
    fn text(&mut self, s: &str) {
        self.bytes(s.as_bytes())
    }
    fn urls(&mut self, urls: &[String]) {
        self.u32(urls.len() as u32);
        urls.iter().for_each(|u| self.text(u));
    }
    fn opt_i64(&mut self, x: Option<i64>) {
        match x {
            None => self.u8(0),
            Some(x) => {
                self.u8(1);
                self.i64(x)
            }
        }
    }
    fn client_lease(&mut self, l: &ClientLease) {
        self.u64(l.landlord.0);
        self.cookie(l.cookie);
        self.i64(l.remaining);
        self.urls(&l.urls);
        self.opt_i64(l.membership);
        self.opt_i64(l.renew);
    }
    fn event_type(&mut self, e: SetEventType) {
        self.u8(match e {
            SetEventType::ExpirationWarning => 1,
            SetEventType::RenewalFailure => 2,
        })
    }
}

impl R<'_> {
    fn flag(&mut self, what: &str) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(decode_err(format!("{what}: presence byte {b}, not 0 or 1"))),
        }
    }
    fn text(&mut self, max: usize, what: &str) -> Result<String> {
        let b = self.bytes(max, what)?;
        std::str::from_utf8(b)
            .map(str::to_string)
            .map_err(|_| decode_err(format!("{what} is not UTF-8")))
    }
    fn counted(&mut self, max: usize, each: usize, what: &str) -> Result<usize> {
        let n = self.u32()? as usize;
        if n > max {
            return Err(decode_err(format!("{n} {what}, at most {max}")));
        }
        if n.saturating_mul(each) > self.b.len() - self.at {
            return Err(decode_err(format!(
                "truncated message: {n} {what} announced, only {} byte(s) left",
                self.b.len() - self.at
            )));
        }
        Ok(n)
    }
    fn urls(&mut self) -> Result<Vec<String>> {
        let n = self.counted(MAX_URLS, MIN_URL, "URLs")?;
        (0..n).map(|_| self.text(MAX_URL_BYTES, "a URL")).collect()
    }
    fn opt_i64(&mut self, what: &str) -> Result<Option<i64>> {
        Ok(if self.flag(what)? { Some(self.i64()?) } else { None })
    }
    fn client_lease(&mut self) -> Result<ClientLease> {
        Ok(ClientLease {
            landlord: LandlordId(self.u64()?),
            cookie: self.cookie()?,
            remaining: self.i64()?,
            urls: self.urls()?,
            membership: self.opt_i64("membership")?,
            renew: self.opt_i64("renew")?,
        })
    }
    fn event_type(&mut self) -> Result<SetEventType> {
        match self.u8()? {
            1 => Ok(SetEventType::ExpirationWarning),
            2 => Ok(SetEventType::RenewalFailure),
            b => Err(decode_err(format!("unknown set event type {b}"))),
        }
    }
}

impl SetRequest {
    /// Encodes the request.
    pub fn encode(&self, encoding: Encoding) -> Vec<u8> {
        use SetRequestBody as B;
        let json = || RequestJson::new(self.id, &self.body);
        encode_message(encoding, json, KIND_SET_REQUEST, &[self.id], 64, |w| match &self.body {
            B::CreateSet { duration } => {
                w.u8(1);
                w.i64(*duration);
            }
            B::Add { set, lease, membership, renew } => {
                w.u8(2);
                w.cookie(*set);
                w.client_lease(lease);
                w.i64(*membership);
                w.i64(*renew);
            }
            B::Remove { set, landlord, cookie, urls } => {
                w.u8(3);
                w.cookie(*set);
                w.u64(landlord.0);
                w.cookie(*cookie);
                w.urls(urls);
            }
            B::Leases { set } => {
                w.u8(4);
                w.cookie(*set);
            }
            B::Listen { set, event, min_warning, url, handback } => {
                w.u8(5);
                w.cookie(*set);
                w.event_type(*event);
                w.i64(*min_warning);
                w.text(url);
                w.bytes(handback);
            }
            B::Unlisten { set, event } => {
                w.u8(6);
                w.cookie(*set);
                w.event_type(*event);
            }
        })
    }

    /// Decodes a request, enforcing `limits`.
    pub fn decode(bytes: &[u8], encoding: Encoding, limits: &Limits) -> Result<SetRequest> {
        use SetRequestBody as B;
        let json = |j: RequestJson<_>| Ok(SetRequest { id: j.id, body: j.body });
        let m = decode_message(
            bytes,
            encoding,
            limits,
            "renewal set request",
            KIND_SET_REQUEST,
            json,
            |r, id| {
                let body = match r.u8()? {
                    1 => B::CreateSet { duration: r.i64()? },
                    2 => B::Add {
                        set: r.cookie()?,
                        lease: r.client_lease()?,
                        membership: r.i64()?,
                        renew: r.i64()?,
                    },
                    3 => B::Remove {
                        set: r.cookie()?,
                        landlord: LandlordId(r.u64()?),
                        cookie: r.cookie()?,
                        urls: r.urls()?,
                    },
                    4 => B::Leases { set: r.cookie()? },
                    5 => B::Listen {
                        set: r.cookie()?,
                        event: r.event_type()?,
                        min_warning: r.i64()?,
                        url: r.text(MAX_URL_BYTES, "a URL")?,
                        handback: r.bytes(limits.max_resource_bytes, "handback")?.to_vec(),
                    },
                    6 => B::Unlisten { set: r.cookie()?, event: r.event_type()? },
                    op => return Err(decode_err(format!("unknown renewal set request op {op}"))),
                };
                Ok(SetRequest { id, body })
            },
        )?;
        check_request(&m.body, limits)?;
        Ok(m)
    }

    /// The canonical JSON text.
    pub fn to_json(&self) -> Vec<u8> {
        self.encode(Encoding::Json)
    }

    /// Reads a request's JSON, enforcing `limits`.
    pub fn from_json(bytes: &[u8], limits: &Limits) -> Result<SetRequest> {
        SetRequest::decode(bytes, Encoding::Json, limits)
    }
}

impl SetReply {
    /// Encodes the reply.
    pub fn encode(&self, encoding: Encoding) -> Vec<u8> {
        use SetReplyBody as B;
        let json = || ReplyJson::new(self.id, self.landlord, &self.body);
        let head = [self.id, self.landlord.0];
        encode_message(encoding, json, KIND_SET_REPLY, &head, 64, |w| match &self.body {
            B::SetCreated { set, cookie, duration } => {
                w.u8(1);
                w.u64(*set);
                w.cookie(*cookie);
                w.i64(*duration);
            }
            B::Done => w.u8(2),
            B::Removed { lease } => {
                w.u8(3);
                match lease {
                    None => w.u8(0),
                    Some(l) => {
                        w.u8(1);
                        w.client_lease(l);
                    }
                }
            }
            B::Leases { leases } => {
                w.u8(4);
                w.u32(leases.len() as u32);
                leases.iter().for_each(|l| w.client_lease(l));
            }
            B::Registered { event_id, sequence } => {
                w.u8(5);
                w.u64(*event_id);
                w.u64(*sequence);
            }
            B::Error(e) => {
                w.u8(6);
                w.error(e);
            }
        })
    }

    /// Decodes a reply, enforcing `limits`.
    pub fn decode(bytes: &[u8], encoding: Encoding, limits: &Limits) -> Result<SetReply> {
        use SetReplyBody as B;
        let json = |j: ReplyJson<_>| Ok(SetReply { id: j.id, landlord: j.landlord, body: j.body });
        let m = decode_message(
            bytes,
            encoding,
            limits,
            "renewal set reply",
            KIND_SET_REPLY,
            json,
            |r, id| {
                let landlord = LandlordId(r.u64()?);
                let body = match r.u8()? {
                    1 => B::SetCreated { set: r.u64()?, cookie: r.cookie()?, duration: r.i64()? },
                    2 => B::Done,
                    3 => B::Removed {
                        lease: if r.flag("lease")? { Some(r.client_lease()?) } else { None },
                    },
                    4 => {
                        let n = r.counted(limits.max_batch, MIN_LEASE, "leases")?;
                        B::Leases {
                            leases: (0..n).map(|_| r.client_lease()).collect::<Result<_>>()?,
                        }
                    }
                    5 => B::Registered { event_id: r.u64()?, sequence: r.u64()? },
                    6 => B::Error(r.error(limits)?),
                    op => return Err(decode_err(format!("unknown renewal set reply op {op}"))),
                };
                Ok(SetReply { id, landlord, body })
            },
        )?;
        if let SetReplyBody::Leases { leases } = &m.body {
            if leases.len() > limits.max_batch {
                return Err(decode_err(format!(
                    "{} leases, more than the {} allowed",
                    leases.len(),
                    limits.max_batch
                )));
            }
        }
        Ok(m)
    }

    /// The canonical JSON text.
    pub fn to_json(&self) -> Vec<u8> {
        self.encode(Encoding::Json)
    }

    /// Reads a reply's JSON, enforcing `limits`.
    pub fn from_json(bytes: &[u8], limits: &Limits) -> Result<SetReply> {
        SetReply::decode(bytes, Encoding::Json, limits)
    }
}

impl SetEventMessage {
    /// Encodes the event.
    pub fn encode(&self, encoding: Encoding) -> Vec<u8> {
        let json = || EventJson {
            v: WIRE_VERSION as u32,
            event_id: self.event_id,
            sequence: self.sequence,
            service: self.service,
            set: self.set,
            handback: self.handback.clone(),
            body: self.body.clone(),
        };
        let head = [self.event_id, self.sequence, self.service.0, self.set];
        encode_message(encoding, json, KIND_SET_EVENT, &head, 64, |w| {
            w.bytes(&self.handback);
            match &self.body {
                SetEventBody::ExpirationWarning { remaining } => {
                    w.u8(1);
                    w.i64(*remaining);
                }
                SetEventBody::RenewalFailure { lease, error } => {
                    w.u8(2);
                    w.client_lease(lease);
                    match error {
                        None => w.u8(0),
                        Some(e) => {
                            w.u8(1);
                            w.error(e);
                        }
                    }
                }
            }
        })
    }

    /// Decodes an event, enforcing `limits`.
    pub fn decode(bytes: &[u8], encoding: Encoding, limits: &Limits) -> Result<SetEventMessage> {
        let json = |j: EventJson| {
            Ok(SetEventMessage {
                event_id: j.event_id,
                sequence: j.sequence,
                service: j.service,
                set: j.set,
                handback: j.handback,
                body: j.body,
            })
        };
        let m = decode_message(
            bytes,
            encoding,
            limits,
            "renewal set event",
            KIND_SET_EVENT,
            json,
            |r, event_id| {
                let (sequence, service, set) = (r.u64()?, LandlordId(r.u64()?), r.u64()?);
                let handback = r.bytes(limits.max_resource_bytes, "handback")?.to_vec();
                let body = match r.u8()? {
                    1 => SetEventBody::ExpirationWarning { remaining: r.i64()? },
                    2 => SetEventBody::RenewalFailure {
                        lease: r.client_lease()?,
                        error: if r.flag("error")? { Some(r.error(limits)?) } else { None },
                    },
                    k => return Err(decode_err(format!("unknown renewal set event kind {k}"))),
                };
                Ok(SetEventMessage { event_id, sequence, service, set, handback, body })
            },
        )?;
        check_bytes(&m.handback, limits, "handback")?;
        Ok(m)
    }

    /// The canonical JSON text.
    pub fn to_json(&self) -> Vec<u8> {
        self.encode(Encoding::Json)
    }

    /// Reads an event's JSON, enforcing `limits`.
    pub fn from_json(bytes: &[u8], limits: &Limits) -> Result<SetEventMessage> {
        SetEventMessage::decode(bytes, Encoding::Json, limits)
    }
}
