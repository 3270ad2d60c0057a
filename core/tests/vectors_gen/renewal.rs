//! `renewal.json`: the renewal service's network messages (set requests and replies, events
//! POSTed to listeners), in both encodings, and inputs that must not decode.

use leasehold::service::wire::{
    ClientLease, SetEventBody, SetEventMessage, SetEventType, SetReply, SetReplyBody, SetRequest,
    SetRequestBody,
};
use leasehold::wire::WireError;
use leasehold::{Cookie, Encoding, ErrorCode, LandlordId, Limits, ANY, FOREVER};
use serde_json::{json, Value};

use super::{hex, limits_value, msg_value};

const S: LandlordId = LandlordId(0x0000_0000_0000_0003);
const L: LandlordId = LandlordId(0x0123_4567_89ab_cdef);
const SET: Cookie = Cookie(0x0f0e_0d0c_0b0a_0908_0706_0504_0302_0100);
const C: Cookie = Cookie(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff);

/// A message in both encodings.
trait Both {
    fn encode(&self, e: Encoding) -> Vec<u8>;
}
impl Both for SetRequest {
    fn encode(&self, e: Encoding) -> Vec<u8> {
        SetRequest::encode(self, e)
    }
}
impl Both for SetReply {
    fn encode(&self, e: Encoding) -> Vec<u8> {
        SetReply::encode(self, e)
    }
}
impl Both for SetEventMessage {
    fn encode(&self, e: Encoding) -> Vec<u8> {
        SetEventMessage::encode(self, e)
    }
}

fn case(name: &str, note: &str, m: &impl Both) -> Value {
    let json = m.encode(Encoding::Json);
    json!({"name": name, "note": note, "message": msg_value(&json),
           "json": String::from_utf8(json).unwrap(), "hex": hex(&m.encode(Encoding::Binary))})
}

fn req(name: &str, note: &str, id: u64, body: SetRequestBody) -> Value {
    case(name, note, &SetRequest { id, body })
}

fn rep(name: &str, note: &str, id: u64, body: SetReplyBody) -> Value {
    case(name, note, &SetReply { id, landlord: S, body })
}

/// A binary input that must decode to `decoded` (canonical JSON) or fail with `error_code`.
fn binary_case(name: &str, note: &str, kind: &str, bytes: &[u8], limits: Option<Limits>) -> Value {
    let l = limits.unwrap_or_default();
    let got = match kind {
        "request" => SetRequest::decode(bytes, Encoding::Binary, &l).map(|m| m.to_json()),
        "reply" => SetReply::decode(bytes, Encoding::Binary, &l).map(|m| m.to_json()),
        "event" => SetEventMessage::decode(bytes, Encoding::Binary, &l).map(|m| m.to_json()),
        k => panic!("kind {k}"),
    };
    let mut c = json!({"name": name, "note": note, "kind": kind, "hex": hex(bytes)});
    if let Some(l) = limits {
        c["limits"] = limits_value(&l);
    }
    match got {
        Ok(j) => c["decoded"] = msg_value(&j),
        Err(e) => c["error_code"] = json!(e.code() as i32),
    }
    c
}

fn lease(remaining: i64, membership: Option<(i64, i64)>) -> ClientLease {
    ClientLease {
        landlord: L,
        cookie: C,
        remaining,
        urls: vec!["http://10.0.0.1:7420".into(), "https://lh.example".into()],
        membership: membership.map(|m| m.0),
        renew: membership.map(|m| m.1),
    }
}

fn decode_case(name: &str, note: &str, kind: &str, text: &str, limits: Option<Limits>) -> Value {
    let l = limits.unwrap_or_default();
    let got = match kind {
        "request" => SetRequest::from_json(text.as_bytes(), &l).map(|m| m.to_json()),
        "reply" => SetReply::from_json(text.as_bytes(), &l).map(|m| m.to_json()),
        "event" => SetEventMessage::from_json(text.as_bytes(), &l).map(|m| m.to_json()),
        k => panic!("kind {k}"),
    };
    let mut c = json!({"name": name, "note": note, "kind": kind, "text": text});
    if let Some(l) = limits {
        c["limits"] = limits_value(&l);
    }
    match got {
        Ok(j) => c["decoded"] = msg_value(&j),
        Err(e) => c["error_code"] = json!(e.code() as i32),
    }
    c
}

pub fn vectors() -> Value {
    use SetReplyBody as P;
    use SetRequestBody as Q;
    let requests = vec![
        req("create-set", "a set leased for an hour", 1, Q::CreateSet { duration: 3_600_000 }),
        req(
            "create-set-any",
            "ANY: the service's policy decides",
            2,
            Q::CreateSet { duration: ANY },
        ),
        req(
            "add",
            "renew a lease with 25 s left for 10 minutes, a minute at a time",
            3,
            Q::Add { set: SET, lease: lease(25_000, None), membership: 600_000, renew: 60_000 },
        ),
        req(
            "add-forever-any",
            "until removed, asking ANY; a lease that never expires; an id above 2^53",
            u64::MAX,
            Q::Add { set: SET, lease: lease(FOREVER, None), membership: FOREVER, renew: ANY },
        ),
        req(
            "remove",
            "take a lease out of a set",
            4,
            Q::Remove {
                set: SET,
                landlord: L,
                cookie: C,
                urls: vec!["http://10.0.0.1:7420".into()],
            },
        ),
        req("leases", "list a set's leases", 5, Q::Leases { set: SET }),
        req(
            "listen-warning",
            "expiration warnings 30 s before the set's lease ends, with a handback",
            6,
            Q::Listen {
                set: SET,
                event: SetEventType::ExpirationWarning,
                min_warning: 30_000,
                url: "http://10.0.0.9:8080/events".into(),
                handback: vec![0, 0xff],
            },
        ),
        req(
            "listen-failure",
            "renewal failures, no handback",
            7,
            Q::Listen {
                set: SET,
                event: SetEventType::RenewalFailure,
                min_warning: 0,
                url: "https://me.example/failures".into(),
                handback: vec![],
            },
        ),
        req(
            "unlisten",
            "end the failure registration",
            8,
            Q::Unlisten { set: SET, event: SetEventType::RenewalFailure },
        ),
    ];
    let replies = vec![
        rep(
            "set-created",
            "set 1, granted an hour",
            1,
            P::SetCreated { set: 1, cookie: SET, duration: 3_600_000 },
        ),
        rep("done", "add, unlisten", 3, P::Done),
        rep(
            "removed",
            "the lease as last renewed",
            4,
            P::Removed { lease: Some(lease(41_000, None)) },
        ),
        rep("removed-none", "the set did not hold it", 4, P::Removed { lease: None }),
        rep(
            "leases",
            "one lease with its membership (FOREVER for none)",
            5,
            P::Leases { leases: vec![lease(41_000, Some((FOREVER, 60_000)))] },
        ),
        rep("leases-empty", "an empty set", 5, P::Leases { leases: vec![] }),
        rep(
            "registered",
            "event id 2, next event after 0",
            6,
            P::Registered { event_id: 2, sequence: 0 },
        ),
        rep(
            "error",
            "the set is gone",
            7,
            P::Error(WireError {
                code: ErrorCode::UnknownLease as i32,
                message: "unknown lease".into(),
            }),
        ),
    ];
    let ev = |name: &str, note: &str, sequence: u64, handback: Vec<u8>, body: SetEventBody| {
        case(
            name,
            note,
            &SetEventMessage { event_id: 2, sequence, service: S, set: 1, handback, body },
        )
    };
    let events = vec![
        ev(
            "expiration-warning",
            "the set's lease ends in 30 s",
            1,
            vec![0, 0xff],
            SetEventBody::ExpirationWarning { remaining: 30_000 },
        ),
        ev(
            "renewal-failure",
            "the landlord no longer knows the lease",
            2,
            vec![],
            SetEventBody::RenewalFailure {
                lease: lease(12_000, None),
                error: Some(WireError {
                    code: ErrorCode::UnknownLease as i32,
                    message: "unknown lease".into(),
                }),
            },
        ),
        ev(
            "renewal-failure-expired",
            "the lease ran out (no error): negative time left",
            3,
            vec![],
            SetEventBody::RenewalFailure { lease: lease(-5, None), error: None },
        ),
    ];
    let small = Limits { max_message_bytes: 64, ..Limits::default() };
    let few = Limits { max_resource_bytes: 1, ..Limits::default() };
    let decode = vec![
        decode_case(
            "request-any-order",
            "keys in another order, white space: accepted",
            "request",
            r#"{ "body": {"duration": "1000", "op": "create_set"}, "id": "1", "v": 1 }"#,
            None,
        ),
        decode_case(
            "request-unknown-key",
            "unknown keys are rejected",
            "request",
            r#"{"v":1,"id":"1","body":{"op":"create_set","duration":"1000","x":1}}"#,
            None,
        ),
        decode_case(
            "request-version",
            "another version",
            "request",
            r#"{"v":2,"id":"1","body":{"op":"create_set","duration":"1000"}}"#,
            None,
        ),
        decode_case(
            "request-unknown-op",
            "a landlord op is not a set op",
            "request",
            r#"{"v":1,"id":"1","body":{"op":"renew","cookie":"00","duration":"1"}}"#,
            None,
        ),
        decode_case(
            "request-too-large",
            "longer than max_message_bytes",
            "request",
            r#"{"v":1,"id":"1","body":{"op":"leases","set":"0f0e0d0c0b0a09080706050403020100"}}"#,
            Some(small),
        ),
        decode_case(
            "request-handback-too-large",
            "a handback longer than max_resource_bytes",
            "request",
            r#"{"v":1,"id":"1","body":{"op":"listen","set":"0f0e0d0c0b0a09080706050403020100","event":"renewal_failure","min_warning":"0","url":"http://x","handback":"0102"}}"#,
            Some(few),
        ),
        decode_case(
            "reply-bad-cookie",
            "a cookie that is not hex",
            "reply",
            r#"{"v":1,"id":"1","landlord":"0000000000000003","body":{"op":"set_created","set":"1","cookie":"zz","duration":"5"}}"#,
            None,
        ),
        decode_case(
            "event-unknown-kind",
            "an event kind this version does not know",
            "event",
            r#"{"v":1,"event_id":"2","sequence":"1","service":"0000000000000003","set":"1","handback":"","body":{"kind":"other"}}"#,
            None,
        ),
    ];
    let leases_req = SetRequest { id: 5, body: Q::Leases { set: SET } }.encode(Encoding::Binary);
    let add = SetRequest {
        id: 3,
        body: Q::Add { set: SET, lease: lease(25_000, None), membership: 600_000, renew: 60_000 },
    }
    .encode(Encoding::Binary);
    let removed =
        SetReply { id: 4, landlord: S, body: P::Removed { lease: Some(lease(41_000, None)) } }
            .encode(Encoding::Binary);
    let warning = SetEventMessage {
        event_id: 2,
        sequence: 1,
        service: S,
        set: 1,
        handback: vec![0, 0xff],
        body: SetEventBody::ExpirationWarning { remaining: 30_000 },
    }
    .encode(Encoding::Binary);
    let with = |b: &[u8], at: usize, x: u8| {
        let mut b = b.to_vec();
        b[at] = x;
        b
    };
    // where the op byte is: magic, version, kind, id (8) [, landlord (8)]
    let (req_op, rep_op) = (3 + 8, 3 + 8 + 8);
    // the first URL count of `add`: op, set (16), landlord (8), cookie (16), remaining (8)
    let urls_at = req_op + 1 + 16 + 8 + 16 + 8;
    let mut many_urls = add[..urls_at].to_vec();
    many_urls.extend_from_slice(&17u32.to_be_bytes());
    for _ in 0..17 {
        many_urls.extend_from_slice(&1u32.to_be_bytes());
        many_urls.push(b'h');
    }
    many_urls.extend_from_slice(&[0, 0]);
    many_urls.extend_from_slice(&600_000i64.to_be_bytes());
    many_urls.extend_from_slice(&60_000i64.to_be_bytes());
    let decode_binary = vec![
        binary_case("request-leases", "a well-formed request", "request", &leases_req, None),
        binary_case(
            "request-truncated",
            "the last byte missing",
            "request",
            &leases_req[..leases_req.len() - 1],
            None,
        ),
        binary_case(
            "request-trailing",
            "a byte after the message",
            "request",
            &[&leases_req[..], &[0]].concat(),
            None,
        ),
        binary_case(
            "request-bad-magic",
            "not a leasehold message",
            "request",
            &with(&leases_req, 0, 0x7b),
            None,
        ),
        binary_case(
            "request-kind-reply",
            "a reply's kind byte where a request is read",
            "request",
            &with(&leases_req, 2, 0x41),
            None,
        ),
        binary_case("request-unknown-op", "op 9", "request", &with(&leases_req, req_op, 9), None),
        binary_case(
            "request-too-many-urls",
            "17 landlord URLs, at most 16",
            "request",
            &many_urls,
            None,
        ),
        binary_case(
            "reply-bad-presence",
            "a presence byte that is neither 0 nor 1",
            "reply",
            &with(&removed, rep_op + 1, 2),
            None,
        ),
        binary_case(
            "event-handback-too-large",
            "a handback longer than max_resource_bytes",
            "event",
            &warning,
            Some(Limits { max_resource_bytes: 1, ..Limits::default() }),
        ),
        binary_case(
            "event-too-large",
            "longer than max_message_bytes",
            "event",
            &warning,
            Some(Limits { max_message_bytes: 16, ..Limits::default() }),
        ),
    ];
    json!({
        "schema": 1,
        "about": "Renewal service network messages (leasehold::service::wire): set requests and \
                  replies, events POSTed to listeners, each as JSON text and binary hex; \
                  `decode` holds JSON inputs, `decode_binary` binary ones. Generated by \
                  core/tests/vectors_gen/renewal.rs.",
        "default_limits": limits_value(&Limits::default()),
        "requests": requests,
        "replies": replies,
        "events": events,
        "decode": decode,
        "decode_binary": decode_binary,
    })
}
