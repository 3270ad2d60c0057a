//! `coord.json`: coordination messages (acquire, watch, poll, holders and their replies), the
//! `Fence` rule, and inputs that must or must not decode.

use leasehold::coord::wire::{CoordReply, CoordReplyBody, CoordRequest, CoordRequestBody};
use leasehold::coord::{EventKind, Events, Fence, Holder, LeaseEvent, Missed};
use leasehold::wire::WireError;
use leasehold::{Cookie, Encoding, ErrorCode, LandlordId, Limits, ANY, FOREVER};
use serde_json::{json, Value};

use super::{hex, limits_value, msg_value};

const L: LandlordId = LandlordId(0x0123_4567_89ab_cdef);
const C: Cookie = Cookie(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff);

fn case(name: &str, note: &str, json: Vec<u8>, bin: Vec<u8>) -> Value {
    json!({"name": name, "note": note, "message": msg_value(&json),
           "json": String::from_utf8(json).unwrap(), "hex": hex(&bin)})
}

fn req(name: &str, note: &str, id: u64, body: CoordRequestBody) -> Value {
    let r = CoordRequest { id, body };
    case(name, note, r.encode(Encoding::Json), r.encode(Encoding::Binary))
}

fn rep(name: &str, note: &str, id: u64, body: CoordReplyBody) -> Value {
    let r = CoordReply { id, landlord: L, body };
    case(name, note, r.encode(Encoding::Json), r.encode(Encoding::Binary))
}

fn enc_name(e: Encoding) -> &'static str {
    match e {
        Encoding::Json => "json",
        Encoding::Binary => "binary",
    }
}

fn decode_case(
    name: &str,
    note: &str,
    kind: &str,
    enc: Encoding,
    bytes: &[u8],
    limits: Option<Limits>,
) -> Value {
    let l = limits.unwrap_or_default();
    let got: leasehold::Result<Vec<u8>> = match kind {
        "request" => CoordRequest::decode(bytes, enc, &l).map(|m| m.encode(Encoding::Json)),
        "reply" => CoordReply::decode(bytes, enc, &l).map(|m| m.encode(Encoding::Json)),
        k => panic!("kind {k}"),
    };
    let mut c = json!({"name": name, "note": note, "kind": kind, "encoding": enc_name(enc),
                       "hex": hex(bytes)});
    if enc == Encoding::Json {
        if let Ok(t) = std::str::from_utf8(bytes) {
            c["text"] = json!(t);
        }
    }
    if let Some(l) = limits {
        c["limits"] = limits_value(&l);
    }
    match got {
        Ok(j) => c["message"] = msg_value(&j),
        Err(e) => c["error_code"] = json!(e.code() as i32),
    }
    c
}

fn holder(r: &str, token: u64, label: &str, remaining: i64) -> Holder {
    Holder { resource: r.as_bytes().to_vec(), token, holder: label.as_bytes().to_vec(), remaining }
}

fn event(sequence: u64, kind: EventKind, r: &str, token: u64, label: &str, d: i64) -> LeaseEvent {
    LeaseEvent {
        sequence,
        kind,
        resource: r.as_bytes().to_vec(),
        token,
        holder: label.as_bytes().to_vec(),
        duration: d,
    }
}

pub fn vectors() -> Value {
    use CoordReplyBody as P;
    use CoordRequestBody as Q;
    let b = |s: &str| s.as_bytes().to_vec();
    let requests = vec![
        req(
            "acquire",
            "acquire a lock for 10 s, waiting up to 5 s, with a holder label",
            1,
            Q::Acquire {
                resource: b("locks/db"),
                duration: 10_000,
                wait: 5_000,
                holder: b("node-1"),
            },
        ),
        req(
            "acquire-any-no-wait",
            "ANY duration, no wait, no label",
            2,
            Q::Acquire { resource: b("ips"), duration: ANY, wait: 0, holder: vec![] },
        ),
        req(
            "acquire-forever-binary-resource",
            "FOREVER, a resource that is not text, an id above 2^53",
            u64::MAX,
            Q::Acquire {
                resource: vec![0, 0xff, 0x80],
                duration: FOREVER,
                wait: 0,
                holder: vec![],
            },
        ),
        req(
            "watch-prefix-renewals",
            "a watch on a prefix, renewals too, with a handback",
            3,
            Q::Watch {
                resource: b("locks/"),
                prefix: true,
                renewals: true,
                duration: 30_000,
                handback: b("mine"),
            },
        ),
        req(
            "watch-exact",
            "a watch on one resource, the empty handback",
            4,
            Q::Watch {
                resource: b("leader"),
                prefix: false,
                renewals: false,
                duration: ANY,
                handback: vec![],
            },
        ),
        req(
            "watch-everything",
            "the empty prefix selects every resource",
            5,
            Q::Watch {
                resource: vec![],
                prefix: true,
                renewals: false,
                duration: 1,
                handback: vec![],
            },
        ),
        req(
            "poll",
            "events after 41, waiting up to 25 s for one, at most 100",
            6,
            Q::Poll { cookie: C, since: 41, wait: 25_000, max: 100 },
        ),
        req(
            "poll-now",
            "from the start, no wait, as many as fit (0)",
            7,
            Q::Poll { cookie: C, since: 0, wait: 0, max: 0 },
        ),
        req(
            "holders-prefix",
            "holders of every exclusive resource under a prefix",
            8,
            Q::Holders { resource: b("locks/"), prefix: true },
        ),
        req(
            "holders-exact",
            "the holder of one resource",
            9,
            Q::Holders { resource: b("leader"), prefix: false },
        ),
    ];
    let replies = vec![
        rep(
            "acquired",
            "a lock with token 7, after waiting 1.5 s",
            1,
            P::Acquired { cookie: C, duration: 10_000, token: 7, resource: b("locks/db"), waited: 1_500 },
        ),
        rep(
            "acquired-pool-member",
            "a pool's member, a token above 2^53",
            2,
            P::Acquired {
                cookie: C,
                duration: 30_000,
                token: (1 << 53) + 1,
                resource: b("10.0.0.2"),
                waited: 0,
            },
        ),
        rep(
            "watching",
            "a watch with its event id and the holders when it was made",
            3,
            P::Watching {
                cookie: C,
                duration: 30_000,
                event_id: 4,
                sequence: 0,
                current: vec![holder("locks/a", 5, "node-2", 8_000)],
            },
        ),
        rep(
            "watching-nothing-held",
            "a watch on a free resource",
            4,
            P::Watching { cookie: C, duration: FOREVER, event_id: 1, sequence: 0, current: vec![] },
        ),
        rep(
            "events",
            "every kind of event, in order",
            6,
            P::Events(Events {
                event_id: 4,
                handback: b("mine"),
                last: 45,
                missed: None,
                current: None,
                events: vec![
                    event(42, EventKind::Granted, "locks/a", 9, "node-1", 10_000),
                    event(43, EventKind::Renewed, "locks/a", 9, "node-1", 10_000),
                    event(44, EventKind::Cancelled, "locks/a", 9, "node-1", 0),
                    event(45, EventKind::Expired, "locks/b", 3, "", 0),
                ],
            }),
        ),
        rep(
            "events-none",
            "a long poll that ran out: no events",
            7,
            P::Events(Events {
                event_id: 4,
                handback: vec![],
                last: 45,
                missed: None,
                current: None,
                events: vec![],
            }),
        ),
        rep(
            "events-missed",
            "the watcher fell behind the history: what it missed and the holders now",
            8,
            P::Events(Events {
                event_id: 4,
                handback: vec![],
                last: 2_000,
                missed: Some(Missed { from: 42, to: 2_000 }),
                current: Some(vec![holder("locks/a", 120, "", 3_000), holder("locks/c", 118, "x", FOREVER)]),
                events: vec![],
            }),
        ),
        rep(
            "holders",
            "the holders under a prefix",
            9,
            P::Holders { holders: vec![holder("locks/a", 1, "a", 1), holder("locks/b", 2, "", -5)] },
        ),
        rep(
            "error-held",
            "denied: the resource is held, with how long its holder has left",
            10,
            P::Error(WireError {
                code: ErrorCode::LeaseDenied as i32,
                message: "\"locks/db\" is held by another lease: free in at most 6000 ms (unless its holder renews)"
                    .into(),
            }),
        ),
        rep(
            "error-unknown-watch",
            "the watch is gone (its lease ended)",
            11,
            P::Error(WireError { code: ErrorCode::UnknownLease as i32, message: String::new() }),
        ),
    ];

    use Encoding::{Binary, Json};
    let mut decode = Vec::new();
    let text_cases: &[(&str, &str, &str, &str)] = &[
        (
            "json-acquire-integers",
            "integers as JSON numbers are read too",
            "request",
            r#"{"v":1,"id":1,"body":{"op":"acquire","resource":"78","duration":10,"wait":0,"holder":""}}"#,
        ),
        (
            "json-watch-keys-in-another-order",
            "keys in any order",
            "request",
            r#"{"body":{"handback":"","duration":"5","renewals":false,"prefix":true,"resource":"","op":"watch"},"id":"2","v":1}"#,
        ),
        (
            "json-unknown-op",
            "must not decode: an op this version does not have",
            "request",
            r#"{"v":1,"id":"1","body":{"op":"lock","resource":"78"}}"#,
        ),
        (
            "json-unknown-field",
            "must not decode: a field this version does not have",
            "request",
            r#"{"v":1,"id":"1","body":{"op":"holders","resource":"78","prefix":false,"fast":true}}"#,
        ),
        (
            "json-missing-wait",
            "must not decode: acquire without wait",
            "request",
            r#"{"v":1,"id":"1","body":{"op":"acquire","resource":"78","duration":"1","holder":""}}"#,
        ),
        (
            "json-version-2",
            "must not decode: wire version 2",
            "request",
            r#"{"v":2,"id":"1","body":{"op":"holders","resource":"","prefix":true}}"#,
        ),
        (
            "json-odd-hex",
            "must not decode: a resource of odd hex digits",
            "request",
            r#"{"v":1,"id":"1","body":{"op":"holders","resource":"7","prefix":true}}"#,
        ),
        (
            "json-bad-event-kind",
            "must not decode: an event kind this version does not have",
            "reply",
            r#"{"v":1,"id":"1","landlord":"0123456789abcdef","body":{"op":"events","event_id":"1","handback":"","last":"1","events":[{"sequence":"1","kind":"stolen","resource":"","token":"1","holder":"","duration":"0"}]}}"#,
        ),
        (
            "json-token-negative",
            "must not decode: a negative token",
            "reply",
            r#"{"v":1,"id":"1","landlord":"0123456789abcdef","body":{"op":"acquired","cookie":"00112233445566778899aabbccddeeff","duration":"1","token":"-1","resource":"","waited":"0"}}"#,
        ),
    ];
    for (name, note, kind, text) in text_cases {
        decode.push(decode_case(name, note, kind, Json, text.as_bytes(), None));
    }
    let acquire = CoordRequest {
        id: 1,
        body: Q::Acquire { resource: b("abcd"), duration: 1, wait: 0, holder: b("ab") },
    }
    .encode(Binary);
    let with = |b: &[u8], at: usize, v: u8| {
        let mut b = b.to_vec();
        b[at] = v;
        b
    };
    let watch = CoordRequest {
        id: 1,
        body: Q::Watch {
            resource: vec![],
            prefix: false,
            renewals: false,
            duration: 1,
            handback: vec![],
        },
    }
    .encode(Binary);
    let events = CoordReply {
        id: 1,
        landlord: L,
        body: P::Events(Events {
            event_id: 1,
            handback: vec![],
            last: 1,
            missed: None,
            current: None,
            events: vec![event(1, EventKind::Granted, "", 1, "", 1)],
        }),
    }
    .encode(Binary);
    // Offsets in `events`: header 3, id 8, landlord 8, op 1, event id 8, handback 4, last 8,
    // missed tag 1, current tag 1, count 4, then the event: sequence 8, kind 1.
    let count_at = 3 + 8 + 8 + 1 + 8 + 4 + 8 + 1 + 1;
    let kind_at = count_at + 4 + 8;
    let mut many = events.clone();
    many[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    let binary_cases: Vec<(&str, &str, &str, Vec<u8>)> = vec![
        ("binary-acquire", "a well-formed acquire", "request", acquire.clone()),
        ("binary-bad-magic", "must not decode: magic 0x4d", "request", with(&acquire, 0, 0x4d)),
        ("binary-version-2", "must not decode: version 2", "request", with(&acquire, 1, 2)),
        (
            "binary-landlord-kind",
            "must not decode: a landlord request (kind 0x10)",
            "request",
            with(&acquire, 2, 0x10),
        ),
        ("binary-unknown-op", "must not decode: op 9", "request", with(&acquire, 11, 9)),
        (
            "binary-truncated",
            "must not decode: cut short",
            "request",
            acquire[..acquire.len() - 1].to_vec(),
        ),
        (
            "binary-trailing-byte",
            "must not decode: a byte after the last field",
            "request",
            [&acquire[..], &[0]].concat(),
        ),
        (
            "binary-watch-flags",
            "must not decode: watch flags 4",
            "request",
            with(&watch, 3 + 8 + 1 + 4, 4),
        ),
        (
            "binary-event-kind-0",
            "must not decode: event kind 0",
            "reply",
            with(&events, kind_at, 0),
        ),
        (
            "binary-missed-tag-2",
            "must not decode: a missed tag of 2",
            "reply",
            with(&events, count_at - 2, 2),
        ),
        ("binary-events-count-max", "must not decode: 2^32 - 1 events announced", "reply", many),
    ];
    for (name, note, kind, bytes) in &binary_cases {
        decode.push(decode_case(name, note, kind, Binary, bytes, None));
    }
    let small = Limits { max_message_bytes: 1 << 20, max_batch: 2, max_resource_bytes: 4 };
    for enc in [Json, Binary] {
        let e = enc_name(enc);
        let r = |resource: Vec<u8>, holder: Vec<u8>| {
            CoordRequest { id: 1, body: Q::Acquire { resource, duration: 1, wait: 0, holder } }
                .encode(enc)
        };
        decode.push(decode_case(
            &format!("{e}-limit-resource-at"),
            "resource of 4 bytes, max_resource_bytes 4",
            "request",
            enc,
            &r(b("abcd"), vec![]),
            Some(small),
        ));
        decode.push(decode_case(
            &format!("{e}-limit-resource-over"),
            "must not decode: resource of 5 bytes, max_resource_bytes 4",
            "request",
            enc,
            &r(b("abcde"), vec![]),
            Some(small),
        ));
        decode.push(decode_case(
            &format!("{e}-limit-holder-over"),
            "must not decode: holder label of 5 bytes, max_resource_bytes 4",
            "request",
            enc,
            &r(vec![], b("abcde")),
            Some(small),
        ));
        let three = CoordReply {
            id: 1,
            landlord: L,
            body: P::Holders { holders: vec![holder("a", 1, "", 1); 3] },
        }
        .encode(enc);
        decode.push(decode_case(
            &format!("{e}-limit-holders-over"),
            "must not decode: 3 holders, max_batch 2",
            "reply",
            enc,
            &three,
            Some(small),
        ));
    }

    // The fence rule: a token at least the highest accepted passes and becomes the highest.
    let mut fence = Vec::new();
    for (name, highest, token) in [
        ("first", 0u64, 1u64),
        ("equal", 7, 7),
        ("newer", 7, 8),
        ("older", 7, 6),
        ("zero-after-some", 3, 0),
        ("largest", 5, u64::MAX),
    ] {
        let mut f = Fence::with_highest(highest);
        let ok = f.check(token).is_ok();
        fence
            .push(json!({"name": name, "highest": highest.to_string(), "token": token.to_string(),
                          "accepted": ok, "highest_after": f.highest().to_string()}));
    }

    json!({
        "schema": 1,
        "about": "Coordination messages (JSON and binary) and the Fence rule. See README.md.",
        "default_limits": limits_value(&Limits::default()),
        "requests": requests,
        "replies": replies,
        "decode": decode,
        "fence": fence,
    })
}
