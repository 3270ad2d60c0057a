//! Generates the shared test vectors in `core/tests/vectors/` from the inputs listed here.
//!
//! `LEASEHOLD_REGEN_VECTORS=1 cargo test -p leasehold --test vectors_gen` rewrites the files;
//! without the variable this test fails if the committed files differ from what the current
//! code produces (so a format change is always a visible, reviewed diff of the data files).
//! `tests/vectors.rs` then checks every case against the library the way a binding would.

use std::path::PathBuf;

#[path = "vectors_gen/coord.rs"]
mod coord;
#[path = "vectors_gen/discovery.rs"]
mod discovery;
#[path = "vectors_gen/renewal.rs"]
mod renewal;

use leasehold::serial::LEASE_JSON_MAX;
use leasehold::wire::{Outcome, WireError};
use leasehold::{
    Cookie, ErrorCode, LandlordId, Lease, LeaseError, Limits, Reply, ReplyBody, Request,
    RequestBody, SerialFormat, ANY, FOREVER,
};
use serde::Serialize;
use serde_json::{json, Value};

const EPOCH: i64 = 1_700_000_000_000; // a wall clock: 2023-11-14
const L: LandlordId = LandlordId(0x0123_4567_89ab_cdef);
const C: Cookie = Cookie(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff);

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn dec(x: i64) -> String {
    x.to_string()
}

fn format_name(f: SerialFormat) -> &'static str {
    match f {
        SerialFormat::Duration => "duration",
        SerialFormat::Absolute => "absolute",
    }
}

#[derive(Serialize)]
struct LeaseFields {
    landlord: String,
    cookie: String,
    expiration: String,
    format: &'static str,
}

impl LeaseFields {
    fn of(l: &Lease) -> LeaseFields {
        LeaseFields {
            landlord: l.landlord().to_string(),
            cookie: l.cookie().to_string(),
            expiration: dec(l.expiration()),
            format: format_name(l.serial_format()),
        }
    }
}

#[derive(Serialize)]
struct LeaseEncode {
    name: &'static str,
    note: &'static str,
    lease: LeaseFields,
    write_now: String,
    json: String,
    hex: String,
    read_now: String,
    decoded: LeaseFields,
}

#[derive(Serialize)]
struct LeaseDecode {
    name: String,
    note: &'static str,
    encoding: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hex: Option<String>,
    read_now: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    decoded: Option<LeaseFields>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_code: Option<i32>,
}

fn lease_encode(
    name: &'static str,
    note: &'static str,
    lease: Lease,
    write_now: i64,
    read_now: i64,
) -> LeaseEncode {
    let json = lease.to_json(write_now);
    let bytes = lease.to_bytes(write_now);
    let a = Lease::from_json(&json, read_now).unwrap();
    let b = Lease::from_bytes(&bytes, read_now).unwrap();
    assert_eq!(a.expiration(), b.expiration(), "{name}: the two forms disagree");
    LeaseEncode {
        name,
        note,
        lease: LeaseFields::of(&lease),
        write_now: dec(write_now),
        json,
        hex: hex(&bytes),
        read_now: dec(read_now),
        decoded: LeaseFields::of(&a),
    }
}

fn lease_decode_json(name: &str, note: &'static str, text: &str, read_now: i64) -> LeaseDecode {
    let r = Lease::from_json(text, read_now);
    LeaseDecode {
        name: name.to_string(),
        note,
        encoding: "json",
        text: Some(text.to_string()),
        hex: None,
        read_now: dec(read_now),
        decoded: r.as_ref().ok().map(LeaseFields::of),
        error_code: r.err().map(|e| e.code() as i32),
    }
}

fn lease_decode_bin(name: &str, note: &'static str, bytes: &[u8], read_now: i64) -> LeaseDecode {
    let r = Lease::from_bytes(bytes, read_now);
    LeaseDecode {
        name: name.to_string(),
        note,
        encoding: "binary",
        text: None,
        hex: Some(hex(bytes)),
        read_now: dec(read_now),
        decoded: r.as_ref().ok().map(LeaseFields::of),
        error_code: r.err().map(|e| e.code() as i32),
    }
}

fn lease_vectors() -> Value {
    let d = |e| Lease::new(L, C, e);
    let a = |e| Lease::new(L, C, e).with_serial_format(SerialFormat::Absolute);
    let encode = vec![
        lease_encode(
            "duration",
            "6 s left at the writer; the reader adds its own now",
            d(10_000),
            4_000,
            1_000_000,
        ),
        lease_encode(
            "duration-clocks-differ",
            "writer on epoch time, reader on a monotonic clock: both agree 30 s are left",
            d(EPOCH + 30_000),
            EPOCH,
            5_000,
        ),
        lease_encode(
            "duration-reader-behind",
            "reader's clock is an hour behind the writer's",
            d(EPOCH + 60_000),
            EPOCH,
            EPOCH - 3_600_000,
        ),
        lease_encode(
            "duration-forever",
            "FOREVER is stored as FOREVER and read back exactly on any clock",
            d(FOREVER),
            EPOCH,
            -5,
        ),
        lease_encode(
            "duration-forever-reader-far-ahead",
            "FOREVER stays FOREVER even when reader now is near the top of i64",
            d(FOREVER),
            0,
            FOREVER - 1,
        ),
        lease_encode(
            "duration-zero",
            "expires exactly at the writer's now: 0 left",
            d(4_000),
            4_000,
            9_000,
        ),
        lease_encode(
            "duration-expired",
            "expired 4 s before it was written: negative time left, still expired at the reader",
            d(1_000),
            5_000,
            10_000,
        ),
        lease_encode(
            "duration-minus-one",
            "-1 left is a lease expired 1 ms ago, not ANY",
            d(4_999),
            5_000,
            100,
        ),
        lease_encode(
            "duration-negative-writer-clock",
            "clocks may be negative (virtual time)",
            d(-1_000),
            -3_000,
            -10,
        ),
        lease_encode(
            "duration-near-overflow",
            "FOREVER - 1 left: the reader saturates at FOREVER - 1, never FOREVER",
            d(FOREVER - 1),
            0,
            10,
        ),
        lease_encode(
            "duration-huge-left-reader-ahead",
            "reading a huge finite time left saturates below FOREVER",
            d(FOREVER - 2),
            -1_000,
            1_000_000,
        ),
        lease_encode(
            "duration-remaining-saturates-low",
            "time left below i64::MIN saturates at i64::MIN",
            d(i64::MIN + 5),
            100,
            -100,
        ),
        lease_encode(
            "duration-remaining-saturates-high",
            "time left above FOREVER - 1 saturates at FOREVER - 1",
            d(FOREVER - 1),
            -10,
            0,
        ),
        lease_encode(
            "absolute",
            "the expiration itself, read back unchanged",
            a(EPOCH + 30_000),
            EPOCH,
            0,
        ),
        lease_encode("absolute-forever", "FOREVER in ABSOLUTE", a(FOREVER), EPOCH, 77),
        lease_encode("absolute-zero", "expiration 0", a(0), 5, 5),
        lease_encode("absolute-negative", "an expiration before the epoch", a(-1), 0, 0),
        lease_encode("absolute-min", "i64::MIN", a(i64::MIN), FOREVER, i64::MIN),
        lease_encode("absolute-near-overflow", "FOREVER - 1", a(FOREVER - 1), 0, 0),
        lease_encode(
            "ids-zero",
            "all-zero landlord and cookie",
            Lease::new(LandlordId(0), Cookie(0), 1),
            0,
            0,
        ),
        lease_encode(
            "ids-max",
            "all-ones landlord and cookie",
            Lease::new(LandlordId(u64::MAX), Cookie(u128::MAX), 1),
            0,
            0,
        ),
    ];

    let good = d(10_000).to_json(4_000);
    let good_abs = a(10_000).to_json(4_000);
    let mut decode = vec![
        lease_decode_json("json-uppercase-hex", "readers accept upper-case hex", &good.to_uppercase().replace("\"V\"", "\"v\"").replace("DURATION", "duration").replace("FORMAT", "format").replace("LANDLORD", "landlord").replace("COOKIE", "cookie"), 0),
        lease_decode_json("json-integer-time", "readers accept the time as a JSON integer", &good.replace("\"6000\"", "6000"), 0),
        lease_decode_json("json-integer-forever", "a JSON integer FOREVER is exact for a 64-bit reader", &good_abs.replace("\"10000\"", "9223372036854775807"), 0),
        lease_decode_json("json-any-order-whitespace", "keys in any order, white space", "{ \"cookie\": \"00112233445566778899aabbccddeeff\", \"duration\": \"6000\",\n  \"landlord\": \"0123456789abcdef\", \"format\": \"duration\", \"v\": 1 }", 100),
    ];
    let bad_json: Vec<(&str, String)> = vec![
        ("json-empty", String::new()),
        ("json-not-json", "lease".into()),
        ("json-array", "[]".into()),
        ("json-truncated", good[..good.len() - 1].into()),
        ("json-trailing", format!("{good} x")),
        ("json-version-2", good.replace("\"v\":1", "\"v\":2")),
        ("json-version-0", good.replace("\"v\":1", "\"v\":0")),
        ("json-version-string", good.replace("\"v\":1", "\"v\":\"1\"")),
        ("json-no-version", good.replace("\"v\":1,", "")),
        ("json-format-unknown", good.replace("\"duration\",", "\"relative\",")),
        ("json-format-uppercase", good.replace("\"duration\",", "\"DURATION\",")),
        ("json-format-number", good.replace("\"duration\",", "1,")),
        ("json-unknown-field", good.replace("\"v\":1,", "\"v\":1,\"x\":0,")),
        ("json-duplicate-field", good.replace("\"v\":1,", "\"v\":1,\"v\":1,")),
        ("json-both-times", good.replace('}', ",\"expiration\":\"5\"}")),
        ("json-duration-lease-with-expiration", good.replace("\"duration\":", "\"expiration\":")),
        ("json-absolute-lease-with-duration", good.replace("\"duration\",", "\"absolute\",")),
        ("json-no-time", good.replace(",\"duration\":\"6000\"", "")),
        ("json-time-null", good.replace("\"6000\"", "null")),
        ("json-time-float", good.replace("\"6000\"", "6000.5")),
        ("json-time-exponent", good.replace("\"6000\"", "6e3")),
        ("json-time-overflow", good.replace("6000", "9223372036854775808")),
        ("json-time-overflow-integer", good.replace("\"6000\"", "9223372036854775808")),
        ("json-time-underflow", good.replace("6000", "-9223372036854775809")),
        ("json-time-plus-sign", good.replace("6000", "+6000")),
        ("json-time-space", good.replace("6000", " 6000")),
        ("json-time-empty", good.replace("6000", "")),
        ("json-time-hex", good.replace("6000", "0x10")),
        ("json-cookie-short", good.replace("00112233445566778899aabbccddeeff", "0011")),
        (
            "json-cookie-long",
            good.replace("00112233445566778899aabbccddeeff", "00112233445566778899aabbccddeeff00"),
        ),
        (
            "json-cookie-bad-hex",
            good.replace("00112233445566778899aabbccddeeff", "0011223344556677889zaabbccddeeff"),
        ),
        ("json-cookie-number", good.replace("\"00112233445566778899aabbccddeeff\"", "5")),
        ("json-landlord-bad-hex", good.replace("0123456789abcdef", "0123456789abcdeg")),
        ("json-landlord-non-ascii", good.replace("0123456789abcdef", "0123456789abcd\u{e9}")),
        ("json-deep-nesting", "[".repeat(200)),
        ("json-oversized", format!("{}{good}", " ".repeat(LEASE_JSON_MAX))),
    ];
    for (name, text) in &bad_json {
        let c = lease_decode_json(name, "must not decode", text, 0);
        assert_eq!(c.error_code, Some(ErrorCode::Decode as i32), "{name}");
        decode.push(c);
    }
    let bin = d(10_000).to_bytes(4_000);
    decode.push(lease_decode_bin("binary-valid", "the plain form decodes", &bin, 0));
    let with = |i: usize, v: u8| {
        let mut b = bin.clone();
        b[i] = v;
        b
    };
    let bad_bin: Vec<(&str, Vec<u8>)> = vec![
        ("binary-empty", vec![]),
        ("binary-bad-magic", with(0, 0x4d)),
        ("binary-version-0", with(1, 0)),
        ("binary-version-2", with(1, 2)),
        ("binary-wrong-kind", with(2, 0x10)),
        ("binary-format-0", with(3, 0)),
        ("binary-format-3", with(3, 3)),
        ("binary-truncated-header", bin[..3].to_vec()),
        ("binary-truncated-time", bin[..35].to_vec()),
        ("binary-trailing-byte", [bin.clone(), vec![0]].concat()),
    ];
    for (name, bytes) in &bad_bin {
        let c = lease_decode_bin(name, "must not decode", bytes, 0);
        assert_eq!(c.error_code, Some(ErrorCode::Decode as i32), "{name}");
        decode.push(c);
    }
    json!({
        "schema": 1,
        "about": "Lease serial forms (JSON and binary, DURATION and ABSOLUTE). See README.md.",
        "encode": encode,
        "decode": decode,
    })
}

// ---------- wire ----------

fn msg_value(json: &[u8]) -> Value {
    serde_json::from_slice(json).unwrap()
}

fn request_case(name: &str, note: &str, r: Request) -> Value {
    let j = r.encode(leasehold::Encoding::Json);
    let b = r.encode(leasehold::Encoding::Binary);
    json!({"name": name, "note": note, "message": msg_value(&j),
           "json": String::from_utf8(j).unwrap(), "hex": hex(&b)})
}

fn reply_case(name: &str, note: &str, r: Reply) -> Value {
    let j = r.encode(leasehold::Encoding::Json);
    let b = r.encode(leasehold::Encoding::Binary);
    json!({"name": name, "note": note, "message": msg_value(&j),
           "json": String::from_utf8(j).unwrap(), "hex": hex(&b)})
}

fn limits_value(l: &Limits) -> Value {
    json!({"max_message_bytes": l.max_message_bytes, "max_batch": l.max_batch, "max_resource_bytes": l.max_resource_bytes})
}

fn wire_decode(
    name: &str,
    note: &str,
    kind: &str,
    enc: leasehold::Encoding,
    bytes: &[u8],
    limits: Option<Limits>,
) -> Value {
    let lim = limits.unwrap_or_default();
    let (err, message): (Option<LeaseError>, Option<Value>) = if kind == "request" {
        match Request::decode(bytes, enc, &lim) {
            Ok(r) => (None, Some(msg_value(&r.encode(leasehold::Encoding::Json)))),
            Err(e) => (Some(e), None),
        }
    } else {
        match Reply::decode(bytes, enc, &lim) {
            Ok(r) => (None, Some(msg_value(&r.encode(leasehold::Encoding::Json)))),
            Err(e) => (Some(e), None),
        }
    };
    let mut v = json!({"name": name, "note": note, "kind": kind,
        "encoding": match enc { leasehold::Encoding::Json => "json", leasehold::Encoding::Binary => "binary" },
        "hex": hex(bytes)});
    let o = v.as_object_mut().unwrap();
    if enc == leasehold::Encoding::Json {
        if let Ok(t) = std::str::from_utf8(bytes) {
            o.insert("text".into(), t.into());
        }
    }
    if let Some(l) = limits {
        o.insert("limits".into(), limits_value(&l));
    }
    assert_eq!(note.starts_with("must not decode"), err.is_some(), "{name}: {err:?}");
    match (err, message) {
        (Some(e), _) => o.insert("error_code".into(), (e.code() as i32).into()),
        (None, Some(m)) => o.insert("message".into(), m),
        _ => unreachable!(),
    };
    v
}

fn wire_vectors() -> Value {
    use leasehold::Encoding::{Binary, Json};
    let we = |code: ErrorCode, m: &str| WireError { code: code as i32, message: m.into() };
    let rq = |id, body| Request { id, body };
    let requests = vec![
        request_case(
            "grant",
            "a lease on resource bytes \"printer-7\" for 30 s",
            rq(1, RequestBody::Grant { resource: b"printer-7".to_vec(), duration: 30_000 }),
        ),
        request_case(
            "grant-any",
            "ANY lets the landlord choose; empty resource",
            rq(2, RequestBody::Grant { resource: vec![], duration: ANY }),
        ),
        request_case(
            "grant-forever",
            "FOREVER, binary resource",
            rq(3, RequestBody::Grant { resource: vec![0x00, 0xff, 0x10], duration: FOREVER }),
        ),
        request_case(
            "grant-zero",
            "zero is a valid request",
            rq(4, RequestBody::Grant { resource: vec![1], duration: 0 }),
        ),
        request_case(
            "grant-negative",
            "the wire carries any i64; the landlord answers invalid argument (code 4)",
            rq(5, RequestBody::Grant { resource: vec![1], duration: -5 }),
        ),
        request_case(
            "renew",
            "renew for 60 s",
            rq(6, RequestBody::Renew { cookie: C, duration: 60_000 }),
        ),
        request_case(
            "renew-any",
            "renew for ANY",
            rq(7, RequestBody::Renew { cookie: C, duration: ANY }),
        ),
        request_case(
            "renew-near-overflow",
            "FOREVER - 1",
            rq(8, RequestBody::Renew { cookie: Cookie(u128::MAX), duration: FOREVER - 1 }),
        ),
        request_case("cancel", "cancel one lease", rq(9, RequestBody::Cancel { cookie: C })),
        request_case(
            "renew-all",
            "a batch with ANY and FOREVER",
            rq(
                10,
                RequestBody::RenewAll {
                    items: vec![(C, 30_000), (Cookie(2), ANY), (Cookie(3), FOREVER)],
                },
            ),
        ),
        request_case(
            "renew-all-empty",
            "an empty batch",
            rq(11, RequestBody::RenewAll { items: vec![] }),
        ),
        request_case(
            "cancel-all",
            "a batch of two",
            rq(12, RequestBody::CancelAll { cookies: vec![C, Cookie(0)] }),
        ),
        request_case(
            "cancel-all-empty",
            "an empty batch",
            rq(13, RequestBody::CancelAll { cookies: vec![] }),
        ),
        request_case(
            "id-max",
            "ids are u64; above 2^53 in JSON they are exact as decimal strings",
            rq(u64::MAX, RequestBody::Cancel { cookie: C }),
        ),
        request_case("id-zero", "id 0", rq(0, RequestBody::Cancel { cookie: C })),
    ];
    let rp = |id, body| Reply { id, landlord: L, body };
    let replies = vec![
        reply_case(
            "granted",
            "granted 30 s",
            rp(1, ReplyBody::Granted { cookie: C, duration: 30_000 }),
        ),
        reply_case(
            "granted-forever",
            "granted FOREVER",
            rp(3, ReplyBody::Granted { cookie: C, duration: FOREVER }),
        ),
        reply_case("renewed", "renewed for 60 s", rp(6, ReplyBody::Renewed { duration: 60_000 })),
        reply_case(
            "renewed-zero",
            "renewed for 0 (the holder asked 0)",
            rp(6, ReplyBody::Renewed { duration: 0 }),
        ),
        reply_case("cancelled", "cancelled", rp(9, ReplyBody::Cancelled)),
        reply_case(
            "renewed-all",
            "per-lease results in request order: granted, unknown, denied",
            rp(
                10,
                ReplyBody::RenewedAll {
                    results: vec![
                        Outcome::Ok(30_000),
                        Outcome::Err(we(ErrorCode::UnknownLease, "")),
                        Outcome::Err(we(ErrorCode::LeaseDenied, "capacity reached")),
                    ],
                },
            ),
        ),
        reply_case(
            "renewed-all-empty",
            "empty batch",
            rp(11, ReplyBody::RenewedAll { results: vec![] }),
        ),
        reply_case(
            "cancelled-all",
            "one cancelled, one unknown",
            rp(
                12,
                ReplyBody::CancelledAll {
                    results: vec![Outcome::Ok(()), Outcome::Err(we(ErrorCode::UnknownLease, ""))],
                },
            ),
        ),
        reply_case(
            "cancelled-all-empty",
            "empty batch",
            rp(13, ReplyBody::CancelledAll { results: vec![] }),
        ),
        reply_case(
            "error-unknown-lease",
            "code 1, empty message",
            rp(9, ReplyBody::Error(we(ErrorCode::UnknownLease, ""))),
        ),
        reply_case(
            "error-denied",
            "code 2",
            rp(
                1,
                ReplyBody::Error(we(
                    ErrorCode::LeaseDenied,
                    "capacity reached: 10 of 10 leases live",
                )),
            ),
        ),
        reply_case(
            "error-invalid-argument",
            "code 4",
            rp(
                5,
                ReplyBody::Error(we(
                    ErrorCode::InvalidArgument,
                    "requested duration -5 ms is negative and not ANY (-1)",
                )),
            ),
        ),
        reply_case(
            "error-decode",
            "code 5: an undecodable request gets id 0",
            rp(0, ReplyBody::Error(we(ErrorCode::Decode, "truncated message"))),
        ),
        reply_case(
            "error-indefinite",
            "code 6",
            rp(2, ReplyBody::Error(we(ErrorCode::Indefinite, "time-out"))),
        ),
        reply_case(
            "error-unknown-code",
            "a code from a newer peer travels unchanged",
            rp(2, ReplyBody::Error(WireError { code: 42, message: "x".into() })),
        ),
        reply_case(
            "error-unicode-message",
            "messages are UTF-8, escaped in JSON",
            rp(
                2,
                ReplyBody::Error(WireError {
                    code: 99,
                    message: "\"q\" \\ \n \u{e9} \u{1f680}".into(),
                }),
            ),
        ),
    ];

    // Decode-only cases.
    let mut decode = vec![];
    let renew = Request { id: 7, body: RequestBody::Renew { cookie: C, duration: 60_000 } };
    let rj = renew.encode(Json);
    let rb = renew.encode(Binary);
    let rjs = String::from_utf8(rj.clone()).unwrap();
    let ok_j: Vec<(&str, &str, String)> = vec![
        ("json-integers", "readers accept JSON integers for id and durations", rjs.replace("\"7\"", "7").replace("\"60000\"", "60000")),
        ("json-uppercase-hex", "readers accept upper-case hex", rjs.replace("aabbccddeeff", "AABBCCDDEEFF")),
        ("json-any-order", "keys in any order, white space", "{ \"body\": {\"duration\": \"60000\", \"cookie\": \"00112233445566778899aabbccddeeff\", \"op\": \"renew\"}, \"id\": \"7\", \"v\": 1 }".into()),
    ];
    for (n, note, t) in ok_j {
        decode.push(wire_decode(n, note, "request", Json, t.as_bytes(), None));
    }
    let bad_j: Vec<(&str, String)> = vec![
        ("json-empty", String::new()),
        ("json-null", "null".into()),
        ("json-truncated", rjs[..rjs.len() - 1].into()),
        ("json-two-messages", format!("{rjs}{rjs}")),
        ("json-version-2", rjs.replace("\"v\":1", "\"v\":2")),
        ("json-no-version", rjs.replace("\"v\":1,", "")),
        ("json-negative-id", rjs.replace("\"7\"", "\"-7\"")),
        ("json-id-overflow", rjs.replace("\"7\"", "\"18446744073709551616\"")),
        ("json-no-id", rjs.replace("\"id\":\"7\",", "")),
        ("json-unknown-op", rjs.replace("\"renew\"", "\"renew_some\"")),
        ("json-reply-op-in-request", rjs.replace("\"renew\"", "\"renewed\"")),
        ("json-no-op", rjs.replace("\"op\":\"renew\",", "")),
        ("json-unknown-field", rjs.replace("\"v\":1,", "\"v\":1,\"extra\":true,")),
        ("json-unknown-body-field", rjs.replace("\"op\":\"renew\",", "\"op\":\"renew\",\"extra\":true,")),
        ("json-duration-float", rjs.replace("\"60000\"", "60000.0")),
        ("json-duration-overflow", rjs.replace("\"60000\"", "\"9223372036854775808\"")),
        ("json-bad-cookie", rjs.replace("00112233445566778899aabbccddeeff", "xyz")),
        ("json-resource-odd-hex", r#"{"v":1,"id":"1","body":{"op":"grant","resource":"abc","duration":"5"}}"#.into()),
        ("json-resource-bad-hex", r#"{"v":1,"id":"1","body":{"op":"grant","resource":"zz","duration":"5"}}"#.into()),
        ("json-renew-all-item-no-duration", r#"{"v":1,"id":"1","body":{"op":"renew_all","items":[{"cookie":"00112233445566778899aabbccddeeff"}]}}"#.into()),
        ("json-cancel-all-null", r#"{"v":1,"id":"1","body":{"op":"cancel_all","cookies":null}}"#.into()),
        ("json-deep-nesting", "[".repeat(1000)),
    ];
    for (n, t) in &bad_j {
        decode.push(wire_decode(n, "must not decode", "request", Json, t.as_bytes(), None));
    }
    decode.push(wire_decode(
        "json-not-utf8",
        "must not decode",
        "request",
        Json,
        &[b'{', 0xff, b'}'],
        None,
    ));
    let bad_reply_j: Vec<(&str, &str)> = vec![
        (
            "json-outcome-both",
            r#"{"v":1,"id":"1","landlord":"0000000000000001","body":{"op":"renewed_all","results":[{"duration":"1","error":{"code":1,"message":""}}]}}"#,
        ),
        (
            "json-outcome-neither",
            r#"{"v":1,"id":"1","landlord":"0000000000000001","body":{"op":"renewed_all","results":[{}]}}"#,
        ),
        (
            "json-cancel-outcome-duration",
            r#"{"v":1,"id":"1","landlord":"0000000000000001","body":{"op":"cancelled_all","results":[{"duration":"1"}]}}"#,
        ),
        (
            "json-error-no-message",
            r#"{"v":1,"id":"1","landlord":"0000000000000001","body":{"op":"error","code":1}}"#,
        ),
        (
            "json-error-code-string",
            r#"{"v":1,"id":"1","landlord":"0000000000000001","body":{"op":"error","code":"1","message":""}}"#,
        ),
        ("json-reply-no-landlord", r#"{"v":1,"id":"1","body":{"op":"cancelled"}}"#),
        (
            "json-request-op-in-reply",
            r#"{"v":1,"id":"1","landlord":"0000000000000001","body":{"op":"cancel","cookie":"00112233445566778899aabbccddeeff"}}"#,
        ),
    ];
    for (n, t) in &bad_reply_j {
        decode.push(wire_decode(n, "must not decode", "reply", Json, t.as_bytes(), None));
    }

    let with = |b: &[u8], i: usize, v: u8| {
        let mut b = b.to_vec();
        b[i] = v;
        b
    };
    let head = |kind: u8, op: u8| {
        let mut b = vec![0x4c, 1, kind];
        b.extend_from_slice(&1u64.to_be_bytes());
        if kind == 0x11 {
            b.extend_from_slice(&1u64.to_be_bytes());
        }
        b.push(op);
        b
    };
    let cat = |a: Vec<u8>, b: &[u8]| [a, b.to_vec()].concat();
    let bad_b: Vec<(&str, &str, Vec<u8>)> = vec![
        ("binary-empty", "request", vec![]),
        ("binary-bad-magic", "request", with(&rb, 0, 0)),
        ("binary-version-2", "request", with(&rb, 1, 2)),
        ("binary-reply-kind", "request", with(&rb, 2, 0x11)),
        ("binary-lease-kind", "request", with(&rb, 2, 0x01)),
        ("binary-op-0", "request", with(&rb, 11, 0)),
        ("binary-op-9", "request", with(&rb, 11, 9)),
        ("binary-truncated", "request", rb[..rb.len() - 1].to_vec()),
        ("binary-trailing", "request", cat(rb.clone(), &[0])),
        ("binary-count-2^32-1", "request", cat(head(0x10, 5), &u32::MAX.to_be_bytes())),
        ("binary-renew-all-count-2^32-1", "request", cat(head(0x10, 4), &u32::MAX.to_be_bytes())),
        ("binary-count-beyond-bytes", "request", cat(head(0x10, 5), &10_000u32.to_be_bytes())),
        (
            "binary-resource-4GiB",
            "request",
            cat(cat(head(0x10, 1), &5i64.to_be_bytes()), &u32::MAX.to_be_bytes()),
        ),
        ("binary-reply-count-2^32-1", "reply", cat(head(0x11, 4), &u32::MAX.to_be_bytes())),
        ("binary-reply-cancel-count-2^32-1", "reply", cat(head(0x11, 5), &u32::MAX.to_be_bytes())),
        (
            "binary-reply-error-4GiB",
            "reply",
            cat(cat(head(0x11, 6), &1i32.to_be_bytes()), &u32::MAX.to_be_bytes()),
        ),
        ("binary-reply-bad-outcome-tag", "reply", cat(head(0x11, 5), &[0, 0, 0, 1, 2])),
        (
            "binary-reply-message-not-utf8",
            "reply",
            cat(head(0x11, 6), &[0, 0, 0, 1, 0, 0, 0, 1, 0xff]),
        ),
        ("binary-reply-op-7", "reply", head(0x11, 7)),
        ("binary-request-as-reply", "reply", rb.clone()),
    ];
    for (n, kind, b) in &bad_b {
        decode.push(wire_decode(n, "must not decode", kind, Binary, b, None));
    }
    let small = Limits { max_message_bytes: 1 << 10, max_batch: 2, max_resource_bytes: 4 };
    let over_batch = Request { id: 1, body: RequestBody::CancelAll { cookies: vec![C; 3] } };
    let at_batch = Request { id: 1, body: RequestBody::CancelAll { cookies: vec![C; 2] } };
    let over_res =
        Request { id: 1, body: RequestBody::Grant { resource: vec![7; 5], duration: 1 } };
    let at_res = Request { id: 1, body: RequestBody::Grant { resource: vec![7; 4], duration: 1 } };
    let over_bytes = Request { id: 1, body: RequestBody::CancelAll { cookies: vec![C; 2] } };
    let reply_batch = Reply {
        id: 1,
        landlord: L,
        body: ReplyBody::CancelledAll { results: vec![Outcome::Ok(()); 3] },
    };
    for enc in [Json, Binary] {
        let e = if enc == Json { "json" } else { "binary" };
        let tiny = Limits { max_message_bytes: 40, ..small };
        for (n, note, kind, bytes, lim) in [
            (
                "limit-batch-over",
                "must not decode: 3 leases, max_batch 2",
                "request",
                over_batch.encode(enc),
                small,
            ),
            (
                "limit-batch-at",
                "2 leases, max_batch 2: decodes",
                "request",
                at_batch.encode(enc),
                small,
            ),
            (
                "limit-resource-over",
                "must not decode: 5 resource bytes, max 4",
                "request",
                over_res.encode(enc),
                small,
            ),
            (
                "limit-resource-at",
                "4 resource bytes, max 4: decodes",
                "request",
                at_res.encode(enc),
                small,
            ),
            (
                "limit-message-bytes",
                "must not decode: longer than max_message_bytes 40",
                "request",
                over_bytes.encode(enc),
                tiny,
            ),
            (
                "limit-reply-batch-over",
                "must not decode: 3 results, max_batch 2",
                "reply",
                reply_batch.encode(enc),
                small,
            ),
        ] {
            decode.push(wire_decode(&format!("{e}-{n}"), note, kind, enc, &bytes, Some(lim)));
        }
    }
    let d = Limits::default();
    json!({
        "schema": 1,
        "about": "Wire protocol messages (JSON and binary). See README.md.",
        "default_limits": limits_value(&d),
        "requests": requests,
        "replies": replies,
        "decode": decode,
    })
}

fn error_vectors() -> Value {
    let rows: Vec<Value> = [
        (ErrorCode::Ok, "ok", "no error"),
        (ErrorCode::UnknownLease, "unknown_lease", "the lease is not (or no longer) known to its grantor"),
        (ErrorCode::LeaseDenied, "lease_denied", "the grantor refused; the lease is unchanged"),
        (ErrorCode::LeaseMap, "lease_map", "some leases of a batch failed, each with its own error"),
        (ErrorCode::InvalidArgument, "invalid_argument", "a bad duration, setting or lease"),
        (ErrorCode::Decode, "decode", "bytes or text that do not decode"),
        (ErrorCode::Indefinite, "indefinite", "a transport failure or time-out; retrying may help"),
    ]
    .iter()
    .map(|(c, name, meaning)| {
        json!({"code": *c as i32, "name": name, "definite": *c != ErrorCode::Indefinite, "meaning": meaning})
    })
    .collect();
    json!({"schema": 1, "about": "Stable error codes; numbers never change, new ones are appended.", "codes": rows})
}

/// A store directory written by the core (through `MemDir`, byte for byte what every host
/// writes), with a torn tail, and what opening it must give; plus damaged copies to refuse.
fn store_vectors() -> Value {
    use leasehold::policy::Bounded;
    use leasehold::store::{MemDir, Store, StoreConfig};
    use leasehold::{Landlord, LandlordConfig};
    type LL = Landlord<Vec<u8>>;
    let seed = [0x5a; 32];
    let policy = || Bounded::new(60_000, 1_000).unwrap();
    let sc = StoreConfig { segment_bytes: 150, min_compact_bytes: u64::MAX };
    let mut dir = MemDir::new();
    let open = |dir: &MemDir| {
        Store::open(sc, &dir.files(), None, |snap| match snap {
            Some(b) => LL::from_snapshot_bytes(b, policy()),
            None => {
                let mut ll = LL::new(LandlordConfig::new(L, seed), policy());
                ll.enable_journal();
                Ok(ll)
            }
        })
    };
    let o = open(&dir).unwrap();
    dir.apply_all(&o.ops);
    let (mut ll, mut store) = (o.state, o.store);
    let commit = |ll: &mut LL, store: &mut Store, dir: &mut MemDir| {
        let c = store.commit(ll).unwrap();
        dir.apply_all(&c.ops);
    };
    let t = EPOCH;
    let a = ll.grant(b"printer".to_vec(), 30_000, t).unwrap().cookie;
    let b = ll.grant(b"scanner".to_vec(), 5_000, t + 10).unwrap().cookie;
    let c = ll.grant(b"plotter".to_vec(), ANY, t + 20).unwrap().cookie;
    commit(&mut ll, &mut store, &mut dir);
    ll.renew(a, 60_000, t + 800).unwrap();
    ll.cancel(c, t + 900).unwrap();
    commit(&mut ll, &mut store, &mut dir);
    // A compaction: the snapshot now holds the above; the log starts again.
    dir.apply_all(&store.compact(&mut ll));
    let d = ll.grant(vec![0, 1, 2, 255], 20_000, t + 2_000).unwrap().cookie;
    ll.handle_timeout(t + 6_000); // b (5 s from t + 10) expires
    let gone = ll.poll_expired().unwrap();
    assert_eq!(gone.cookie, b);
    for i in 0..6u8 {
        ll.grant(vec![b'x', i], 10_000 + i as i64, t + 6_100 + i as i64).unwrap();
        commit(&mut ll, &mut store, &mut dir);
    }
    // The last commit is torn: its frame cut short, as a crash in the middle of a write leaves it.
    ll.grant(b"torn".to_vec(), 10_000, t + 7_000).unwrap();
    let last = store.commit(&mut ll).unwrap();
    dir.apply(&last.ops[0]);
    dir.crash(|_, n| n.saturating_sub(3));
    let files: Vec<Value> =
        dir.files().iter().map(|(n, b)| json!({"name": n, "hex": hex(b)})).collect();
    // What a reader must find, resuming at `read_now` on its own clock (time down not counted).
    let read_now = 5_000i64;
    let o = open(&dir).unwrap();
    let mut back = o.state;
    back.resume(read_now);
    let leases: Vec<Value> = back
        .iter()
        .map(|(c, e, r)| json!({"cookie": c.to_string(), "expiration": dec(e), "resource": hex(r)}))
        .collect();
    assert_eq!(back.get(d, read_now).unwrap().1, &vec![0, 1, 2, 255]);
    let seq = back.journal_seq();
    let next = back.grant(b"next".to_vec(), 1_000, read_now).unwrap();
    let torn_at = o.recovered.torn.as_ref().map(|(_, len, _)| *len);
    let expect = json!({
        "leases": leases,
        "expired_waiting": back.expired_len(),
        "journal_seq": dec(seq as i64),
        "torn": torn_at.is_some(),
        "next_grant": {"resource": hex(b"next"), "duration": dec(1_000), "now": dec(read_now),
                       "cookie": next.cookie.to_string(), "expiration": dec(next.expiration)},
    });
    // Damaged copies.
    let seg = dir.files().into_iter().find(|(n, _)| n.starts_with("log-")).unwrap();
    let mut flipped = dir.clone();
    let mut bytes = seg.1.clone();
    bytes[40] ^= 0x01;
    flipped.set(&seg.0, bytes);
    let mut no_snapshot = dir.clone();
    no_snapshot.remove(leasehold::store::SNAPSHOT_FILE);
    let mut damaged = vec![];
    for (name, note, d) in [
        ("flipped_byte", "a byte flipped in the middle of the log: refused", flipped),
        (
            "missing_snapshot",
            "the snapshot is missing and the log no longer starts at record 1",
            no_snapshot,
        ),
    ] {
        assert!(open(&d).is_err(), "{name} must be refused");
        let files: Vec<Value> =
            d.files().iter().map(|(n, b)| json!({"name": n, "hex": hex(b)})).collect();
        damaged.push(json!({"name": name, "note": note, "files": files, "error_code": 5}));
    }
    json!({
        "schema": 1,
        "about": "A landlord's store directory written by the core, with a torn tail; open it with \
                  the binding's file store, resume at read_now, and expect exactly this.",
        "landlord": {"id": L.to_string(), "seed": hex(&seed),
                     "policy": {"kind": "bounded", "max": dec(60_000), "default": dec(1_000)}},
        "store": {"segment_bytes": sc.segment_bytes},
        "files": files,
        "read_now": dec(read_now),
        "expect": expect,
        "damaged": damaged,
    })
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors")
}

fn render(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap();
    s.push('\n');
    s
}

#[test]
fn vectors_are_up_to_date() {
    let files = [
        ("lease.json", lease_vectors()),
        ("wire.json", wire_vectors()),
        ("errors.json", error_vectors()),
        ("store.json", store_vectors()),
        ("discovery.json", discovery::vectors()),
        ("coord.json", coord::vectors()),
        ("renewal.json", renewal::vectors()),
    ];
    let regen = std::env::var_os("LEASEHOLD_REGEN_VECTORS").is_some();
    let mut stale = vec![];
    for (name, v) in files {
        let path = dir().join(name);
        let text = render(&v);
        if regen {
            std::fs::create_dir_all(dir()).unwrap();
            std::fs::write(&path, &text).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:?} differ from what the code produces; if the change is intended, run \
         LEASEHOLD_REGEN_VECTORS=1 cargo test -p leasehold --test vectors_gen and review the diff"
    );
}
