//! `discovery.json`: the lookup discovery service's messages (requests, replies, events, event
//! replies), announcement datagrams, and inputs that must or must not decode.

use leasehold::discovery::wire::{
    DiscoveryReply, DiscoveryReplyBody, DiscoveryRequest, DiscoveryRequestBody, EventReply,
    EventReplyBody, ANNOUNCEMENT_MAX_BYTES,
};
use leasehold::discovery::{
    Announcement, DiscoveryChange, Groups, Locator, Registrar, RegistrarId, RemoteDiscoveryEvent,
};
use leasehold::event::EventSource;
use leasehold::wire::WireError;
use leasehold::{Cookie, Encoding, ErrorCode, LandlordId, LeaseError, Limits, ANY, FOREVER};
use serde_json::{json, Value};

use super::{hex, limits_value, msg_value};

const L: LandlordId = LandlordId(0x0123_4567_89ab_cdef);
const C: Cookie = Cookie(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff);
const G1: RegistrarId = RegistrarId(0x1111_2222_3333_4444_5555_6666_7777_8888);
const G2: RegistrarId = RegistrarId(0xfedc_ba98_7654_3210_0000_0000_0000_0001);

fn loc(s: &str) -> Locator {
    s.parse().unwrap()
}

fn enc_name(e: Encoding) -> &'static str {
    match e {
        Encoding::Json => "json",
        Encoding::Binary => "binary",
    }
}

fn case(name: &str, note: &str, json: Vec<u8>, bin: Vec<u8>) -> Value {
    json!({"name": name, "note": note, "message": msg_value(&json),
           "json": String::from_utf8(json).unwrap(), "hex": hex(&bin)})
}

fn req(name: &str, note: &str, id: u64, body: DiscoveryRequestBody) -> Value {
    let r = DiscoveryRequest { id, body };
    case(name, note, r.encode(Encoding::Json), r.encode(Encoding::Binary))
}

fn rep(name: &str, note: &str, id: u64, body: DiscoveryReplyBody) -> Value {
    let r = DiscoveryReply { id, landlord: L, body };
    case(name, note, r.encode(Encoding::Json), r.encode(Encoding::Binary))
}

fn ev(name: &str, note: &str, e: RemoteDiscoveryEvent) -> Value {
    case(name, note, e.encode(Encoding::Json), e.encode(Encoding::Binary))
}

fn erep(name: &str, note: &str, body: EventReplyBody) -> Value {
    let r = EventReply { event_id: 3, sequence: 12, body };
    case(name, note, r.encode(Encoding::Json), r.encode(Encoding::Binary))
}

fn announcement_fields(a: &Announcement) -> Value {
    json!({"registrar": a.registrar.to_string(), "sequence": a.sequence.to_string(),
           "ttl": a.ttl.to_string(), "locator": a.locator.to_string(),
           "groups": a.groups.iter().collect::<Vec<_>>()})
}

fn ann(name: &str, note: &str, a: Announcement) -> Value {
    let bytes = a.encode().unwrap();
    assert_eq!(Announcement::decode(&bytes).unwrap(), a, "{name}");
    json!({"name": name, "note": note, "announcement": announcement_fields(&a), "hex": hex(&bytes)})
}

fn registrar(id: RegistrarId, groups: &[&str], locators: &[&str]) -> Registrar {
    Registrar {
        id,
        groups: groups.iter().map(|s| s.to_string()).collect(),
        locators: locators.iter().map(|s| loc(s)).collect(),
    }
}

fn event(
    sequence: u64,
    discarded: bool,
    handback: &[u8],
    registrars: Vec<Registrar>,
) -> RemoteDiscoveryEvent {
    RemoteDiscoveryEvent {
        event_id: 3,
        source: EventSource { service: L, object: 7 },
        sequence,
        handback: handback.to_vec(),
        kind: DiscoveryChange { discarded, registrars },
    }
}

/// A decode case: the input, the limits if not the defaults, and what must come out.
fn decode_case(
    name: &str,
    note: &str,
    kind: &str,
    enc: Encoding,
    bytes: &[u8],
    limits: Option<Limits>,
) -> Value {
    let lim = limits.unwrap_or_default();
    let j = |b: Vec<u8>| msg_value(&b);
    let got: Result<Value, LeaseError> = match kind {
        "request" => {
            DiscoveryRequest::decode(bytes, enc, &lim).map(|m| j(m.encode(Encoding::Json)))
        }
        "reply" => DiscoveryReply::decode(bytes, enc, &lim).map(|m| j(m.encode(Encoding::Json))),
        "event" => {
            RemoteDiscoveryEvent::decode(bytes, enc, &lim).map(|m| j(m.encode(Encoding::Json)))
        }
        "event_reply" => EventReply::decode(bytes, enc, &lim).map(|m| j(m.encode(Encoding::Json))),
        "announcement" => Announcement::decode(bytes).map(|a| announcement_fields(&a)),
        k => panic!("kind {k}"),
    };
    assert_eq!(note.starts_with("must not decode"), got.is_err(), "{name}: {got:?}");
    let mut v = json!({"name": name, "note": note, "kind": kind, "encoding": enc_name(enc), "hex": hex(bytes)});
    let o = v.as_object_mut().unwrap();
    if enc == Encoding::Json {
        if let Ok(t) = std::str::from_utf8(bytes) {
            o.insert("text".into(), t.into());
        }
    }
    if let Some(l) = limits {
        o.insert("limits".into(), limits_value(&l));
    }
    let key = if kind == "announcement" { "announcement" } else { "message" };
    match got {
        Ok(m) => o.insert(key.into(), m),
        Err(e) => o.insert("error_code".into(), (e.code() as i32).into()),
    };
    v
}

pub fn vectors() -> Value {
    use DiscoveryReplyBody as Rp;
    use DiscoveryRequestBody as Rq;
    use Encoding::{Binary, Json};
    let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let requests = vec![
        req(
            "register",
            "groups, a locator and an IPv6 locator, a handback, 60 s",
            1,
            Rq::Register {
                groups: Groups::of(["printers", "lab"]),
                locators: vec![loc("lookup.example:4160"), loc("[::1]:4161")],
                handback: b"mine".to_vec(),
                duration: 60_000,
            },
        ),
        req(
            "register-all-groups",
            "groups null: all groups (ALL_GROUPS); no locators, no handback, ANY",
            2,
            Rq::Register { groups: Groups::All, locators: vec![], handback: vec![], duration: ANY },
        ),
        req(
            "register-no-groups",
            "groups []: no group discovery (NO_GROUPS); FOREVER; the public group is \"\"",
            3,
            Rq::Register {
                groups: Groups::none(),
                locators: vec![loc("10.0.0.5:4160")],
                handback: vec![0, 255],
                duration: FOREVER,
            },
        ),
        req(
            "register-negative",
            "the wire carries any i64; the service answers invalid argument (code 4)",
            4,
            Rq::Register {
                groups: Groups::of([""]),
                locators: vec![],
                handback: vec![],
                duration: 0,
            },
        ),
        req("get-groups", "the managed set of groups", 5, Rq::GetGroups { cookie: C }),
        req(
            "add-groups",
            "names may be empty (the public group) or any UTF-8 up to 255 bytes",
            6,
            Rq::AddGroups { cookie: C, groups: names(&["", "gr\u{f6}\u{df}e", "b"]) },
        ),
        req(
            "set-groups-all",
            "null: all groups",
            7,
            Rq::SetGroups { cookie: C, groups: Groups::All },
        ),
        req(
            "set-groups",
            "a set, written sorted",
            8,
            Rq::SetGroups { cookie: C, groups: Groups::of(["z", "a"]) },
        ),
        req(
            "remove-groups",
            "as given (duplicates are harmless)",
            9,
            Rq::RemoveGroups { cookie: C, groups: names(&["a", "a"]) },
        ),
        req("get-locators", "the managed set of locators", 10, Rq::GetLocators { cookie: C }),
        req(
            "add-locators",
            "host names are lower case",
            11,
            Rq::AddLocators { cookie: C, locators: vec![loc("Lookup.Example:4160")] },
        ),
        req(
            "set-locators-empty",
            "stops locator discovery",
            12,
            Rq::SetLocators { cookie: C, locators: vec![] },
        ),
        req(
            "remove-locators",
            "two locators",
            13,
            Rq::RemoveLocators { cookie: C, locators: vec![loc("a:1"), loc("b:65535")] },
        ),
        req("get-registrars", "the registrars discovered", 14, Rq::GetRegistrars { cookie: C }),
        req("discard", "an id above 2^53", u64::MAX, Rq::Discard { cookie: C, registrar: G2 }),
    ];
    let we = |code: ErrorCode, m: &str| WireError { code: code as i32, message: m.into() };
    let replies = vec![
        rep(
            "registered",
            "the client's lease is Lease::from_grant(landlord, cookie, sent_at, duration)",
            1,
            Rp::Registered {
                registration: 7,
                cookie: C,
                duration: 60_000,
                event_id: 3,
                sequence: 0,
            },
        ),
        rep(
            "registered-forever",
            "FOREVER, big numbers",
            2,
            Rp::Registered {
                registration: u64::MAX,
                cookie: Cookie(u128::MAX),
                duration: FOREVER,
                event_id: u64::MAX,
                sequence: 1 << 60,
            },
        ),
        rep("groups-all", "null: all groups", 5, Rp::Groups { groups: Groups::All }),
        rep("groups-none", "[]: no groups", 5, Rp::Groups { groups: Groups::none() }),
        rep("groups", "names, sorted", 5, Rp::Groups { groups: Groups::of(["b", "", "a"]) }),
        rep(
            "locators",
            "in order",
            10,
            Rp::Locators { locators: vec![loc("[fe80::1%eth0]:4160"), loc("h:1")] },
        ),
        rep(
            "registrars",
            "two registrars, one known by no group and no locator yet",
            14,
            Rp::Registrars {
                registrars: vec![
                    registrar(G1, &["lab", "printers"], &["10.0.0.5:4160", "lookup.example:4160"]),
                    registrar(G2, &[], &[]),
                ],
            },
        ),
        rep("registrars-none", "nothing discovered", 14, Rp::Registrars { registrars: vec![] }),
        rep("done", "a change made (or nothing to change)", 6, Rp::Done),
        rep(
            "error-no-such-registration",
            "an expired, cancelled or unknown registration: unknown lease (code 1), empty message",
            6,
            Rp::Error(we(ErrorCode::UnknownLease, "")),
        ),
        rep(
            "error-invalid-argument",
            "code 4, a UTF-8 message",
            7,
            Rp::Error(we(
                ErrorCode::InvalidArgument,
                "the registration discovers all groups: no set to add to \u{2014} \u{1f680}",
            )),
        ),
    ];
    let events = vec![
        ev(
            "discovered",
            "two registrars in one event, in id order",
            event(
                1,
                false,
                b"mine",
                vec![
                    registrar(G1, &["printers"], &["10.0.0.5:4160"]),
                    registrar(G2, &[""], &["[::1]:4160"]),
                ],
            ),
        ),
        ev(
            "discarded",
            "a discarded event, empty handback, a sequence number above 2^53",
            event((1 << 53) + 1, true, b"", vec![registrar(G1, &[], &["10.0.0.5:4160"])]),
        ),
    ];
    let event_replies = vec![
        erep("received", "delivered", EventReplyBody::Received),
        erep("unknown-event", "the service cancels the registration", EventReplyBody::UnknownEvent),
        erep(
            "error-indefinite",
            "code 6: the service sends the event again later",
            EventReplyBody::Error(we(ErrorCode::Indefinite, "busy")),
        ),
        erep(
            "error-definite",
            "any other code: a bad object, the service cancels the registration",
            EventReplyBody::Error(we(ErrorCode::InvalidArgument, "bad listener")),
        ),
    ];
    let a = |groups: &[&str], locator: &str, sequence: u64, ttl: i64| Announcement {
        registrar: G1,
        groups: groups.iter().map(|s| s.to_string()).collect(),
        locator: loc(locator),
        sequence,
        ttl,
    };
    let announcements = vec![
        ann("announcement", "two groups", a(&["printers", "lab"], "10.0.0.5:4160", 1, 30_000)),
        ann("announcement-no-groups", "a member of no group", a(&[], "lookup.example:4160", 0, 1)),
        ann(
            "announcement-public-ipv6",
            "the public group \"\", a UTF-8 group, an IPv6 host, epoch-millisecond sequence",
            a(&["", "gr\u{f6}\u{df}e"], "[::1]:4160", 1_700_000_000_000_001, 90_000),
        ),
        ann(
            "announcement-max-ttl",
            "the largest ttl, 2^32 - 1 ms",
            a(&["x"], "h:65535", u64::MAX, u32::MAX as i64),
        ),
    ];

    // ---- decode-only cases ----
    let mut decode = vec![];
    let reg = DiscoveryRequest {
        id: 7,
        body: Rq::Register {
            groups: Groups::of(["a"]),
            locators: vec![loc("h:1")],
            handback: vec![0xab],
            duration: 60_000,
        },
    };
    let rj = String::from_utf8(reg.encode(Json)).unwrap();
    let rb = reg.encode(Binary);
    let ok_j: Vec<(&str, &str, String)> = vec![
        ("json-integers", "readers accept JSON integers for id and durations", rj.replace("\"7\"", "7").replace("\"60000\"", "60000")),
        ("json-uppercase", "upper-case hex and host: the host reads back in lower case", rj.replace("\"ab\"", "\"AB\"").replace("h:1", "H:1")),
        ("json-duplicate-groups", "duplicates collapse", rj.replace("[\"a\"]", "[\"a\",\"a\"]")),
        ("json-any-order", "keys in any order, white space", " {\"body\": {\"duration\": \"60000\", \"handback\": \"ab\", \"locators\": [\"h:1\"], \"groups\": [\"a\"], \"op\": \"register\"}, \"id\": \"7\", \"v\": 1} ".into()),
    ];
    for (n, note, t) in ok_j {
        decode.push(decode_case(n, note, "request", Json, t.as_bytes(), None));
    }
    let long = "x".repeat(256);
    let bad_j: Vec<(&str, String)> = vec![
        ("json-groups-missing", rj.replace("\"groups\":[\"a\"],", "")),
        ("json-null-group-name", rj.replace("[\"a\"]", "[\"a\",null]")),
        ("json-group-name-256-bytes", rj.replace("[\"a\"]", &format!("[\"{long}\"]"))),
        ("json-groups-string", rj.replace("[\"a\"]", "\"a\"")),
        ("json-locator-no-port", rj.replace("\"h:1\"", "\"h\"")),
        ("json-locator-port-0", rj.replace("\"h:1\"", "\"h:0\"")),
        ("json-locator-bad-host", rj.replace("\"h:1\"", "\"h/x:1\"")),
        ("json-locator-null", rj.replace("\"h:1\"", "null")),
        ("json-handback-odd-hex", rj.replace("\"ab\"", "\"abc\"")),
        ("json-version-2", rj.replace("\"v\":1", "\"v\":2")),
        ("json-unknown-op", rj.replace("\"register\"", "\"join\"")),
        ("json-reply-op-in-request", rj.replace("\"register\"", "\"registered\"")),
        ("json-unknown-field", rj.replace("\"op\":\"register\",", "\"op\":\"register\",\"listener\":1,")),
        ("json-lease-op", r#"{"v":1,"id":"1","body":{"op":"renew","cookie":"00112233445566778899aabbccddeeff","duration":"5"}}"#.into()),
        ("json-discard-bad-registrar", r#"{"v":1,"id":"1","body":{"op":"discard","cookie":"00112233445566778899aabbccddeeff","registrar":"12"}}"#.into()),
        ("json-truncated", rj[..rj.len() - 1].into()),
        ("json-empty", String::new()),
    ];
    for (n, t) in &bad_j {
        decode.push(decode_case(n, "must not decode", "request", Json, t.as_bytes(), None));
    }
    let bad_reply_j: Vec<(&str, &str)> = vec![
        (
            "json-registered-no-cookie",
            r#"{"v":1,"id":"1","landlord":"0123456789abcdef","body":{"op":"registered","registration":"1","duration":"1","event_id":"1","sequence":"0"}}"#,
        ),
        (
            "json-groups-reply-missing",
            r#"{"v":1,"id":"1","landlord":"0123456789abcdef","body":{"op":"groups"}}"#,
        ),
        (
            "json-registrar-unknown-field",
            r#"{"v":1,"id":"1","landlord":"0123456789abcdef","body":{"op":"registrars","registrars":[{"id":"11112222333344445555666677778888","groups":[],"locators":[],"proxy":1}]}}"#,
        ),
    ];
    for (n, t) in &bad_reply_j {
        decode.push(decode_case(n, "must not decode", "reply", Json, t.as_bytes(), None));
    }
    let evj =
        String::from_utf8(event(1, false, b"", vec![registrar(G1, &["a"], &["h:1"])]).encode(Json))
            .unwrap();
    decode.push(decode_case(
        "json-event-integers",
        "readers accept JSON integers for event id, object and sequence",
        "event",
        Json,
        evj.replace("\"event_id\":\"3\"", "\"event_id\":3")
            .replace("\"sequence\":\"1\"", "\"sequence\":1")
            .replace("\"object\":\"7\"", "\"object\":7")
            .as_bytes(),
        None,
    ));
    let bad_ev_j: Vec<(&str, String)> = vec![
        (
            "json-event-no-registrars",
            evj[..evj.find("\"registrars\":").unwrap()].to_string() + "\"registrars\":[]}",
        ),
        (
            "json-event-discarded-string",
            evj.replace("\"discarded\":false", "\"discarded\":\"false\""),
        ),
        (
            "json-event-no-source",
            evj.replace("\"source\":{\"service\":\"0123456789abcdef\",\"object\":\"7\"},", ""),
        ),
    ];
    for (n, t) in &bad_ev_j {
        decode.push(decode_case(n, "must not decode", "event", Json, t.as_bytes(), None));
    }
    decode.push(decode_case(
        "json-event-reply-unknown-op",
        "must not decode",
        "event_reply",
        Json,
        br#"{"v":1,"event_id":"3","sequence":"12","body":{"op":"ok"}}"#,
        None,
    ));

    // Binary: hostile and broken inputs built from a valid register request.
    let with = |b: &[u8], i: usize, v: u8| {
        let mut b = b.to_vec();
        b[i] = v;
        b
    };
    let head = |kind: u8, op: u8| {
        let mut b = vec![0x4c, 1, kind];
        b.extend_from_slice(&1u64.to_be_bytes());
        if kind == 0x21 {
            b.extend_from_slice(&1u64.to_be_bytes());
        }
        b.push(op);
        b
    };
    let cat = |a: Vec<u8>, b: &[u8]| [a, b.to_vec()].concat();
    let cookie = C.0.to_be_bytes();
    let all_ones = u32::MAX.to_be_bytes();
    // Request op 1 starts with groups: tag 1, count, names.
    let bad_b: Vec<(&str, &str, Vec<u8>)> = vec![
        ("binary-empty", "request", vec![]),
        ("binary-bad-magic", "request", with(&rb, 0, 0)),
        ("binary-version-2", "request", with(&rb, 1, 2)),
        ("binary-lease-request-kind", "request", with(&rb, 2, 0x10)),
        ("binary-reply-kind", "request", with(&rb, 2, 0x21)),
        ("binary-unknown-op", "request", with(&rb, 11, 12)),
        ("binary-truncated", "request", rb[..rb.len() - 1].to_vec()),
        ("binary-trailing-byte", "request", cat(rb.clone(), &[0])),
        ("binary-groups-tag-2", "request", with(&rb, 12, 2)),
        (
            "binary-names-count-2^32-1",
            "request",
            cat(head(0x20, 1), &[&[1][..], &all_ones].concat()),
        ),
        (
            "binary-name-256-bytes",
            "request",
            cat(
                head(0x20, 3),
                &[&cookie[..], &1u32.to_be_bytes(), &256u32.to_be_bytes(), &[b'x'; 256]].concat(),
            ),
        ),
        (
            "binary-name-not-utf8",
            "request",
            cat(
                head(0x20, 3),
                &[&cookie[..], &1u32.to_be_bytes(), &2u32.to_be_bytes(), &[0xc3, 0x28]].concat(),
            ),
        ),
        (
            "binary-locators-count-2^32-1",
            "request",
            cat(head(0x20, 7), &[&cookie[..], &all_ones].concat()),
        ),
        (
            "binary-locator-port-0",
            "request",
            cat(
                head(0x20, 7),
                &[&cookie[..], &1u32.to_be_bytes(), &1u32.to_be_bytes(), b"h", &[0, 0]].concat(),
            ),
        ),
        (
            "binary-locator-empty-host",
            "request",
            cat(
                head(0x20, 7),
                &[&cookie[..], &1u32.to_be_bytes(), &0u32.to_be_bytes(), &[0, 1, 0]].concat(),
            ),
        ),
        (
            "binary-handback-4gib",
            "request",
            cat(head(0x20, 1), &[&[0][..], &0u32.to_be_bytes(), &all_ones].concat()),
        ),
        ("binary-registrars-count-2^32-1", "reply", cat(head(0x21, 4), &all_ones)),
        ("binary-reply-unknown-op", "reply", head(0x21, 7)),
        (
            "binary-event-no-registrars",
            "event",
            [&[0x4c, 1, 0x22][..], &[0; 32], &0u32.to_be_bytes(), &[0], &0u32.to_be_bytes()]
                .concat(),
        ),
        (
            "binary-event-discarded-2",
            "event",
            [&[0x4c, 1, 0x22][..], &[0; 32], &0u32.to_be_bytes(), &[2], &0u32.to_be_bytes()]
                .concat(),
        ),
        (
            "binary-event-reply-unknown-op",
            "event_reply",
            [&[0x4c, 1, 0x23][..], &[0; 16], &[4]].concat(),
        ),
    ];
    for (n, kind, b) in &bad_b {
        decode.push(decode_case(n, "must not decode", kind, Binary, b, None));
    }
    // Limits: a small max_batch, a small handback limit, a small message limit.
    let small = Limits { max_message_bytes: 1 << 20, max_batch: 2, max_resource_bytes: 4 };
    let three = DiscoveryRequest {
        id: 1,
        body: Rq::AddGroups { cookie: C, groups: names(&["a", "b", "c"]) },
    };
    let two =
        DiscoveryRequest { id: 1, body: Rq::AddGroups { cookie: C, groups: names(&["a", "b"]) } };
    // A registration whose handback is `len` bytes: one over the limit of 4, and at it.
    let with_handback = |len: usize| DiscoveryRequest {
        id: 1,
        body: Rq::Register {
            groups: Groups::All,
            locators: vec![],
            handback: vec![1; len],
            duration: 1,
        },
    };
    let big_handback = with_handback(5);
    let ok_handback = with_handback(4);
    let three_registrars = DiscoveryReply {
        id: 1,
        landlord: L,
        body: Rp::Registrars {
            registrars: vec![
                registrar(G1, &[], &[]),
                registrar(G2, &[], &[]),
                registrar(RegistrarId(5), &[], &[]),
            ],
        },
    };
    for enc in [Json, Binary] {
        let e = enc_name(enc);
        decode.push(decode_case(
            &format!("{e}-limit-names-over"),
            "must not decode: 3 names, max_batch 2",
            "request",
            enc,
            &three.encode(enc),
            Some(small),
        ));
        decode.push(decode_case(
            &format!("{e}-limit-names-at"),
            "2 names, max_batch 2",
            "request",
            enc,
            &two.encode(enc),
            Some(small),
        ));
        decode.push(decode_case(
            &format!("{e}-limit-handback-over"),
            "must not decode: handback 5 bytes, max_resource_bytes 4",
            "request",
            enc,
            &big_handback.encode(enc),
            Some(small),
        ));
        decode.push(decode_case(
            &format!("{e}-limit-handback-at"),
            "handback 4 bytes, max_resource_bytes 4",
            "request",
            enc,
            &ok_handback.encode(enc),
            Some(small),
        ));
        decode.push(decode_case(
            &format!("{e}-limit-registrars-over"),
            "must not decode: 3 registrars, max_batch 2",
            "reply",
            enc,
            &three_registrars.encode(enc),
            Some(small),
        ));
        let bytes = two.encode(enc);
        let tight = Limits { max_message_bytes: bytes.len() - 1, ..Limits::default() };
        decode.push(decode_case(
            &format!("{e}-limit-message-over"),
            "must not decode: one byte over max_message_bytes",
            "request",
            enc,
            &bytes,
            Some(tight),
        ));
    }

    // Announcements.
    let ab = a(&["a"], "h:1", 5, 1000).encode().unwrap();
    decode.push(decode_case(
        "announcement-duplicate-groups",
        "a group given twice reads once",
        "announcement",
        Binary,
        &[
            &[0x4c, 1, 0x24][..],
            &G1.0.to_be_bytes(),
            &5u64.to_be_bytes(),
            &1000u32.to_be_bytes(),
            &[1, b'h', 0, 1],
            &2u16.to_be_bytes(),
            &[1, b'a', 1, b'a'],
        ]
        .concat(),
        None,
    ));
    decode.push(decode_case(
        "announcement-upper-case-host",
        "the host reads back in lower case",
        "announcement",
        Binary,
        &[
            &[0x4c, 1, 0x24][..],
            &G1.0.to_be_bytes(),
            &5u64.to_be_bytes(),
            &1000u32.to_be_bytes(),
            &[1, b'H', 0, 1],
            &0u16.to_be_bytes(),
        ]
        .concat(),
        None,
    ));
    let base = |ttl: u32, host: &[u8], port: u16, groups: &[u8]| {
        [
            &[0x4c, 1, 0x24][..],
            &G1.0.to_be_bytes(),
            &5u64.to_be_bytes(),
            &ttl.to_be_bytes(),
            &[host.len() as u8],
            host,
            &port.to_be_bytes(),
            groups,
        ]
        .concat()
    };
    let mut huge = base(1000, b"h", 1, &[]);
    let n = (ANNOUNCEMENT_MAX_BYTES - huge.len() + 1 - 2) / 2 + 1;
    huge.extend_from_slice(&(n as u16).to_be_bytes());
    for i in 0..n {
        huge.extend_from_slice(&[1, (i % 200) as u8 + 32]);
    }
    assert!(huge.len() > ANNOUNCEMENT_MAX_BYTES);
    let bad_a: Vec<(&str, Vec<u8>)> = vec![
        ("announcement-empty", vec![]),
        ("announcement-bad-magic", with(&ab, 0, 0x4d)),
        ("announcement-version-2", with(&ab, 1, 2)),
        ("announcement-event-kind", with(&ab, 2, 0x22)),
        ("announcement-truncated-id", ab[..10].to_vec()),
        ("announcement-truncated-group", ab[..ab.len() - 1].to_vec()),
        ("announcement-trailing-byte", cat(ab.clone(), &[0])),
        ("announcement-ttl-0", base(0, b"h", 1, &[0, 0])),
        ("announcement-port-0", base(1, b"h", 0, &[0, 0])),
        ("announcement-empty-host", base(1, b"", 1, &[0, 0])),
        ("announcement-bad-host", base(1, b"a b", 1, &[0, 0])),
        ("announcement-groups-count-65535", base(1, b"h", 1, &[0xff, 0xff, 1, b'a'])),
        ("announcement-group-not-utf8", base(1, b"h", 1, &[0, 1, 1, 0xff])),
        ("announcement-over-1200-bytes", huge),
    ];
    for (n, b) in &bad_a {
        decode.push(decode_case(n, "must not decode", "announcement", Binary, b, None));
    }

    json!({
        "schema": 1,
        "about": "Lookup discovery service messages (JSON and binary) and announcement datagrams. See README.md.",
        "default_limits": limits_value(&Limits::default()),
        "announcement_max_bytes": ANNOUNCEMENT_MAX_BYTES,
        "requests": requests,
        "replies": replies,
        "events": events,
        "event_replies": event_replies,
        "announcements": announcements,
        "decode": decode,
    })
}
