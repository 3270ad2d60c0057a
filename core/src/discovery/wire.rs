//! Wire messages of the lookup discovery service: requests and replies for every operation of a
//! registration, events and the listener's answers, and the announcement datagram.
//!
//! The conventions are those of [`crate::wire`] and [`crate::codec`]: two encodings, canonical
//! JSON and compact binary, both versioned ([`WIRE_VERSION`]); decoding never panics and checks
//! [`Limits`] before it allocates (the whole message against `max_message_bytes` first, every
//! list against `max_batch` and against the bytes actually left, a handback against
//! `max_resource_bytes`, every name against [`MAX_NAME_BYTES`]); every failure is a
//! [`LeaseError::Decode`]. `core/tests/vectors/discovery.json` has an example of every message
//! in both encodings, and hostile inputs that must fail.
//!
//! Registration leases are renewed and cancelled with the landlord protocol of
//! [`crate::wire`] ([`super::DiscoveryService::handle_request`]); the messages here carry
//! everything else. A client names its registration by its lease cookie, which cannot be
//! guessed (the registration number is not a secret).
//!
//! # Binary form, version 1
//!
//! As in [`crate::codec`]: big-endian integers, a cookie in 16 bytes, a duration an `i64`, a
//! count a `u32`, a byte string a `u32` length and the bytes, an error an `i32` code and a byte
//! string of UTF-8. Besides:
//!
//! - a *name* (group name, locator host) is a byte string of at most 255 bytes of UTF-8;
//! - *names* are a count and that many names;
//! - *groups* are `0x00` (all groups) or `0x01` followed by names;
//! - a *locator* is its host (a name) and a `u16` port; *locators* a count and that many;
//! - a *registrar* is its 16-byte id, its groups (names) and its locators.
//!
//! | field | request | reply | event | event reply |
//! |---|---|---|---|---|
//! | magic | `0x4C` | `0x4C` | `0x4C` | `0x4C` |
//! | version | `0x01` | `0x01` | `0x01` | `0x01` |
//! | kind | `0x20` | `0x21` | `0x22` | `0x23` |
//!
//! A request continues with its `u64` id and a `u8` op:
//! `1` register: groups, locators, handback (byte string), duration;
//! `2` get_groups: cookie; `3` add_groups: cookie, names; `4` set_groups: cookie, groups;
//! `5` remove_groups: cookie, names; `6` get_locators: cookie; `7` add_locators: cookie,
//! locators; `8` set_locators: cookie, locators; `9` remove_locators: cookie, locators;
//! `10` get_registrars: cookie; `11` discard: cookie, registrar id (16 bytes).
//!
//! A reply continues with the request's `u64` id, the service's `u64` landlord id and a `u8` op:
//! `1` registered: registration number `u64`, cookie, granted duration, event id `u64`,
//! sequence number `u64`; `2` groups: groups; `3` locators: locators; `4` registrars: a count
//! and that many registrars; `5` done; `6` error: an error.
//!
//! An event continues with its event id `u64`, the source's service `u64` and object `u64`, the
//! sequence number `u64`, the handback (byte string), `0x00` discovered or `0x01` discarded, and
//! a count (at least one) and that many registrars. An event reply continues with the event id
//! `u64`, the sequence number `u64` and a `u8`: `1` received, `2` unknown event, `3` error and
//! an error.
//!
//! Nothing may follow the last field.
//!
//! # JSON form, version 1
//!
//! One object, keys in this order when written, no white space; 64-bit integers as decimal
//! strings, cookies and ids as hex, a handback as hex, a locator as `"host:port"`, groups as
//! `null` (all groups) or an array of names (the key is required):
//!
//! ```text
//! {"v":1,"id":"1","body":{"op":"register","groups":["printers"],"locators":["lookup.example:4160"],"handback":"6d696e65","duration":"60000"}}
//! {"v":1,"id":"1","landlord":"0000000000000007","body":{"op":"registered","registration":"1","cookie":"<32 hex>","duration":"60000","event_id":"1","sequence":"0"}}
//! {"v":1,"event_id":"1","source":{"service":"0000000000000007","object":"1"},"sequence":"1","handback":"6d696e65","discarded":false,"registrars":[{"id":"<32 hex>","groups":["printers"],"locators":["10.0.0.5:4160"]}]}
//! {"v":1,"event_id":"1","sequence":"1","body":{"op":"received"}}
//! ```
//!
//! Request bodies by `op`: `register` {`groups`, `locators`, `handback`, `duration`};
//! `get_groups`, `get_locators`, `get_registrars` {`cookie`}; `add_groups`, `remove_groups`
//! {`cookie`, `groups`: an array of names}; `set_groups` {`cookie`, `groups`: null or an array};
//! `add_locators`, `set_locators`, `remove_locators` {`cookie`, `locators`}; `discard`
//! {`cookie`, `registrar`}. Reply bodies: `registered` {`registration`, `cookie`, `duration`,
//! `event_id`, `sequence`}; `groups` {`groups`}; `locators` {`locators`}; `registrars`
//! {`registrars`}; `done` {}; `error` {`code`, `message`}. Event reply bodies: `received` {},
//! `unknown_event` {}, `error` {`code`, `message`}. Unknown keys anywhere are rejected.
//!
//! # Announcement datagram, version 1
//!
//! Binary only, at most [`ANNOUNCEMENT_MAX_BYTES`] (it fits one unfragmented UDP datagram on
//! any IPv6 path): magic `0x4C`, version `0x01`, kind `0x24`, the registrar id (16 bytes), the
//! sequence number `u64`, the ttl `u32` (ms, at least 1), the locator's host (`u8` length, 1 to
//! 255, and the bytes) and port (`u16`, not 0), and the groups (`u16` count, then each a `u8`
//! length and that many bytes of UTF-8). Nothing may follow. See
//! `core/tests/vectors/README.md`.
//!
//! ```
//! use leasehold::discovery::{Announcement, RegistrarId};
//! let a = Announcement {
//!     registrar: RegistrarId(0xab),
//!     groups: ["printers".to_string()].into(),
//!     locator: "10.0.0.5:4160".parse().unwrap(),
//!     sequence: 7,
//!     ttl: 30_000,
//! };
//! let datagram = a.encode().unwrap();
//! assert_eq!(datagram.len(), 3 + 16 + 8 + 4 + 1 + 8 + 2 + 2 + 1 + 8);
//! assert_eq!(Announcement::decode(&datagram).unwrap(), a);
//! ```

use std::collections::BTreeSet;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::codec::{
    decode_err, decode_message, encode_message, ReplyJson, RequestJson, Versioned, R, W,
};
use crate::error::{LeaseError, Result};
use crate::event::{EventId, EventSource, RemoteEvent};
use crate::lease::{Cookie, LandlordId};
use crate::time::{Duration, Millis};
use crate::wire::{Encoding, Limits, WireError, WIRE_VERSION};

use super::{
    Announcement, DeliveryFailure, DiscoveryChange, DiscoveryService, Groups, Locator, Registrar,
    RegistrarId, RegistrationId, RemoteDiscoveryEvent, MAX_NAME_BYTES,
};

/// Binary kind of a discovery request.
pub const KIND_REQUEST: u8 = 0x20;
/// Binary kind of a discovery reply.
pub const KIND_REPLY: u8 = 0x21;
/// Binary kind of an event message.
pub const KIND_EVENT: u8 = 0x22;
/// Binary kind of a listener's answer to an event.
pub const KIND_EVENT_REPLY: u8 = 0x23;
/// Binary kind of an announcement datagram.
pub const KIND_ANNOUNCEMENT: u8 = 0x24;
/// The largest announcement datagram written or read, in bytes: 1200, which fits one
/// unfragmented UDP datagram on any IPv6 path (1280-byte minimum MTU).
pub const ANNOUNCEMENT_MAX_BYTES: usize = 1200;

/// A request to a discovery service. `id` is chosen by the sender and echoed in the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryRequest {
    /// Correlates the reply with this request.
    pub id: u64,
    /// What is asked.
    pub body: DiscoveryRequestBody,
}

/// The operations a client can ask of a discovery service (Jini's `register` and the methods of
/// `LookupDiscoveryRegistration`). `cookie` is the registration's lease cookie.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum DiscoveryRequestBody {
    /// A new registration.
    Register {
        /// Groups to discover.
        #[serde(deserialize_with = "required_groups")]
        groups: Groups,
        /// Locators to discover.
        locators: Vec<Locator>,
        /// Returned in every event, byte for byte (hex in JSON).
        #[serde(with = "crate::wire::hex_bytes")]
        handback: Vec<u8>,
        /// Requested lease duration (positive, FOREVER or ANY).
        #[serde(with = "crate::time::dec::i64")]
        duration: Duration,
    },
    /// The managed set of groups.
    GetGroups {
        /// The registration.
        cookie: Cookie,
    },
    /// Adds groups to the managed set.
    AddGroups {
        /// The registration.
        cookie: Cookie,
        /// Names to add.
        groups: Vec<String>,
    },
    /// Replaces the managed set of groups.
    SetGroups {
        /// The registration.
        cookie: Cookie,
        /// The new set (`null` in JSON: all groups).
        #[serde(deserialize_with = "required_groups")]
        groups: Groups,
    },
    /// Removes groups from the managed set.
    RemoveGroups {
        /// The registration.
        cookie: Cookie,
        /// Names to remove.
        groups: Vec<String>,
    },
    /// The managed set of locators.
    GetLocators {
        /// The registration.
        cookie: Cookie,
    },
    /// Adds locators to the managed set.
    AddLocators {
        /// The registration.
        cookie: Cookie,
        /// Locators to add.
        locators: Vec<Locator>,
    },
    /// Replaces the managed set of locators.
    SetLocators {
        /// The registration.
        cookie: Cookie,
        /// The new set.
        locators: Vec<Locator>,
    },
    /// Removes locators from the managed set.
    RemoveLocators {
        /// The registration.
        cookie: Cookie,
        /// Locators to remove.
        locators: Vec<Locator>,
    },
    /// The registrars discovered for the registration.
    GetRegistrars {
        /// The registration.
        cookie: Cookie,
    },
    /// Discards a registrar (makes it eligible for rediscovery).
    Discard {
        /// The registration.
        cookie: Cookie,
        /// The registrar.
        registrar: RegistrarId,
    },
}

/// A discovery service's answer to a [`DiscoveryRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryReply {
    /// The `id` of the request answered.
    pub id: u64,
    /// The service's landlord id (the landlord of its registration leases).
    pub landlord: LandlordId,
    /// The answer.
    pub body: DiscoveryReplyBody,
}

/// The answers of a discovery service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum DiscoveryReplyBody {
    /// A registration was made. The client's lease is `Lease::from_grant(landlord, cookie,
    /// sent_at, duration)`; its event registration has `event_id`, source (landlord,
    /// `registration`), and the next event carries a number above `sequence`.
    Registered {
        /// The registration's number (the event source's object).
        #[serde(with = "crate::time::dec::u64")]
        registration: u64,
        /// The registration's lease cookie.
        cookie: Cookie,
        /// The granted lease duration (relative).
        #[serde(with = "crate::time::dec::i64")]
        duration: Duration,
        /// The event id.
        #[serde(with = "crate::time::dec::u64")]
        event_id: EventId,
        /// The sequence number the first event follows.
        #[serde(with = "crate::time::dec::u64")]
        sequence: u64,
    },
    /// The managed set of groups.
    Groups {
        /// `null` in JSON for all groups.
        #[serde(deserialize_with = "required_groups")]
        groups: Groups,
    },
    /// The managed set of locators.
    Locators {
        /// In order.
        locators: Vec<Locator>,
    },
    /// The registrars discovered for the registration.
    Registrars {
        /// In id order.
        registrars: Vec<Registrar>,
    },
    /// A change was made (or there was nothing to change).
    Done,
    /// The request failed (no such registration: unknown lease; a bad argument; an
    /// undecodable request).
    Error(WireError),
}

/// A listener's answer to an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventReply {
    /// The event's id.
    pub event_id: EventId,
    /// The event's sequence number.
    pub sequence: u64,
    /// What the listener says.
    pub body: EventReplyBody,
}

/// What a listener answers to an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum EventReplyBody {
    /// The event was received.
    Received,
    /// The listener does not know this event id (Jini `UnknownEventException`): the service
    /// cancels the registration.
    UnknownEvent,
    /// Another failure: an indefinite one ([`crate::ErrorCode::Indefinite`]) is retried, any
    /// other is a bad object and cancels the registration.
    Error(WireError),
}

impl EventReplyBody {
    /// The outcome as the service takes it: `None` for received, else the failure.
    pub fn failure(&self) -> Option<DeliveryFailure> {
        match self {
            EventReplyBody::Received => None,
            EventReplyBody::UnknownEvent => Some(DeliveryFailure::UnknownEvent),
            EventReplyBody::Error(e) => Some(match e.to_error() {
                LeaseError::Indefinite(m) => DeliveryFailure::Indefinite(m),
                other => DeliveryFailure::BadObject(other.to_string()),
            }),
        }
    }
}

/// `groups` must be given: `null` (all groups) or an array of names. A missing key is an error,
/// not "all groups".
pub(crate) fn required_groups<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Groups, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Groups;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "null (all groups) or an array of group names")
        }
        fn visit_unit<E: de::Error>(self) -> std::result::Result<Groups, E> {
            Ok(Groups::All)
        }
        fn visit_none<E: de::Error>(self) -> std::result::Result<Groups, E> {
            Ok(Groups::All)
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> std::result::Result<Groups, A::Error> {
            let v = Vec::<String>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
            for n in &v {
                super::check_group(n).map_err(|e| de::Error::custom(e.detail()))?;
            }
            Ok(Groups::Only(v.into_iter().collect()))
        }
    }
    d.deserialize_any(V)
}

// ---------- checks shared by both encodings ----------

fn check_count(n: usize, limits: &Limits, what: &str) -> Result<()> {
    if n > limits.max_batch {
        return Err(decode_err(format!("{n} {what}, more than the {} allowed", limits.max_batch)));
    }
    Ok(())
}

fn check_names_decoded(names: &[String], limits: &Limits) -> Result<()> {
    check_count(names.len(), limits, "group names")?;
    for n in names {
        if n.len() > MAX_NAME_BYTES {
            return Err(decode_err(format!(
                "a group name of {} bytes, more than {MAX_NAME_BYTES}",
                n.len()
            )));
        }
    }
    Ok(())
}

fn check_groups_decoded(g: &Groups, limits: &Limits) -> Result<()> {
    if let Groups::Only(s) = g {
        check_count(s.len(), limits, "group names")?;
    }
    Ok(())
}

fn check_registrars_decoded(rs: &[Registrar], limits: &Limits) -> Result<()> {
    check_count(rs.len(), limits, "registrars")?;
    for r in rs {
        check_count(r.groups.len(), limits, "group names")?;
        check_count(r.locators.len(), limits, "locators")?;
        if let Some(n) = r.groups.iter().find(|n| n.len() > MAX_NAME_BYTES) {
            return Err(decode_err(format!("a group name of {} bytes", n.len())));
        }
    }
    Ok(())
}

fn check_request(body: &DiscoveryRequestBody, limits: &Limits) -> Result<()> {
    use DiscoveryRequestBody as B;
    match body {
        B::Register { groups, locators, handback, .. } => {
            check_groups_decoded(groups, limits)?;
            check_count(locators.len(), limits, "locators")?;
            if handback.len() > limits.max_resource_bytes {
                return Err(decode_err(format!(
                    "handback is {} bytes, more than the {} allowed",
                    handback.len(),
                    limits.max_resource_bytes
                )));
            }
            Ok(())
        }
        B::AddGroups { groups, .. } | B::RemoveGroups { groups, .. } => {
            check_names_decoded(groups, limits)
        }
        B::SetGroups { groups, .. } => check_groups_decoded(groups, limits),
        B::AddLocators { locators, .. }
        | B::SetLocators { locators, .. }
        | B::RemoveLocators { locators, .. } => check_count(locators.len(), limits, "locators"),
        B::GetGroups { .. }
        | B::GetLocators { .. }
        | B::GetRegistrars { .. }
        | B::Discard { .. } => Ok(()),
    }
}

fn check_reply(body: &DiscoveryReplyBody, limits: &Limits) -> Result<()> {
    match body {
        DiscoveryReplyBody::Groups { groups } => check_groups_decoded(groups, limits),
        DiscoveryReplyBody::Locators { locators } => {
            check_count(locators.len(), limits, "locators")
        }
        DiscoveryReplyBody::Registrars { registrars } => {
            check_registrars_decoded(registrars, limits)
        }
        _ => Ok(()),
    }
}

// ---------- binary pieces ----------

impl W {
    fn name(&mut self, s: &str) {
        self.bytes(s.as_bytes())
    }
    fn names<'a>(&mut self, names: impl ExactSizeIterator<Item = &'a String>) {
        self.u32(names.len() as u32);
        for n in names {
            self.name(n);
        }
    }
    fn groups(&mut self, g: &Groups) {
        match g {
            Groups::All => self.u8(0),
            Groups::Only(s) => {
                self.u8(1);
                self.names(s.iter());
            }
        }
    }
    fn locator(&mut self, l: &Locator) {
        self.name(l.host());
        self.0.extend_from_slice(&l.port().to_be_bytes());
    }
    fn locators<'a>(&mut self, ls: impl ExactSizeIterator<Item = &'a Locator>) {
        self.u32(ls.len() as u32);
        for l in ls {
            self.locator(l);
        }
    }
    fn registrar(&mut self, r: &Registrar) {
        self.0.extend_from_slice(&r.id.0.to_be_bytes());
        self.names(r.groups.iter());
        self.locators(r.locators.iter());
    }
}

/// Smallest encodings, to check counts against the bytes left: a name, a locator, a registrar.
const MIN_NAME: usize = 4;
const MIN_LOCATOR: usize = 4 + 1 + 2;
const MIN_REGISTRAR: usize = 16 + 4 + 4;

impl<'a> R<'a> {
    fn list(&mut self, limits: &Limits, each: usize, what: &str) -> Result<usize> {
        let n = self.u32()? as usize;
        check_count(n, limits, what)?;
        if n.saturating_mul(each) > self.b.len() - self.at {
            return Err(decode_err(format!(
                "truncated message: {n} {what} announced, only {} byte(s) left",
                self.b.len() - self.at
            )));
        }
        Ok(n)
    }
    fn name(&mut self) -> Result<String> {
        let b = self.bytes(MAX_NAME_BYTES, "a name")?;
        std::str::from_utf8(b).map(str::to_string).map_err(|_| decode_err("a name is not UTF-8"))
    }
    fn names(&mut self, limits: &Limits) -> Result<Vec<String>> {
        let n = self.list(limits, MIN_NAME, "group names")?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.name()?);
        }
        Ok(v)
    }
    fn groups(&mut self, limits: &Limits) -> Result<Groups> {
        match self.u8()? {
            0 => Ok(Groups::All),
            1 => Ok(Groups::Only(self.names(limits)?.into_iter().collect())),
            t => Err(decode_err(format!("bad groups tag {t}"))),
        }
    }
    fn locator(&mut self) -> Result<Locator> {
        let host = self.name()?;
        let port = u16::from_be_bytes(self.array()?);
        Locator::new(&host, port).map_err(|e| decode_err(e.detail()))
    }
    fn locators(&mut self, limits: &Limits) -> Result<Vec<Locator>> {
        let n = self.list(limits, MIN_LOCATOR, "locators")?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.locator()?);
        }
        Ok(v)
    }
    fn registrar_id(&mut self) -> Result<RegistrarId> {
        Ok(RegistrarId(u128::from_be_bytes(self.array()?)))
    }
    fn registrar(&mut self, limits: &Limits) -> Result<Registrar> {
        let id = self.registrar_id()?;
        let groups = self.names(limits)?.into_iter().collect();
        let locators = self.locators(limits)?.into_iter().collect();
        Ok(Registrar { id, groups, locators })
    }
    fn registrars(&mut self, limits: &Limits) -> Result<Vec<Registrar>> {
        let n = self.list(limits, MIN_REGISTRAR, "registrars")?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.registrar(limits)?);
        }
        Ok(v)
    }
}

// ---------- requests ----------

impl DiscoveryRequest {
    /// Encodes the request.
    pub fn encode(&self, encoding: Encoding) -> Vec<u8> {
        use DiscoveryRequestBody as B;
        let json = || RequestJson::new(self.id, &self.body);
        encode_message(encoding, json, KIND_REQUEST, &[self.id], 64, |w| match &self.body {
            B::Register { groups, locators, handback, duration } => {
                w.u8(1);
                w.groups(groups);
                w.locators(locators.iter());
                w.bytes(handback);
                w.i64(*duration);
            }
            B::GetGroups { cookie } => {
                w.u8(2);
                w.cookie(*cookie);
            }
            B::AddGroups { cookie, groups } => {
                w.u8(3);
                w.cookie(*cookie);
                w.names(groups.iter());
            }
            B::SetGroups { cookie, groups } => {
                w.u8(4);
                w.cookie(*cookie);
                w.groups(groups);
            }
            B::RemoveGroups { cookie, groups } => {
                w.u8(5);
                w.cookie(*cookie);
                w.names(groups.iter());
            }
            B::GetLocators { cookie } => {
                w.u8(6);
                w.cookie(*cookie);
            }
            B::AddLocators { cookie, locators } => {
                w.u8(7);
                w.cookie(*cookie);
                w.locators(locators.iter());
            }
            B::SetLocators { cookie, locators } => {
                w.u8(8);
                w.cookie(*cookie);
                w.locators(locators.iter());
            }
            B::RemoveLocators { cookie, locators } => {
                w.u8(9);
                w.cookie(*cookie);
                w.locators(locators.iter());
            }
            B::GetRegistrars { cookie } => {
                w.u8(10);
                w.cookie(*cookie);
            }
            B::Discard { cookie, registrar } => {
                w.u8(11);
                w.cookie(*cookie);
                w.0.extend_from_slice(&registrar.0.to_be_bytes());
            }
        })
    }

    /// Decodes a request, enforcing `limits`.
    pub fn decode(bytes: &[u8], encoding: Encoding, limits: &Limits) -> Result<DiscoveryRequest> {
        use DiscoveryRequestBody as B;
        let json = |j: RequestJson<_>| {
            check_request(&j.body, limits)?;
            Ok(DiscoveryRequest { id: j.id, body: j.body })
        };
        decode_message(bytes, encoding, limits, "discovery request", KIND_REQUEST, json, |r, id| {
            let body = match r.u8()? {
                1 => {
                    let groups = r.groups(limits)?;
                    let locators = r.locators(limits)?;
                    let handback = r.bytes(limits.max_resource_bytes, "handback")?.to_vec();
                    B::Register { groups, locators, handback, duration: r.i64()? }
                }
                2 => B::GetGroups { cookie: r.cookie()? },
                3 => B::AddGroups { cookie: r.cookie()?, groups: r.names(limits)? },
                4 => B::SetGroups { cookie: r.cookie()?, groups: r.groups(limits)? },
                5 => B::RemoveGroups { cookie: r.cookie()?, groups: r.names(limits)? },
                6 => B::GetLocators { cookie: r.cookie()? },
                7 => B::AddLocators { cookie: r.cookie()?, locators: r.locators(limits)? },
                8 => B::SetLocators { cookie: r.cookie()?, locators: r.locators(limits)? },
                9 => B::RemoveLocators { cookie: r.cookie()?, locators: r.locators(limits)? },
                10 => B::GetRegistrars { cookie: r.cookie()? },
                11 => B::Discard { cookie: r.cookie()?, registrar: r.registrar_id()? },
                op => return Err(decode_err(format!("unknown discovery request op {op}"))),
            };
            Ok(DiscoveryRequest { id, body })
        })
    }
}

// ---------- replies ----------

impl DiscoveryReply {
    /// Encodes the reply.
    pub fn encode(&self, encoding: Encoding) -> Vec<u8> {
        use DiscoveryReplyBody as B;
        let json = || ReplyJson::new(self.id, self.landlord, &self.body);
        let head = [self.id, self.landlord.0];
        encode_message(encoding, json, KIND_REPLY, &head, 64, |w| match &self.body {
            B::Registered { registration, cookie, duration, event_id, sequence } => {
                w.u8(1);
                w.u64(*registration);
                w.cookie(*cookie);
                w.i64(*duration);
                w.u64(*event_id);
                w.u64(*sequence);
            }
            B::Groups { groups } => {
                w.u8(2);
                w.groups(groups);
            }
            B::Locators { locators } => {
                w.u8(3);
                w.locators(locators.iter());
            }
            B::Registrars { registrars } => {
                w.u8(4);
                w.u32(registrars.len() as u32);
                for r in registrars {
                    w.registrar(r);
                }
            }
            B::Done => w.u8(5),
            B::Error(e) => {
                w.u8(6);
                w.error(e);
            }
        })
    }

    /// Decodes a reply, enforcing `limits`.
    pub fn decode(bytes: &[u8], encoding: Encoding, limits: &Limits) -> Result<DiscoveryReply> {
        use DiscoveryReplyBody as B;
        let json = |j: ReplyJson<_>| {
            check_reply(&j.body, limits)?;
            Ok(DiscoveryReply { id: j.id, landlord: j.landlord, body: j.body })
        };
        decode_message(bytes, encoding, limits, "discovery reply", KIND_REPLY, json, |r, id| {
            let landlord = LandlordId(r.u64()?);
            let body = match r.u8()? {
                1 => B::Registered {
                    registration: r.u64()?,
                    cookie: r.cookie()?,
                    duration: r.i64()?,
                    event_id: r.u64()?,
                    sequence: r.u64()?,
                },
                2 => B::Groups { groups: r.groups(limits)? },
                3 => B::Locators { locators: r.locators(limits)? },
                4 => B::Registrars { registrars: r.registrars(limits)? },
                5 => B::Done,
                6 => B::Error(r.error(limits)?),
                op => return Err(decode_err(format!("unknown discovery reply op {op}"))),
            };
            Ok(DiscoveryReply { id, landlord, body })
        })
    }
}

// ---------- events ----------

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceJson {
    service: LandlordId,
    #[serde(with = "crate::time::dec::u64")]
    object: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventJson {
    v: u32,
    #[serde(with = "crate::time::dec::u64")]
    event_id: u64,
    source: SourceJson,
    #[serde(with = "crate::time::dec::u64")]
    sequence: u64,
    #[serde(with = "crate::wire::hex_bytes")]
    handback: Vec<u8>,
    discarded: bool,
    registrars: Vec<Registrar>,
}

impl Versioned for EventJson {
    fn version(&self) -> u32 {
        self.v
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventReplyJson {
    v: u32,
    #[serde(with = "crate::time::dec::u64")]
    event_id: u64,
    #[serde(with = "crate::time::dec::u64")]
    sequence: u64,
    body: EventReplyBody,
}

impl Versioned for EventReplyJson {
    fn version(&self) -> u32 {
        self.v
    }
}

fn check_event_registrars(rs: &[Registrar], limits: &Limits) -> Result<()> {
    if rs.is_empty() {
        return Err(decode_err("a discovery event names at least one registrar"));
    }
    check_registrars_decoded(rs, limits)
}

impl RemoteEvent<DiscoveryChange> {
    /// Encodes the event as a message to the registration's listener.
    pub fn encode(&self, encoding: Encoding) -> Vec<u8> {
        let json = || EventJson {
            v: WIRE_VERSION as u32,
            event_id: self.event_id,
            source: SourceJson { service: self.source.service, object: self.source.object },
            sequence: self.sequence,
            handback: self.handback.clone(),
            discarded: self.kind.discarded,
            registrars: self.kind.registrars.clone(),
        };
        let head = [self.event_id, self.source.service.0, self.source.object, self.sequence];
        encode_message(encoding, json, KIND_EVENT, &head, 64, |w| {
            w.bytes(&self.handback);
            w.u8(self.kind.discarded as u8);
            w.u32(self.kind.registrars.len() as u32);
            for r in &self.kind.registrars {
                w.registrar(r);
            }
        })
    }

    /// Decodes an event message, enforcing `limits` (as a listener does).
    pub fn decode(
        bytes: &[u8],
        encoding: Encoding,
        limits: &Limits,
    ) -> Result<RemoteDiscoveryEvent> {
        let json = |j: EventJson| {
            if j.handback.len() > limits.max_resource_bytes {
                return Err(decode_err(format!("handback is {} bytes", j.handback.len())));
            }
            Ok(RemoteEvent {
                event_id: j.event_id,
                source: EventSource { service: j.source.service, object: j.source.object },
                sequence: j.sequence,
                handback: j.handback,
                kind: DiscoveryChange { discarded: j.discarded, registrars: j.registrars },
            })
        };
        let e = decode_message(
            bytes,
            encoding,
            limits,
            "discovery event",
            KIND_EVENT,
            json,
            |r, event_id| {
                let source = EventSource { service: LandlordId(r.u64()?), object: r.u64()? };
                let sequence = r.u64()?;
                let handback = r.bytes(limits.max_resource_bytes, "handback")?.to_vec();
                let discarded = match r.u8()? {
                    0 => false,
                    1 => true,
                    t => return Err(decode_err(format!("bad discarded flag {t}"))),
                };
                let registrars = r.registrars(limits)?;
                Ok(RemoteEvent {
                    event_id,
                    source,
                    sequence,
                    handback,
                    kind: DiscoveryChange { discarded, registrars },
                })
            },
        )?;
        check_event_registrars(&e.kind.registrars, limits)?;
        Ok(e)
    }
}

impl EventReply {
    /// Encodes the answer.
    pub fn encode(&self, encoding: Encoding) -> Vec<u8> {
        let json = || EventReplyJson {
            v: WIRE_VERSION as u32,
            event_id: self.event_id,
            sequence: self.sequence,
            body: self.body.clone(),
        };
        let head = [self.event_id, self.sequence];
        encode_message(encoding, json, KIND_EVENT_REPLY, &head, 32, |w| match &self.body {
            EventReplyBody::Received => w.u8(1),
            EventReplyBody::UnknownEvent => w.u8(2),
            EventReplyBody::Error(e) => {
                w.u8(3);
                w.error(e);
            }
        })
    }

    /// Decodes an answer, enforcing `limits`.
    pub fn decode(bytes: &[u8], encoding: Encoding, limits: &Limits) -> Result<EventReply> {
        let json = |j: EventReplyJson| {
            Ok(EventReply { event_id: j.event_id, sequence: j.sequence, body: j.body })
        };
        decode_message(
            bytes,
            encoding,
            limits,
            "event reply",
            KIND_EVENT_REPLY,
            json,
            |r, event_id| {
                let sequence = r.u64()?;
                let body = match r.u8()? {
                    1 => EventReplyBody::Received,
                    2 => EventReplyBody::UnknownEvent,
                    3 => EventReplyBody::Error(r.error(limits)?),
                    op => return Err(decode_err(format!("unknown event reply op {op}"))),
                };
                Ok(EventReply { event_id, sequence, body })
            },
        )
    }
}

// ---------- announcements ----------

impl Announcement {
    /// The announcement datagram (format in the [module docs](self)). A `ttl` outside 1 to
    /// 2^32 - 1 ms, more than 65 535 groups, a group name over 255 bytes, or a datagram over
    /// [`ANNOUNCEMENT_MAX_BYTES`] is an [`LeaseError::InvalidArgument`].
    pub fn encode(&self) -> Result<Vec<u8>> {
        let invalid = |m: String| LeaseError::InvalidArgument(format!("announcement: {m}"));
        let ttl = u32::try_from(self.ttl)
            .ok()
            .filter(|&t| t > 0)
            .ok_or_else(|| invalid(format!("ttl {} ms is not 1 to {}", self.ttl, u32::MAX)))?;
        let count = u16::try_from(self.groups.len())
            .map_err(|_| invalid(format!("{} groups, more than 65535", self.groups.len())))?;
        let mut w = W(Vec::with_capacity(64));
        w.header(KIND_ANNOUNCEMENT);
        w.0.extend_from_slice(&self.registrar.0.to_be_bytes());
        w.u64(self.sequence);
        w.u32(ttl);
        // A locator's host is 1 to 255 bytes by construction.
        w.u8(self.locator.host().len() as u8);
        w.0.extend_from_slice(self.locator.host().as_bytes());
        w.0.extend_from_slice(&self.locator.port().to_be_bytes());
        w.0.extend_from_slice(&count.to_be_bytes());
        for g in &self.groups {
            super::check_group(g)?;
            w.u8(g.len() as u8);
            w.0.extend_from_slice(g.as_bytes());
        }
        if w.0.len() > ANNOUNCEMENT_MAX_BYTES {
            return Err(invalid(format!(
                "{} bytes, more than the {ANNOUNCEMENT_MAX_BYTES} of a datagram",
                w.0.len()
            )));
        }
        Ok(w.0)
    }

    /// Reads an announcement datagram; anything malformed, truncated, oversized, of another
    /// version or kind, or with bytes after the last group is a [`LeaseError::Decode`] error.
    pub fn decode(bytes: &[u8]) -> Result<Announcement> {
        if bytes.len() > ANNOUNCEMENT_MAX_BYTES {
            return Err(decode_err(format!(
                "announcement is {} bytes, more than the {ANNOUNCEMENT_MAX_BYTES} allowed",
                bytes.len()
            )));
        }
        let mut r = R { b: bytes, at: 0 };
        r.kind(KIND_ANNOUNCEMENT)?;
        let registrar = r.registrar_id()?;
        let sequence = r.u64()?;
        let ttl = r.u32()?;
        if ttl == 0 {
            return Err(decode_err("announcement ttl 0"));
        }
        let short = |r: &mut R<'_>| -> Result<String> {
            let n = r.u8()? as usize;
            std::str::from_utf8(r.take(n)?)
                .map(str::to_string)
                .map_err(|_| decode_err("a name is not UTF-8"))
        };
        let host = short(&mut r)?;
        let port = u16::from_be_bytes(r.array()?);
        let locator = Locator::new(&host, port).map_err(|e| decode_err(e.detail()))?;
        let count = u16::from_be_bytes(r.array()?) as usize;
        // Each group takes at least its length byte: never trust the count further.
        if count > r.b.len() - r.at {
            return Err(decode_err(format!("truncated announcement: {count} groups announced")));
        }
        let mut groups = BTreeSet::new();
        for _ in 0..count {
            groups.insert(short(&mut r)?);
        }
        r.finish()?;
        Ok(Announcement { registrar, groups, locator, sequence, ttl: ttl as Duration })
    }
}

// ---------- the service's side ----------

impl DiscoveryService {
    /// Answers a discovery request (everything but the lease operations, which take
    /// [`DiscoveryService::handle_request`]). The registration is named by its lease cookie; an
    /// unknown, expired or cancelled one is an `unknown_lease` error (no such object).
    pub fn handle_discovery(&mut self, request: &DiscoveryRequest, now: Millis) -> DiscoveryReply {
        let body = match self.answer(&request.body, now) {
            Ok(b) => b,
            Err(e) => DiscoveryReplyBody::Error(WireError::from(&e)),
        };
        DiscoveryReply { id: request.id, landlord: self.id(), body }
    }

    /// Decodes a discovery request, answers it, and encodes the reply in the same encoding; an
    /// undecodable request gets an error reply with id 0.
    pub fn handle_discovery_bytes(
        &mut self,
        bytes: &[u8],
        encoding: Encoding,
        now: Millis,
    ) -> Vec<u8> {
        let reply = match DiscoveryRequest::decode(bytes, encoding, &self.config().landlord.limits)
        {
            Ok(req) => self.handle_discovery(&req, now),
            Err(e) => DiscoveryReply {
                id: 0,
                landlord: self.id(),
                body: DiscoveryReplyBody::Error(WireError::from(&e)),
            },
        };
        reply.encode(encoding)
    }

    /// A listener's answer to an event handed out by [`DiscoveryService::poll_event`]:
    /// [`DiscoveryService::delivered`] or [`DiscoveryService::delivery_failed`] as it says.
    /// Returns whether it answered the event awaited.
    pub fn handle_event_reply(&mut self, reply: &EventReply, now: Millis) -> bool {
        match reply.body.failure() {
            None => self.delivered(reply.event_id, reply.sequence, now),
            Some(f) => self.delivery_failed(reply.event_id, reply.sequence, f, now),
        }
    }

    fn by_cookie(&mut self, cookie: Cookie, now: Millis) -> Result<RegistrationId> {
        self.registration_of(cookie, now).ok_or(LeaseError::UnknownLease)
    }

    fn answer(&mut self, body: &DiscoveryRequestBody, now: Millis) -> Result<DiscoveryReplyBody> {
        use DiscoveryReplyBody as Out;
        use DiscoveryRequestBody as B;
        Ok(match body {
            B::Register { groups, locators, handback, duration } => {
                let r = self.register(
                    groups.clone(),
                    locators.iter().cloned(),
                    handback.clone(),
                    *duration,
                    now,
                )?;
                Out::Registered {
                    registration: r.id.0,
                    cookie: r.lease.cookie(),
                    duration: crate::time::remaining(r.lease.expiration(), self.now()),
                    event_id: r.event.event_id,
                    sequence: r.event.sequence,
                }
            }
            B::GetGroups { cookie } => {
                let id = self.by_cookie(*cookie, now)?;
                Out::Groups { groups: self.groups(id, now)? }
            }
            B::AddGroups { cookie, groups } => {
                let id = self.by_cookie(*cookie, now)?;
                self.add_groups(id, groups.iter().cloned(), now)?;
                Out::Done
            }
            B::SetGroups { cookie, groups } => {
                let id = self.by_cookie(*cookie, now)?;
                self.set_groups(id, groups.clone(), now)?;
                Out::Done
            }
            B::RemoveGroups { cookie, groups } => {
                let id = self.by_cookie(*cookie, now)?;
                self.remove_groups(id, groups.iter().cloned(), now)?;
                Out::Done
            }
            B::GetLocators { cookie } => {
                let id = self.by_cookie(*cookie, now)?;
                Out::Locators { locators: self.locators(id, now)? }
            }
            B::AddLocators { cookie, locators } => {
                let id = self.by_cookie(*cookie, now)?;
                self.add_locators(id, locators.iter().cloned(), now)?;
                Out::Done
            }
            B::SetLocators { cookie, locators } => {
                let id = self.by_cookie(*cookie, now)?;
                self.set_locators(id, locators.iter().cloned(), now)?;
                Out::Done
            }
            B::RemoveLocators { cookie, locators } => {
                let id = self.by_cookie(*cookie, now)?;
                self.remove_locators(id, locators.iter().cloned(), now)?;
                Out::Done
            }
            B::GetRegistrars { cookie } => {
                let id = self.by_cookie(*cookie, now)?;
                Out::Registrars { registrars: self.registrars(id, now)? }
            }
            B::Discard { cookie, registrar } => {
                let id = self.by_cookie(*cookie, now)?;
                self.discard(id, *registrar, now)?;
                Out::Done
            }
        })
    }
}
