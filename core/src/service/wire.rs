//! Wire messages of a renewal service reached over a network: the client's set operations
//! ([`SetRequest`], [`SetReply`]) and the events it delivers to listeners
//! ([`SetEventMessage`]).
//!
//! They follow the conventions of [`crate::wire`]: canonical JSON, versioned ([`WIRE_VERSION`]),
//! 64-bit integers as decimal strings, cookies and landlord ids as hex, byte strings as hex;
//! decoding never panics, checks [`Limits`] and rejects unknown keys; every failure is a
//! [`LeaseError::Decode`]. `core/tests/vectors/renewal.json` has an example of every message.
//! Only the JSON form exists so far (a binary form, like the landlord messages', is to come:
//! see `docs/renewal-service.md`).
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

use serde::{Deserialize, Serialize};

use crate::codec::{check_size, check_version, decode_err};
use crate::error::{LeaseError, Result};
use crate::event::EventId;
use crate::lease::{Cookie, LandlordId};
use crate::time::Duration;
use crate::wire::{Limits, WireError, WIRE_VERSION};

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
struct RequestJson {
    v: u32,
    #[serde(with = "crate::time::dec::u64")]
    id: u64,
    body: SetRequestBody,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplyJson {
    v: u32,
    #[serde(with = "crate::time::dec::u64")]
    id: u64,
    landlord: LandlordId,
    body: SetReplyBody,
}

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

impl SetRequest {
    /// The canonical JSON text.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(&RequestJson {
            v: WIRE_VERSION as u32,
            id: self.id,
            body: self.body.clone(),
        })
        .expect("request JSON cannot fail")
    }

    /// Reads a request's JSON, enforcing `limits`.
    pub fn from_json(bytes: &[u8], limits: &Limits) -> Result<SetRequest> {
        check_size(bytes.len(), limits)?;
        let j: RequestJson = serde_json::from_slice(bytes)
            .map_err(|e| decode_err(format!("renewal set request JSON: {e}")))?;
        check_version(j.v)?;
        check_request(&j.body, limits)?;
        Ok(SetRequest { id: j.id, body: j.body })
    }
}

impl SetReply {
    /// The canonical JSON text.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(&ReplyJson {
            v: WIRE_VERSION as u32,
            id: self.id,
            landlord: self.landlord,
            body: self.body.clone(),
        })
        .expect("reply JSON cannot fail")
    }

    /// Reads a reply's JSON, enforcing `limits`.
    pub fn from_json(bytes: &[u8], limits: &Limits) -> Result<SetReply> {
        check_size(bytes.len(), limits)?;
        let j: ReplyJson = serde_json::from_slice(bytes)
            .map_err(|e| decode_err(format!("renewal set reply JSON: {e}")))?;
        check_version(j.v)?;
        if let SetReplyBody::Leases { leases } = &j.body {
            if leases.len() > limits.max_batch {
                return Err(decode_err(format!(
                    "{} leases, more than the {} allowed",
                    leases.len(),
                    limits.max_batch
                )));
            }
        }
        Ok(SetReply { id: j.id, landlord: j.landlord, body: j.body })
    }
}

impl SetEventMessage {
    /// The canonical JSON text.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(&EventJson {
            v: WIRE_VERSION as u32,
            event_id: self.event_id,
            sequence: self.sequence,
            service: self.service,
            set: self.set,
            handback: self.handback.clone(),
            body: self.body.clone(),
        })
        .expect("event JSON cannot fail")
    }

    /// Reads an event's JSON, enforcing `limits`.
    pub fn from_json(bytes: &[u8], limits: &Limits) -> Result<SetEventMessage> {
        check_size(bytes.len(), limits)?;
        let j: EventJson = serde_json::from_slice(bytes)
            .map_err(|e| decode_err(format!("renewal set event JSON: {e}")))?;
        check_version(j.v)?;
        check_bytes(&j.handback, limits, "handback")?;
        Ok(SetEventMessage {
            event_id: j.event_id,
            sequence: j.sequence,
            service: j.service,
            set: j.set,
            handback: j.handback,
            body: j.body,
        })
    }
}
