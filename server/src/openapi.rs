//! The HTTP API as a contract: an OpenAPI 3.1 document, served at `GET /openapi.json`.
//!
//! The schemas follow the core's codec ([`leasehold::codec`]) and the admin types
//! ([`leasehold_client::admin`]); every example is made by encoding a real message with the
//! core, so an example cannot drift from the codec. Checks that the schemas cannot drift
//! either: this module's tests decode every example; `scripts/test-api.sh` validates every
//! message of the shared vectors (`core/tests/vectors/wire.json`) against the schemas, and
//! runs schemathesis against a running server (every documented status and schema holds, no
//! 500s).

use std::sync::{Arc, OnceLock};

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use leasehold::coord::wire::{CoordReply, CoordReplyBody, CoordRequest, CoordRequestBody};
use leasehold::coord::{EventKind, Events, Holder, LeaseEvent, Missed};
use leasehold::discovery::wire::{
    DiscoveryReply, DiscoveryReplyBody, DiscoveryRequest, DiscoveryRequestBody,
};
use leasehold::discovery::{Groups, Locator, Registrar, RegistrarId};
use leasehold::holder::grant_request;
use leasehold::wire::{Outcome, WireError};
use leasehold::{
    Cookie, Encoding, LandlordId, LeaseError, Reply, ReplyBody, Request, RequestBody, ANY,
};
use leasehold_client::admin::{hex, AdminError, AdminLease, LeasePage, Revoked};
use serde_json::{json, Value};

use crate::App;

/// `GET /openapi.json`.
pub async fn serve(State(_app): State<Arc<App>>) -> Response {
    static DOC: OnceLock<String> = OnceLock::new();
    let body = DOC.get_or_init(|| serde_json::to_string_pretty(&document()).unwrap_or_default());
    ([(header::CONTENT_TYPE, "application/json")], body.clone()).into_response()
}

fn enc_req(r: &Request) -> Value {
    serde_json::from_slice(&r.encode(Encoding::Json)).expect("the codec writes JSON")
}

fn enc_reply(r: &Reply) -> Value {
    serde_json::from_slice(&r.encode(Encoding::Json)).expect("the codec writes JSON")
}

fn enc_coord_req(r: &CoordRequest) -> Value {
    serde_json::from_slice(&r.encode(Encoding::Json)).expect("the codec writes JSON")
}

fn enc_coord_reply(r: &CoordReply) -> Value {
    serde_json::from_slice(&r.encode(Encoding::Json)).expect("the codec writes JSON")
}

fn enc_disc_req(r: &DiscoveryRequest) -> Value {
    serde_json::from_slice(&r.encode(Encoding::Json)).expect("the codec writes JSON")
}

fn enc_disc_reply(r: &DiscoveryReply) -> Value {
    serde_json::from_slice(&r.encode(Encoding::Json)).expect("the codec writes JSON")
}

const DISCOVERY: LandlordId = LandlordId(crate::discovery::DEFAULT_ID);

/// Example discovery requests (POST /discovery): (name, summary, message).
pub fn discovery_request_examples() -> Vec<(&'static str, &'static str, DiscoveryRequest)> {
    let loc = |s: &str| s.parse::<Locator>().expect("a locator");
    vec![
        (
            "register",
            "discover the registrars of group \"printers\" and the one at lookup.example:4160, for 60 s",
            DiscoveryRequest {
                id: 1,
                body: DiscoveryRequestBody::Register {
                    groups: Groups::of(["printers"]),
                    locators: vec![loc("lookup.example:4160")],
                    handback: b"client-7".to_vec(),
                    duration: 60_000,
                },
            },
        ),
        (
            "get_registrars",
            "the registrars discovered for the registration",
            DiscoveryRequest { id: 2, body: DiscoveryRequestBody::GetRegistrars { cookie: COOKIE } },
        ),
        (
            "add_groups",
            "add group \"lab\"",
            DiscoveryRequest {
                id: 3,
                body: DiscoveryRequestBody::AddGroups { cookie: COOKIE, groups: vec!["lab".into()] },
            },
        ),
        (
            "set_locators",
            "replace the locators",
            DiscoveryRequest {
                id: 4,
                body: DiscoveryRequestBody::SetLocators {
                    cookie: COOKIE,
                    locators: vec![loc("lookup.example:4160")],
                },
            },
        ),
        (
            "discard",
            "discard a registrar (it may be discovered again)",
            DiscoveryRequest {
                id: 5,
                body: DiscoveryRequestBody::Discard { cookie: COOKIE, registrar: RegistrarId(1) },
            },
        ),
    ]
}

/// Example discovery replies: (name, status, summary, message).
pub fn discovery_reply_examples() -> Vec<(&'static str, u16, &'static str, DiscoveryReply)> {
    let r = |id, body| DiscoveryReply { id, landlord: DISCOVERY, body };
    let registrar = Registrar {
        id: RegistrarId(1),
        groups: ["printers".to_string()].into(),
        locators: ["lookup.example:4160".parse::<Locator>().expect("a locator")].into(),
    };
    vec![
        (
            "registered",
            200,
            "registered for 60 s; renew and cancel its lease with POST /lease?landlord=00000000000f4240",
            r(1, DiscoveryReplyBody::Registered {
                registration: 1,
                cookie: COOKIE,
                duration: 60_000,
                event_id: 1,
                sequence: 0,
            }),
        ),
        ("registrars", 200, "one registrar discovered", r(2, DiscoveryReplyBody::Registrars { registrars: vec![registrar] })),
        ("done", 200, "changed (or nothing to change)", r(3, DiscoveryReplyBody::Done)),
        (
            "no_listener",
            400,
            "a registration without its listener",
            r(1, DiscoveryReplyBody::Error(WireError::from(&LeaseError::InvalidArgument(
                "a registration needs its listener: the URL events are POSTed to, in the leasehold-listener header".into(),
            )))),
        ),
        (
            "unknown_registration",
            404,
            "no such registration (its lease ended, or it was cancelled)",
            r(2, DiscoveryReplyBody::Error(WireError::from(&LeaseError::UnknownLease))),
        ),
    ]
}

/// Example coordination requests: (name, summary, message).
pub fn coord_request_examples() -> Vec<(&'static str, &'static str, CoordRequest)> {
    let q = |id, body| CoordRequest { id, body };
    vec![
        (
            "acquire",
            "the lock \"locks/db\" for 10 s, waiting up to 5 s if it is held",
            q(
                1,
                CoordRequestBody::Acquire {
                    resource: b"locks/db".to_vec(),
                    duration: 10_000,
                    wait: 5_000,
                    holder: b"node-1".to_vec(),
                },
            ),
        ),
        (
            "watch",
            "a watch on every resource under \"locks/\" for 30 s",
            q(
                2,
                CoordRequestBody::Watch {
                    resource: b"locks/".to_vec(),
                    prefix: true,
                    renewals: false,
                    duration: 30_000,
                    handback: b"mine".to_vec(),
                },
            ),
        ),
        (
            "poll",
            "a watch's events after number 41, waiting up to 25 s for one",
            q(3, CoordRequestBody::Poll { cookie: COOKIE, since: 41, wait: 25_000, max: 100 }),
        ),
        (
            "holders",
            "who holds the exclusive resources under \"locks/\"",
            q(4, CoordRequestBody::Holders { resource: b"locks/".to_vec(), prefix: true }),
        ),
    ]
}

/// Example coordination replies: (name, status, summary, message).
pub fn coord_reply_examples() -> Vec<(&'static str, u16, &'static str, CoordReply)> {
    let l = LandlordId(16);
    let r = |id, body| CoordReply { id, landlord: l, body };
    let holder = Holder {
        resource: b"locks/db".to_vec(),
        token: 7,
        holder: b"node-1".to_vec(),
        remaining: 8_000,
    };
    let event = |sequence, kind, duration| LeaseEvent {
        sequence,
        kind,
        resource: b"locks/db".to_vec(),
        token: 7,
        holder: b"node-1".to_vec(),
        duration,
    };
    let coord_err = |e: LeaseError, message: &str| {
        let mut w = WireError::from(&e);
        w.message = message.to_string();
        CoordReplyBody::Error(w)
    };
    vec![
        (
            "acquired",
            200,
            "granted for 10 s with fencing token 7, after waiting 1.5 s",
            r(1, CoordReplyBody::Acquired {
                cookie: COOKIE,
                duration: 10_000,
                token: 7,
                resource: b"locks/db".to_vec(),
                waited: 1_500,
            }),
        ),
        (
            "watching",
            200,
            "watching, with what is held now",
            r(2, CoordReplyBody::Watching {
                cookie: COOKIE,
                duration: 30_000,
                event_id: 4,
                sequence: 0,
                current: vec![holder.clone()],
            }),
        ),
        (
            "events",
            200,
            "a grant and its end",
            r(3, CoordReplyBody::Events(Events {
                event_id: 4,
                handback: b"mine".to_vec(),
                last: 43,
                missed: None,
                current: None,
                events: vec![
                    event(42, EventKind::Granted, 10_000),
                    event(43, EventKind::Cancelled, 0),
                ],
            })),
        ),
        (
            "events_missed",
            200,
            "events 42 to 2000 are no longer kept: what is held now instead",
            r(3, CoordReplyBody::Events(Events {
                event_id: 4,
                handback: Vec::new(),
                last: 2_000,
                missed: Some(Missed { from: 42, to: 2_000 }),
                current: Some(vec![holder.clone()]),
                events: Vec::new(),
            })),
        ),
        ("holders", 200, "one holder", r(4, CoordReplyBody::Holders { holders: vec![holder] })),
        (
            "held",
            409,
            "the resource is held and the wait ran out (or none was asked)",
            r(1, coord_err(
                LeaseError::LeaseDenied(String::new()),
                "\"locks/db\" is held by another lease: free in at most 6000 ms (unless its holder renews)",
            )),
        ),
        (
            "unknown_watch",
            404,
            "the watch is unknown (it ran out, or was cancelled)",
            r(3, coord_err(LeaseError::UnknownLease, "")),
        ),
        (
            "bad_since",
            400,
            "a sequence number the watch never issued",
            r(3, coord_err(
                LeaseError::InvalidArgument(String::new()),
                "since 99 is after the watch's last event 45",
            )),
        ),
    ]
}

const COOKIE: Cookie = Cookie(0x2f6b_03c4_9a1e_77d0_51b8_e23a_c4f0_9d16);

/// Example requests: (name, summary, message).
pub fn request_examples() -> Vec<(&'static str, &'static str, Request)> {
    vec![
        (
            "grant",
            "a lease on \"printer-3\" for 30 s",
            grant_request(1, b"printer-3".to_vec(), 30_000),
        ),
        (
            "grant_any",
            "a lease for as long as the landlord grants (ANY)",
            grant_request(2, b"printer-3".to_vec(), ANY),
        ),
        (
            "renew",
            "renew for 30 s",
            Request { id: 3, body: RequestBody::Renew { cookie: COOKIE, duration: 30_000 } },
        ),
        ("cancel", "cancel", Request { id: 4, body: RequestBody::Cancel { cookie: COOKIE } }),
        (
            "renew_all",
            "renew two leases of one landlord in one message",
            Request {
                id: 5,
                body: RequestBody::RenewAll { items: vec![(COOKIE, 30_000), (Cookie(7), 10_000)] },
            },
        ),
        (
            "cancel_all",
            "cancel two leases",
            Request { id: 6, body: RequestBody::CancelAll { cookies: vec![COOKIE, Cookie(7)] } },
        ),
    ]
}

fn err(e: LeaseError, message: &str) -> ReplyBody {
    let mut w = WireError::from(&e);
    if !message.is_empty() {
        w.message = message.to_string();
    }
    ReplyBody::Error(w)
}

/// Example replies: (name, status, summary, message).
pub fn reply_examples() -> Vec<(&'static str, u16, &'static str, Reply)> {
    let l = LandlordId(16);
    let r = |id, body| Reply { id, landlord: l, body };
    vec![
        ("granted", 200, "granted for 30 s by landlord 16", r(1, ReplyBody::Granted { cookie: COOKIE, duration: 30_000 })),
        ("renewed", 200, "renewed for 30 s", r(3, ReplyBody::Renewed { duration: 30_000 })),
        ("cancelled", 200, "cancelled", r(4, ReplyBody::Cancelled)),
        (
            "renewed_all",
            200,
            "one renewed, one unknown",
            r(5, ReplyBody::RenewedAll {
                results: vec![Outcome::Ok(30_000), Outcome::Err(WireError::from(&LeaseError::UnknownLease))],
            }),
        ),
        ("cancelled_all", 200, "both cancelled", r(6, ReplyBody::CancelledAll { results: vec![Outcome::Ok(()), Outcome::Ok(())] })),
        (
            "unknown_lease",
            404,
            "the landlord does not know the lease",
            r(3, err(LeaseError::UnknownLease, &format!("lease {COOKIE} is unknown to landlord {l}: never granted there, cancelled, revoked, or expired"))),
        ),
        ("denied", 409, "the landlord refuses (at capacity)", r(1, err(LeaseError::LeaseDenied(String::new()), "at capacity: 10000 leases held"))),
        (
            "bad_landlord",
            400,
            "a landlord id in another form than the wire's",
            Reply { id: 0, landlord: LandlordId(0), body: err(LeaseError::InvalidArgument(String::new()), "landlord=\"16\" is not a landlord id: write it as the wire does, 16 hex digits (landlord 16 is 0000000000000010)") },
        ),
        (
            "undecodable",
            400,
            "a body that does not decode",
            Reply { id: 0, landlord: LandlordId(0), body: err(LeaseError::Decode("expected value at line 1 column 2".into()), "") },
        ),
        (
            "too_large",
            413,
            "a body over the size limit",
            Reply { id: 0, landlord: LandlordId(0), body: err(LeaseError::Decode("a message is at most 1048576 bytes".into()), "") },
        ),
    ]
}

fn dec() -> Value {
    json!({
        "description": "A 64-bit integer as a decimal string (exact in JavaScript); readers also accept a JSON integer.",
        "oneOf": [
            { "type": "string", "pattern": "^-?[0-9]{1,20}$" },
            { "type": "integer" }
        ]
    })
}

fn obj(required: &[&str], props: Value) -> Value {
    json!({ "type": "object", "additionalProperties": false, "required": required, "properties": props })
}

fn op(name: &str, required: &[&str], mut props: Value) -> Value {
    props["op"] = json!({ "const": name });
    let mut req = vec!["op"];
    req.extend_from_slice(required);
    obj(&req, props)
}

fn schemas() -> Value {
    let mut all = core_schemas();
    if let (Some(a), Value::Object(d)) = (all.as_object_mut(), discovery_schemas()) {
        a.extend(d);
    }
    all
}

/// The schemas of the lookup discovery service's messages (POST /discovery).
fn discovery_schemas() -> Value {
    let r = |n: &str| json!({ "$ref": format!("#/components/schemas/{n}") });
    json!({
        "Groups": {
            "description": "Group names; null means every group (a registration that wants all groups).",
            "oneOf": [ { "type": "null" }, { "type": "array", "items": { "type": "string" } } ]
        },
        "Locator": { "description": "A registrar's address for unicast discovery: host:port.", "type": "string" },
        "RegistrarId": { "description": "A registrar (lookup service) id: 32 hex digits.", "type": "string", "pattern": "^[0-9a-fA-F]{32}$" },
        "Registrar": obj(&["id", "groups", "locators"], json!({ "id": r("RegistrarId"),
            "groups": { "type": "array", "items": { "type": "string" } },
            "locators": { "type": "array", "items": r("Locator") } })),
        "DiscoveryRequest": {
            "description": "A request to the lookup discovery service (POST /discovery), JSON form version 1 (core/src/discovery/wire.rs).",
            "type": "object", "additionalProperties": false, "required": ["v", "id", "body"],
            "properties": { "v": { "const": 1 }, "id": r("DecU64"), "body": r("DiscoveryRequestBody") },
            "examples": discovery_request_examples().iter().map(|(_, _, m)| enc_disc_req(m)).collect::<Vec<_>>()
        },
        "DiscoveryRequestBody": { "oneOf": [
            op("register", &["groups", "locators", "handback", "duration"], json!({ "groups": r("Groups"),
                "locators": { "type": "array", "items": r("Locator") }, "handback": r("HexBytes"), "duration": r("Duration") })),
            op("get_groups", &["cookie"], json!({ "cookie": r("Cookie") })),
            op("add_groups", &["cookie", "groups"], json!({ "cookie": r("Cookie"), "groups": { "type": "array", "items": { "type": "string" } } })),
            op("set_groups", &["cookie", "groups"], json!({ "cookie": r("Cookie"), "groups": r("Groups") })),
            op("remove_groups", &["cookie", "groups"], json!({ "cookie": r("Cookie"), "groups": { "type": "array", "items": { "type": "string" } } })),
            op("get_locators", &["cookie"], json!({ "cookie": r("Cookie") })),
            op("add_locators", &["cookie", "locators"], json!({ "cookie": r("Cookie"), "locators": { "type": "array", "items": r("Locator") } })),
            op("set_locators", &["cookie", "locators"], json!({ "cookie": r("Cookie"), "locators": { "type": "array", "items": r("Locator") } })),
            op("remove_locators", &["cookie", "locators"], json!({ "cookie": r("Cookie"), "locators": { "type": "array", "items": r("Locator") } })),
            op("get_registrars", &["cookie"], json!({ "cookie": r("Cookie") })),
            op("discard", &["cookie", "registrar"], json!({ "cookie": r("Cookie"), "registrar": r("RegistrarId") }))
        ]},
        "DiscoveryReply": {
            "description": "The discovery service's reply, JSON form version 1: the request's id, the service's landlord id (of its registration leases), the answer.",
            "type": "object", "additionalProperties": false, "required": ["v", "id", "landlord", "body"],
            "properties": { "v": { "const": 1 }, "id": r("DecU64"), "landlord": r("LandlordId"), "body": r("DiscoveryReplyBody") },
            "examples": discovery_reply_examples().iter().map(|(_, _, _, m)| enc_disc_reply(m)).collect::<Vec<_>>()
        },
        "DiscoveryReplyBody": { "oneOf": [
            op("registered", &["registration", "cookie", "duration", "event_id", "sequence"], json!({ "registration": r("DecU64"),
                "cookie": r("Cookie"), "duration": r("Duration"), "event_id": r("DecU64"),
                "sequence": { "description": "The first event carries the number after this one.", "$ref": "#/components/schemas/DecU64" } })),
            op("groups", &["groups"], json!({ "groups": r("Groups") })),
            op("locators", &["locators"], json!({ "locators": { "type": "array", "items": r("Locator") } })),
            op("registrars", &["registrars"], json!({ "registrars": { "type": "array", "items": r("Registrar") } })),
            op("done", &[], json!({})),
            op("error", &["code", "message"], json!({ "code": { "type": "integer", "format": "int32" }, "message": { "type": "string" } }))
        ]},
        "DiscoveryStatus": {
            "description": "What the discovery service holds.",
            "type": "object",
            "required": ["shard", "landlord", "announcements", "registrations", "discovered", "journal_seq", "recovered"],
            "properties": {
                "shard": { "type": "integer" }, "landlord": r("LandlordId"),
                "announcements": { "type": "string", "description": "How announcements arrive (multicast group and port, or unicast)." },
                "multicast_unavailable": { "type": ["string", "null"], "description": "Why multicast is not used, when --discovery-announce auto fell back." },
                "registrations": { "type": "array", "items": { "type": "integer" } },
                "discovered": { "type": "array", "items": r("RegistrarId") },
                "journal_seq": { "type": "integer" },
                "recovered": { "type": "object", "description": "What opening the store found (records replayed, registrations, a torn tail cut)." }
            }
        }
    })
}

fn core_schemas() -> Value {
    let r = |n: &str| json!({ "$ref": format!("#/components/schemas/{n}") });
    json!({
        "LandlordId": {
            "description": "A landlord (shard) id: 16 hex digits, the only form anywhere (landlord 16 is 0000000000000010).",
            "type": "string", "pattern": "^[0-9a-fA-F]{16}$", "examples": ["0000000000000010"]
        },
        "Cookie": {
            "description": "A lease's cookie: 32 hex digits.",
            "type": "string", "pattern": "^[0-9a-fA-F]{32}$", "examples": [COOKIE.to_string()]
        },
        "Dec64": dec(),
        "DecU64": {
            "description": "A request id: an unsigned 64-bit integer as a decimal string; readers also accept a JSON integer.",
            "oneOf": [ { "type": "string", "pattern": "^[0-9]{1,20}$" }, { "type": "integer", "minimum": 0 } ]
        },
        "Duration": {
            "description": "Milliseconds as a decimal string; 9223372036854775807 is FOREVER, -1 is ANY (requests only).",
            "$ref": "#/components/schemas/Dec64"
        },
        "HexBytes": { "description": "Bytes as hex (an even number of digits).", "type": "string", "pattern": "^([0-9a-fA-F]{2})*$" },
        "WireError": {
            "description": "An error: its stable code (1 unknown_lease, 2 lease_denied, 3 lease_map, 4 invalid_argument, 5 decode, 6 indefinite) and a message.",
            "type": "object", "additionalProperties": false, "required": ["code", "message"],
            "properties": { "code": { "type": "integer", "format": "int32" }, "message": { "type": "string" } }
        },
        "Request": {
            "description": "A request message, JSON form version 1 (core/src/codec.rs).",
            "type": "object", "additionalProperties": false, "required": ["v", "id", "body"],
            "properties": { "v": { "const": 1 }, "id": r("DecU64"), "body": r("RequestBody") },
            "examples": request_examples().iter().map(|(_, _, m)| enc_req(m)).collect::<Vec<_>>()
        },
        "RequestBody": { "oneOf": [
            op("grant", &["resource", "duration"], json!({ "resource": r("HexBytes"), "duration": r("Duration") })),
            op("renew", &["cookie", "duration"], json!({ "cookie": r("Cookie"), "duration": r("Duration") })),
            op("cancel", &["cookie"], json!({ "cookie": r("Cookie") })),
            op("renew_all", &["items"], json!({ "items": { "type": "array", "items": obj(&["cookie", "duration"], json!({ "cookie": r("Cookie"), "duration": r("Duration") })) } })),
            op("cancel_all", &["cookies"], json!({ "cookies": { "type": "array", "items": r("Cookie") } }))
        ]},
        "Reply": {
            "description": "A reply message, JSON form version 1: the request's id, the landlord that answered, the answer.",
            "type": "object", "additionalProperties": false, "required": ["v", "id", "landlord", "body"],
            "properties": { "v": { "const": 1 }, "id": r("DecU64"), "landlord": r("LandlordId"), "body": r("ReplyBody") },
            "examples": reply_examples().iter().map(|(_, _, _, m)| enc_reply(m)).collect::<Vec<_>>()
        },
        "ReplyBody": { "oneOf": [
            op("granted", &["cookie", "duration"], json!({ "cookie": r("Cookie"), "duration": r("Duration") })),
            op("renewed", &["duration"], json!({ "duration": r("Duration") })),
            op("cancelled", &[], json!({})),
            op("renewed_all", &["results"], json!({ "results": { "type": "array", "items": { "oneOf": [
                obj(&["duration"], json!({ "duration": r("Duration") })),
                obj(&["error"], json!({ "error": r("WireError") }))
            ]}}})),
            op("cancelled_all", &["results"], json!({ "results": { "type": "array", "items": { "oneOf": [
                obj(&[], json!({})),
                obj(&["error"], json!({ "error": r("WireError") }))
            ]}}})),
            op("error", &["code", "message"], json!({ "code": { "type": "integer", "format": "int32" }, "message": { "type": "string" } }))
        ]},
        "CoordRequest": {
            "description": "A coordination request (POST /coord), JSON form version 1 (core/src/coord/wire.rs).",
            "type": "object", "additionalProperties": false, "required": ["v", "id", "body"],
            "properties": { "v": { "const": 1 }, "id": r("DecU64"), "body": r("CoordRequestBody") },
            "examples": coord_request_examples().iter().map(|(_, _, m)| enc_coord_req(m)).collect::<Vec<_>>()
        },
        "CoordRequestBody": { "oneOf": [
            op("acquire", &["resource", "duration", "wait", "holder"], json!({ "resource": r("HexBytes"), "duration": r("Duration"),
                "wait": { "description": "How long to wait (ms) if the resource is held; 0: answer at once.", "$ref": "#/components/schemas/Dec64" },
                "holder": { "description": "A label watchers see.", "$ref": "#/components/schemas/HexBytes" } })),
            op("watch", &["resource", "prefix", "renewals", "duration", "handback"], json!({ "resource": r("HexBytes"), "prefix": { "type": "boolean" },
                "renewals": { "type": "boolean" }, "duration": r("Duration"), "handback": r("HexBytes") })),
            op("poll", &["cookie", "since", "wait", "max"], json!({ "cookie": r("Cookie"), "since": r("DecU64"),
                "wait": r("Dec64"), "max": { "type": "integer", "minimum": 0, "maximum": 4294967295u64 } })),
            op("holders", &["resource", "prefix"], json!({ "resource": r("HexBytes"), "prefix": { "type": "boolean" } }))
        ]},
        "CoordReply": {
            "description": "A coordination reply, JSON form version 1.",
            "type": "object", "additionalProperties": false, "required": ["v", "id", "landlord", "body"],
            "properties": { "v": { "const": 1 }, "id": r("DecU64"), "landlord": r("LandlordId"), "body": r("CoordReplyBody") },
            "examples": coord_reply_examples().iter().map(|(_, _, _, m)| enc_coord_reply(m)).collect::<Vec<_>>()
        },
        "Holder": obj(&["resource", "token", "holder", "remaining"], json!({ "resource": r("HexBytes"), "token": r("DecU64"),
            "holder": r("HexBytes"), "remaining": r("Dec64") })),
        "LeaseEvent": obj(&["sequence", "kind", "resource", "token", "holder", "duration"], json!({ "sequence": r("DecU64"),
            "kind": { "type": "string", "enum": ["granted", "renewed", "cancelled", "expired"] },
            "resource": r("HexBytes"), "token": r("DecU64"), "holder": r("HexBytes"), "duration": r("Dec64") })),
        "CoordReplyBody": { "oneOf": [
            op("acquired", &["cookie", "duration", "token", "resource", "waited"], json!({ "cookie": r("Cookie"), "duration": r("Duration"),
                "token": { "description": "The fencing token.", "$ref": "#/components/schemas/DecU64" }, "resource": r("HexBytes"), "waited": r("Dec64") })),
            op("watching", &["cookie", "duration", "event_id", "sequence", "current"], json!({ "cookie": r("Cookie"), "duration": r("Duration"),
                "event_id": r("DecU64"), "sequence": r("DecU64"), "current": { "type": "array", "items": r("Holder") } })),
            op("events", &["event_id", "handback", "last", "events"], json!({ "event_id": r("DecU64"), "handback": r("HexBytes"), "last": r("DecU64"),
                "missed": obj(&["from", "to"], json!({ "from": r("DecU64"), "to": r("DecU64") })),
                "current": { "type": "array", "items": r("Holder") },
                "events": { "type": "array", "items": r("LeaseEvent") } })),
            op("holders", &["holders"], json!({ "holders": { "type": "array", "items": r("Holder") } })),
            op("error", &["code", "message"], json!({ "code": { "type": "integer", "format": "int32" }, "message": { "type": "string" } }))
        ]},
        "AdminLease": obj(&["landlord", "cookie", "resource", "expires_in_ms"], json!({
            "landlord": r("LandlordId"), "cookie": r("Cookie"), "resource": r("HexBytes"),
            "resource_text": { "type": "string", "description": "The resource as text, when it is UTF-8." },
            "expires_in_ms": { "description": "Milliseconds left at the landlord (FOREVER: 9223372036854775807).", "type": "string", "pattern": "^[0-9]{1,19}$" }
        })),
        "LeasePage": obj(&["landlord", "leases"], json!({
            "landlord": r("LandlordId"),
            "leases": { "type": "array", "items": r("AdminLease") },
            "next": { "description": "The cursor (`after`) of the next page; absent on the last.", "$ref": "#/components/schemas/Cookie" }
        })),
        "Revoked": obj(&["landlord", "revoked"], json!({
            "landlord": r("LandlordId"), "revoked": { "type": "array", "items": r("AdminLease") }
        })),
        "AdminError": obj(&["error"], json!({ "error": r("WireError") }))
    })
}

fn readiness_response(description: &str) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": {
        "type": "object",
        "required": ["ready", "server", "store", "shards", "unserved"],
        "properties": {
            "ready": { "type": "boolean" },
            "server": { "type": "string" },
            "store": { "type": "string", "enum": ["files", "postgres"] },
            "database": { "type": "object" },
            "clock": { "type": "object" },
            "shards": { "type": "array", "items": { "type": "object", "required": ["shard", "state"],
                "properties": { "shard": { "type": "integer" }, "state": { "type": "string" } } } },
            "unserved": { "type": "array", "items": { "type": "integer" } }
        }
    } } } })
}

fn text_response(description: &str) -> Value {
    json!({ "description": description, "content": { "text/plain": { "schema": { "type": "string" } } } })
}

fn unavailable() -> Value {
    json!({
        "description": "The shard cannot answer here and no owner could be reached: try another server (an indefinite failure). No wire reply.",
        "headers": { "Retry-After": { "description": "Seconds.", "schema": { "type": "string" } } },
        "content": { "text/plain": { "schema": { "type": "string" } } }
    })
}

fn wire_response(status: u16, description: &str) -> Value {
    let examples: serde_json::Map<String, Value> = reply_examples()
        .into_iter()
        .filter(|(_, s, _, _)| *s == status)
        .map(|(name, _, summary, m)| {
            (name.to_string(), json!({ "summary": summary, "value": enc_reply(&m) }))
        })
        .collect();
    json!({
        "description": description,
        "headers": { "X-Leasehold-Owner": { "description": "The URL of the server that owns the shard that answered: send this landlord's requests there first.", "schema": { "type": "string" } } },
        "content": {
            "application/json": { "schema": { "$ref": "#/components/schemas/Reply" }, "examples": examples },
            "application/octet-stream": { "schema": { "type": "string", "format": "binary" } }
        }
    })
}

fn coord_response(status: u16, description: &str) -> Value {
    let examples: serde_json::Map<String, Value> = coord_reply_examples()
        .into_iter()
        .filter(|(_, s, _, _)| *s == status)
        .map(|(name, _, summary, m)| {
            (name.to_string(), json!({ "summary": summary, "value": enc_coord_reply(&m) }))
        })
        .collect();
    let mut content =
        json!({ "application/json": { "schema": { "$ref": "#/components/schemas/CoordReply" } } });
    if !examples.is_empty() {
        content["application/json"]["examples"] = Value::Object(examples);
    }
    content["application/octet-stream"] =
        json!({ "schema": { "type": "string", "format": "binary" } });
    json!({
        "description": description,
        "headers": { "X-Leasehold-Owner": { "description": "The URL of the server that owns the shard that answered.", "schema": { "type": "string" } } },
        "content": content
    })
}

fn disc_response(status: u16, description: &str) -> Value {
    let examples: serde_json::Map<String, Value> = discovery_reply_examples()
        .into_iter()
        .filter(|(_, s, _, _)| *s == status)
        .map(|(name, _, summary, m)| {
            (name.to_string(), json!({ "summary": summary, "value": enc_disc_reply(&m) }))
        })
        .collect();
    let mut content = json!({ "application/json": { "schema": { "$ref": "#/components/schemas/DiscoveryReply" } } });
    if !examples.is_empty() {
        content["application/json"]["examples"] = Value::Object(examples);
    }
    content["application/octet-stream"] =
        json!({ "schema": { "type": "string", "format": "binary" } });
    json!({ "description": description, "content": content })
}

fn coord_responses() -> Value {
    json!({
        "200": coord_response(200, "The landlord's answer: acquired (with its fencing token), watching, events, holders."),
        "400": coord_response(400, "An error reply: the body does not decode (code 5), or a bad argument (code 4): a landlord id in another form, a prefix watch outside a colocated prefix, a sequence number the watch never issued."),
        "404": coord_response(404, "An error reply: the watch is unknown (it ran out or was cancelled), or the landlord is not one of the cluster's (code 1)."),
        "409": coord_response(409, "An error reply: the resource is held (code 2) and the wait ran out, or none was asked; the message says until when at most."),
        "413": coord_response(413, "An error reply: the body is over the size limit (code 5)."),
        "503": unavailable()
    })
}

fn admin_json(description: &str, schema: &str) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": { "$ref": format!("#/components/schemas/{schema}") } } } })
}

fn admin_responses(ok: &str, ok_schema: &str) -> Value {
    json!({
        "200": admin_json(ok, ok_schema),
        "400": admin_json("A malformed landlord id, cookie, resource or parameter.", "AdminError"),
        "404": admin_json("No such lease, or no such landlord.", "AdminError"),
        "503": unavailable()
    })
}

fn param(name: &str, place: &str, schema: Value, description: &str, required: bool) -> Value {
    json!({ "name": name, "in": place, "required": required, "description": description, "schema": schema })
}

/// The whole document.
pub fn document() -> Value {
    let r = |n: &str| json!({ "$ref": format!("#/components/schemas/{n}") });
    let landlord_q = param("landlord", "query", r("LandlordId"),
        "The lease's landlord, 16 hex digits (any other form: 400). Renewals and cancels name it; a grant without it goes to the shard its resource hashes to.", false);
    let landlord_p =
        param("landlord", "path", r("LandlordId"), "The landlord (shard), 16 hex digits.", true);
    let cookie_p = param("cookie", "path", r("Cookie"), "The lease's cookie.", true);
    let resource_p = param("resource", "path", r("HexBytes"), "The resource, hex.", true);
    let req_examples: serde_json::Map<String, Value> = request_examples()
        .into_iter()
        .map(|(name, summary, m)| {
            (name.to_string(), json!({ "summary": summary, "value": enc_req(&m) }))
        })
        .collect();
    let coord_req_examples: serde_json::Map<String, Value> = coord_request_examples()
        .into_iter()
        .map(|(name, summary, m)| {
            (name.to_string(), json!({ "summary": summary, "value": enc_coord_req(&m) }))
        })
        .collect();
    let disc_req_examples: serde_json::Map<String, Value> = discovery_request_examples()
        .into_iter()
        .map(|(name, summary, m)| {
            (name.to_string(), json!({ "summary": summary, "value": enc_disc_req(&m) }))
        })
        .collect();
    let page_example = LeasePage {
        landlord: LandlordId(16),
        leases: vec![AdminLease {
            landlord: LandlordId(16),
            cookie: COOKIE,
            resource: hex(b"printer-3"),
            resource_text: Some("printer-3".into()),
            expires_in_ms: 21_400,
        }],
        next: None,
    };
    let revoked_example =
        Revoked { landlord: LandlordId(16), revoked: page_example.leases.clone() };
    let admin_error = AdminError {
        error: WireError::from(&LeaseError::InvalidArgument(
            "limit must be a number from 1 to 10000".into(),
        )),
    };
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "leasehold-server",
            "version": env!("CARGO_PKG_VERSION"),
            "summary": "Distributed leases over HTTP: leasehold's wire protocol, and admin endpoints for operators.",
            "description": "POST /lease carries one wire message (JSON or binary by Content-Type) and answers one reply in the same encoding. Any answer with a wire reply in the body is the landlord's definite answer, whatever its status (404 unknown lease, 409 denied, 400 bad request); a 503 without a wire reply means: try another server. Transport rules for clients: docs/server-transports.md.",
            "license": { "name": "Apache-2.0", "identifier": "Apache-2.0" }
        },
        "paths": {
            "/lease": { "post": {
                "operationId": "lease",
                "summary": "Grant, renew, cancel, renew_all or cancel_all: one wire message in, one reply out.",
                "parameters": [landlord_q],
                "requestBody": { "required": true, "content": {
                    "application/json": { "schema": r("Request"), "examples": req_examples },
                    "application/octet-stream": { "schema": { "type": "string", "format": "binary" } }
                }},
                "responses": {
                    "200": wire_response(200, "The landlord's answer (per-lease errors of a batch included)."),
                    "400": wire_response(400, "An error reply: the body does not decode (code 5), or a bad argument (code 4), such as a landlord id in another form."),
                    "404": wire_response(404, "An error reply: the lease is unknown to its landlord, or the landlord is not one of the cluster's (code 1)."),
                    "401": wire_response(401, "An error reply (code 2): the server has a tokens file (--tokens) and the request carried neither a token nor a client certificate."),
                    "403": wire_response(403, "An error reply (code 2): the token names no identity, the identity may not use this operation or lease this resource, or a forwarded request's proof is wrong."),
                    "409": wire_response(409, "An error reply: the landlord denies the request (code 2: at capacity, over the identity's quota, a policy); the lease is unchanged."),
                    "413": wire_response(413, "An error reply: the body is over the size limit (code 5)."),
                    "503": unavailable()
                }
            }},
            "/coord": { "post": {
                "operationId": "coord",
                "summary": "Coordination: acquire an exclusive resource (waiting for it, first come first served) and get its fencing token; watch a resource or a prefix; poll a watch's events (a long poll); list holders.",
                "description": "One coordination message in (JSON or binary by Content-Type), one reply out in the same encoding, with the statuses of POST /lease. An acquire or a poll may be held up to its `wait` (at most the server's longest wait). Polls name the watch's landlord (`?landlord=`, as the watching reply says). Renew and cancel a watch or an acquired lease with POST /lease, like any lease.",
                "parameters": [param("landlord", "query", r("LandlordId"), "The landlord to ask, 16 hex digits (any other form: 400). A poll names its watch's; an acquire or a watch without it goes to the shard its resource is routed to.", false)],
                "requestBody": { "required": true, "content": {
                    "application/json": { "schema": r("CoordRequest"), "examples": coord_req_examples },
                    "application/octet-stream": { "schema": { "type": "string", "format": "binary" } }
                }},
                "responses": coord_responses()
            }},
            "/renewal": { "post": renewal_path() },
            "/watch": { "get": {
                "operationId": "watch",
                "summary": "A watch's events after `since`, as JSON (the events reply of a poll), waiting up to `wait_ms` for one: long polling for clients with only GET.",
                "parameters": [
                    param("cookie", "query", r("Cookie"), "The watch's cookie (its watching reply's).", true),
                    param("since", "query", json!({ "type": "integer", "minimum": 0 }), "The last event number seen (default 0).", false),
                    param("landlord", "query", r("LandlordId"), "The watch's landlord, 16 hex digits.", false),
                    param("wait_ms", "query", json!({ "type": "integer", "minimum": 0, "maximum": 600000 }), "How long to wait for an event, ms (default 25000; cut to the server's longest wait).", false),
                    param("max", "query", json!({ "type": "integer", "minimum": 0, "maximum": 4294967295u64 }), "At most this many events (0: no limit).", false)
                ],
                "responses": coord_responses()
            }},
            "/discovery": { "post": {
                "operationId": "discovery",
                "summary": "The lookup discovery service (with --discovery-port): register for the registrars of groups and locators, change a registration's groups and locators, list its registrars, discard one.",
                "description": "One discovery message in (JSON or binary by Content-Type), one reply out in the same encoding, with the statuses of POST /lease. A register request names its listener in the leasehold-listener header: the http:// or https:// URL (within the server's --event-allow) the service POSTs discovered and discarded events to (in the register request's encoding), each answered with an event reply. Renew and cancel a registration's lease with POST /lease?landlord=<the reply's landlord>, like any lease. A server without a discovery service answers 400.",
                "parameters": [
                    param("landlord", "query", r("LandlordId"), "The discovery service's id (the landlord of its registration leases), 16 hex digits; another id: 404.", false),
                    param("leasehold-listener", "header", json!({ "type": "string" }), "A register request's listener: the http:// or https:// URL events are POSTed to.", false)
                ],
                "requestBody": { "required": true, "content": {
                    "application/json": { "schema": r("DiscoveryRequest"), "examples": disc_req_examples },
                    "application/octet-stream": { "schema": { "type": "string", "format": "binary" } }
                }},
                "responses": {
                    "200": disc_response(200, "The service's answer: registered, groups, locators, registrars, done."),
                    "400": disc_response(400, "An error reply: the body does not decode (code 5), or a bad argument (code 4): no listener, a landlord id in another form, groups added to a registration that wants all, no discovery service here."),
                    "401": { "description": "The server has a tokens file and the request carried neither a token nor a client certificate.", "content": { "text/plain": { "schema": { "type": "string" } } } },
                    "403": { "description": "The identity may not register (it lacks grant): an error reply (code 2); or the token names no identity (text).",
                        "content": { "application/json": { "schema": r("DiscoveryReply") }, "application/octet-stream": { "schema": { "type": "string", "format": "binary" } }, "text/plain": { "schema": { "type": "string" } } } },
                    "404": disc_response(404, "An error reply (code 1): no such registration (its lease ended or was cancelled), or another landlord than the service's."),
                    "409": disc_response(409, "An error reply (code 2): the service refuses (a policy)."),
                    "413": disc_response(413, "An error reply: the body is over the size limit (code 5)."),
                    "503": unavailable()
                }
            }},
            "/discovery/status": { "get": {
                "operationId": "discoveryStatus",
                "summary": "What the lookup discovery service holds: how announcements arrive, its registrations, the registrars it has discovered, its journal position, what opening its store found.",
                "responses": {
                    "200": { "description": "The status.", "content": { "application/json": { "schema": r("DiscoveryStatus") } } },
                    "404": text_response("This server runs no discovery service."),
                    "503": unavailable()
                }
            }},
            "/livez": { "get": { "operationId": "livez", "summary": "Whether the process answers at all (restart it if not).", "responses": {
                "200": text_response("The process runs.") } } },
            "/readyz": { "get": { "operationId": "readyz", "summary": "Whether this server can serve every shard correctly now, and each shard's state and why.", "responses": {
                "200": readiness_response("Every shard served (here or by a live owner this server forwards to)."),
                "503": readiness_response("Some shard is not served, the database is unreachable or the clock is off: the body says which and why.") } } },
            "/healthz": { "get": { "operationId": "healthz", "summary": "/readyz's status with one line of text.", "responses": {
                "200": text_response("Every shard served."), "503": text_response("Not ready: the line says why.") } } },
            "/metrics": { "get": { "operationId": "metrics", "summary": "Prometheus metrics.", "responses": {
                "200": { "description": "The Prometheus text format.", "content": { "text/plain": { "schema": { "type": "string" } } } } } } },
            "/openapi.json": { "get": { "operationId": "openapi", "summary": "This document.", "responses": {
                "200": { "description": "OpenAPI 3.1.", "content": { "application/json": { "schema": { "type": "object" } } } } } } },
            "/admin/landlords/{landlord}/leases": { "get": {
                "operationId": "adminList", "tags": ["admin"],
                "summary": "A page of a landlord's leases, in cookie order.",
                "parameters": [landlord_p,
                    param("prefix", "query", r("HexBytes"), "Only leases whose resource starts with these bytes (hex).", false),
                    param("after", "query", r("Cookie"), "Only cookies after this one (the `next` of the page before).", false),
                    param("limit", "query", json!({ "type": "integer", "minimum": 1, "maximum": crate::admin::MAX_PAGE }), "At most this many (default 100).", false)],
                "responses": with_example(admin_responses("The page.", "LeasePage"), &page_example, &admin_error)
            }},
            "/admin/landlords/{landlord}/leases/{cookie}": {
                "get": { "operationId": "adminGet", "tags": ["admin"], "summary": "One lease.",
                    "parameters": [landlord_p, cookie_p],
                    "responses": with_example(admin_responses("The lease.", "AdminLease"), &page_example.leases[0], &admin_error) },
                "delete": { "operationId": "adminRevoke", "tags": ["admin"], "summary": "Revokes a lease (the landlord cancels it; durable before the answer).",
                    "parameters": [landlord_p, cookie_p],
                    "responses": with_example(admin_responses("What was revoked.", "Revoked"), &revoked_example, &admin_error) }
            },
            "/admin/resources/{resource}": {
                "get": { "operationId": "adminResource", "tags": ["admin"], "summary": "The leases on a resource, at the landlord its grants go to (or the one named).",
                    "parameters": [resource_p, param("landlord", "query", r("LandlordId"), "Look at this landlord instead.", false)],
                    "responses": with_example(admin_responses("The leases (one page, no cursor).", "LeasePage"), &page_example, &admin_error) },
                "delete": { "operationId": "adminRevokeResource", "tags": ["admin"], "summary": "Revokes every lease on a resource (404 if there is none).",
                    "parameters": [resource_p, param("landlord", "query", r("LandlordId"), "At this landlord instead.", false)],
                    "responses": with_example(admin_responses("What was revoked.", "Revoked"), &revoked_example, &admin_error) }
            }
        },
        "components": { "schemas": schemas() }
    })
}

/// `POST /renewal`: the renewal service's set messages (JSON or binary), with real messages as
/// examples.
fn renewal_path() -> Value {
    use leasehold::service::wire::{
        ClientLease, SetReply, SetReplyBody, SetRequest, SetRequestBody,
    };
    let set = Cookie(0x0f0e_0d0c_0b0a_0908_0706_0504_0302_0100);
    let msg = |b: Vec<u8>| serde_json::from_slice::<Value>(&b).unwrap_or(Value::Null);
    let req = |body| msg(SetRequest { id: 1, body }.to_json());
    let rep = |body| msg(SetReply { id: 1, landlord: LandlordId(2), body }.to_json());
    let lease = ClientLease {
        landlord: LandlordId(1),
        cookie: Cookie(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff),
        remaining: 25_000,
        urls: vec!["http://10.0.0.1:7420".into()],
        membership: None,
        renew: None,
    };
    let object = |d: &str| json!({ "type": "object", "description": d });
    let r = |n: &str| json!({ "$ref": format!("#/components/schemas/{n}") });
    let mut path = json!({
        "operationId": "renewal",
        "summary": "The lease renewal service (seed 003, LR): create a renewal set, add and remove client leases, list them, register listeners for its events.",
        "description": "One set message of leasehold::service::wire in, JSON or binary by Content-Type (core/tests/vectors/renewal.json has every op in both), one set reply out in the same encoding, with the statuses of POST /lease. create_set goes to the renewal shard named, or to the next one in turn; every other operation names its set's landlord (the renewal shard, the landlord of the set's lease). The set's own lease is renewed and cancelled with POST /lease at that landlord. Events are POSTed to the listener's URL as JSON. See docs/renewal-service.md.",
        "parameters": [param("landlord", "query", r("LandlordId"), "The set's landlord (a renewal shard), 16 hex digits; required except for create_set.", false)],
        "requestBody": { "required": true, "content": {
            "application/json": { "schema": object("A set request: {v, id, body: {op: create_set | add | remove | leases | listen | unlisten, ...}}."), "examples": {
                "create_set": { "value": req(SetRequestBody::CreateSet { duration: 3_600_000 }) },
                "add": { "value": req(SetRequestBody::Add { set, lease, membership: 600_000, renew: 60_000 }) },
                "leases": { "value": req(SetRequestBody::Leases { set }) }
            }}
        }},
        "responses": {
            "200": { "description": "The service's answer.", "content": { "application/json": { "schema": object("A set reply: {v, id, landlord, body: {op: set_created | done | removed | leases | registered, ...}}."), "examples": {
                "set_created": { "value": rep(SetReplyBody::SetCreated { set: 1, cookie: set, duration: 3_600_000 }) },
                "done": { "value": rep(SetReplyBody::Done) }
            }}}},
            "400": { "description": "An error reply: the body does not decode (code 5), or a bad argument such as a URL that is not http:// (code 4).", "content": { "application/json": { "schema": object("A set reply with an error body.") } } },
            "401": { "description": "An error reply (code 2): a tokens file is in force and the request names no identity.", "content": { "application/json": { "schema": object("A set reply with an error body.") } } },
            "403": { "description": "An error reply (code 2): the token names no identity, or the identity may not use this operation (create_set needs grant, the others renew).", "content": { "application/json": { "schema": object("A set reply with an error body.") } } },
            "404": { "description": "An error reply (code 1): the set is unknown (expired, cancelled), the landlord is not a renewal service, or the cluster runs none.", "content": { "application/json": { "schema": object("A set reply with an error body.") } } },
            "409": { "description": "An error reply (code 2): the set-lease policy denies the request.", "content": { "application/json": { "schema": object("A set reply with an error body.") } } },
            "413": { "description": "An error reply: the body is over the size limit (code 5).", "content": { "application/json": { "schema": object("A set reply with an error body.") } } },
            "503": unavailable()
        }
    });
    // The binary form, answered in kind (core/tests/vectors/renewal.json has its hex).
    let bin = json!({ "schema": { "type": "string", "format": "binary" } });
    path["requestBody"]["content"]["application/octet-stream"] = bin.clone();
    for status in ["200", "400", "401", "403", "404", "409", "413"] {
        path["responses"][status]["content"]["application/octet-stream"] = bin.clone();
    }
    path
}

fn with_example(mut responses: Value, ok: &impl serde::Serialize, error: &AdminError) -> Value {
    responses["200"]["content"]["application/json"]["example"] =
        serde_json::to_value(ok).unwrap_or(Value::Null);
    responses["400"]["content"]["application/json"]["example"] =
        serde_json::to_value(error).unwrap_or(Value::Null);
    responses
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold::Limits;

    /// Every example is a message the codec reads back to the same value, and writes back to
    /// the same bytes.
    #[test]
    fn examples_are_real_messages() {
        let doc = document();
        let schemas = &doc["components"]["schemas"];
        let limits = Limits::default();
        for ex in schemas["Request"]["examples"].as_array().unwrap() {
            let text = serde_json::to_vec(ex).unwrap();
            let m = Request::decode(&text, Encoding::Json, &limits).unwrap();
            assert_eq!(enc_req(&m), *ex);
        }
        for ex in schemas["Reply"]["examples"].as_array().unwrap() {
            let text = serde_json::to_vec(ex).unwrap();
            let m = Reply::decode(&text, Encoding::Json, &limits).unwrap();
            assert_eq!(enc_reply(&m), *ex);
        }
        let post = &doc["paths"]["/lease"]["post"];
        for (status, resp) in post["responses"].as_object().unwrap() {
            let Some(examples) = resp["content"]["application/json"]["examples"].as_object() else {
                continue;
            };
            for (name, ex) in examples {
                let text = serde_json::to_vec(&ex["value"]).unwrap();
                let reply = Reply::decode(&text, Encoding::Json, &limits).unwrap();
                let expected = if name == "too_large" {
                    413
                } else {
                    crate::reply::status_of(&reply).as_u16()
                };
                assert_eq!(status, &expected.to_string(), "example {name}");
            }
        }
        // Each op of the codec has a schema branch, and nothing else.
        let ops = |s: &str| -> Vec<String> {
            schemas[s]["oneOf"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["properties"]["op"]["const"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(ops("RequestBody"), ["grant", "renew", "cancel", "renew_all", "cancel_all"]);
        assert_eq!(
            ops("ReplyBody"),
            ["granted", "renewed", "cancelled", "renewed_all", "cancelled_all", "error"]
        );
        for ex in schemas["CoordRequest"]["examples"].as_array().unwrap() {
            let text = serde_json::to_vec(ex).unwrap();
            let m = CoordRequest::decode(&text, Encoding::Json, &limits).unwrap();
            assert_eq!(enc_coord_req(&m), *ex);
        }
        let post = &doc["paths"]["/coord"]["post"];
        for (status, resp) in post["responses"].as_object().unwrap() {
            let Some(examples) = resp["content"]["application/json"]["examples"].as_object() else {
                continue;
            };
            for (name, ex) in examples {
                let text = serde_json::to_vec(&ex["value"]).unwrap();
                let reply = CoordReply::decode(&text, Encoding::Json, &limits).unwrap();
                assert_eq!(status, &crate::coord::status_of(&reply).as_u16().to_string(), "{name}");
            }
        }
        assert_eq!(ops("CoordRequestBody"), ["acquire", "watch", "poll", "holders"]);
        for ex in schemas["DiscoveryRequest"]["examples"].as_array().unwrap() {
            let text = serde_json::to_vec(ex).unwrap();
            let m = DiscoveryRequest::decode(&text, Encoding::Json, &limits).unwrap();
            assert_eq!(enc_disc_req(&m), *ex);
        }
        let post = &doc["paths"]["/discovery"]["post"];
        for (status, resp) in post["responses"].as_object().unwrap() {
            let Some(examples) = resp["content"]["application/json"]["examples"].as_object() else {
                continue;
            };
            for (name, ex) in examples {
                let text = serde_json::to_vec(&ex["value"]).unwrap();
                let reply = DiscoveryReply::decode(&text, Encoding::Json, &limits).unwrap();
                let expected = match &reply.body {
                    DiscoveryReplyBody::Error(e) => crate::reply::status_of_error(e).as_u16(),
                    _ => 200,
                };
                assert_eq!(status, &expected.to_string(), "{name}");
            }
        }
        assert_eq!(
            ops("DiscoveryRequestBody"),
            [
                "register",
                "get_groups",
                "add_groups",
                "set_groups",
                "remove_groups",
                "get_locators",
                "add_locators",
                "set_locators",
                "remove_locators",
                "get_registrars",
                "discard"
            ]
        );
        assert_eq!(
            ops("DiscoveryReplyBody"),
            ["registered", "groups", "locators", "registrars", "done", "error"]
        );
        assert_eq!(ops("CoordReplyBody"), ["acquired", "watching", "events", "holders", "error"]);
        for (_, _, m) in request_examples() {
            let v = enc_req(&m);
            assert!(ops("RequestBody").contains(&v["body"]["op"].as_str().unwrap().to_string()));
        }
    }
}
