//! Checks the shared test vectors in `core/tests/vectors/` against the library, both ways,
//! reading the files the way a binding's tests do (plain JSON, hex strings, decimal strings).
//! The files are made by `tests/vectors_gen.rs`; their schema is in `tests/vectors/README.md`.

use leasehold::{
    Cookie, Encoding, ErrorCode, LandlordId, Lease, LeaseError, Limits, Reply, Request,
    SerialFormat,
};
use serde_json::Value;

fn load(name: &str) -> Value {
    let path = format!("{}/tests/vectors/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_else(|| panic!("{k} missing in {v}"))
}

fn i(v: &Value, k: &str) -> i64 {
    s(v, k).parse().unwrap()
}

fn unhex(h: &str) -> Vec<u8> {
    assert!(h.len() % 2 == 0);
    (0..h.len()).step_by(2).map(|k| u8::from_str_radix(&h[k..k + 2], 16).unwrap()).collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn format_of(name: &str) -> SerialFormat {
    match name {
        "duration" => SerialFormat::Duration,
        "absolute" => SerialFormat::Absolute,
        other => panic!("format {other}"),
    }
}

fn lease_of(f: &Value) -> Lease {
    let landlord: LandlordId = s(f, "landlord").parse().unwrap();
    let cookie: Cookie = s(f, "cookie").parse().unwrap();
    Lease::new(landlord, cookie, i(f, "expiration")).with_serial_format(format_of(s(f, "format")))
}

fn assert_fields(l: &Lease, f: &Value, name: &str) {
    assert_eq!(l.landlord().to_string(), s(f, "landlord"), "{name}");
    assert_eq!(l.cookie().to_string(), s(f, "cookie"), "{name}");
    assert_eq!(l.expiration(), i(f, "expiration"), "{name}");
    assert_eq!(l.serial_format(), format_of(s(f, "format")), "{name}");
}

#[test]
fn lease_vectors() {
    let v = load("lease.json");
    assert_eq!(v["schema"], 1);
    let encode = v["encode"].as_array().unwrap();
    let decode = v["decode"].as_array().unwrap();
    assert!(encode.len() >= 20 && decode.len() >= 40);
    for c in encode {
        let name = s(c, "name");
        let lease = lease_of(&c["lease"]);
        let (w, r) = (i(c, "write_now"), i(c, "read_now"));
        assert_eq!(lease.to_json(w), s(c, "json"), "{name}");
        assert_eq!(hex(&lease.to_bytes(w)), s(c, "hex"), "{name}");
        assert_fields(&Lease::from_json(s(c, "json"), r).unwrap(), &c["decoded"], name);
        assert_fields(&Lease::from_bytes(&unhex(s(c, "hex")), r).unwrap(), &c["decoded"], name);
    }
    for c in decode {
        let name = s(c, "name");
        let now = i(c, "read_now");
        let got = match s(c, "encoding") {
            "json" => Lease::from_json(s(c, "text"), now),
            "binary" => Lease::from_bytes(&unhex(s(c, "hex")), now),
            e => panic!("encoding {e}"),
        };
        check_outcome(got, c, name, |l, f| assert_fields(l, f, name), "decoded");
    }
}

fn check_outcome<T: std::fmt::Debug>(
    got: leasehold::Result<T>,
    c: &Value,
    name: &str,
    ok: impl Fn(&T, &Value),
    key: &str,
) {
    match (got, c.get("error_code")) {
        (Ok(x), None) => ok(&x, &c[key]),
        (Err(e), Some(code)) => assert_eq!(e.code() as i64, code.as_i64().unwrap(), "{name}: {e}"),
        (got, want) => panic!("{name}: got {got:?}, want error {want:?}"),
    }
}

fn limits_of(v: &Value) -> Limits {
    let n = |k: &str| v[k].as_u64().unwrap() as usize;
    Limits {
        max_message_bytes: n("max_message_bytes"),
        max_batch: n("max_batch"),
        max_resource_bytes: n("max_resource_bytes"),
    }
}

fn json_value(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

#[test]
fn wire_vectors() {
    let v = load("wire.json");
    assert_eq!(v["schema"], 1);
    let defaults = limits_of(&v["default_limits"]);
    assert_eq!(defaults, Limits::default());
    let requests = v["requests"].as_array().unwrap();
    let replies = v["replies"].as_array().unwrap();
    for c in requests {
        let name = s(c, "name");
        let r = Request::decode(s(c, "json").as_bytes(), Encoding::Json, &defaults).unwrap();
        assert_eq!(
            Request::decode(&unhex(s(c, "hex")), Encoding::Binary, &defaults).unwrap(),
            r,
            "{name}"
        );
        let from_message = serde_json::to_vec(&c["message"]).unwrap();
        assert_eq!(Request::decode(&from_message, Encoding::Json, &defaults).unwrap(), r, "{name}");
        assert_eq!(String::from_utf8(r.encode(Encoding::Json)).unwrap(), s(c, "json"), "{name}");
        assert_eq!(hex(&r.encode(Encoding::Binary)), s(c, "hex"), "{name}");
    }
    for c in replies {
        let name = s(c, "name");
        let r = Reply::decode(s(c, "json").as_bytes(), Encoding::Json, &defaults).unwrap();
        assert_eq!(
            Reply::decode(&unhex(s(c, "hex")), Encoding::Binary, &defaults).unwrap(),
            r,
            "{name}"
        );
        let from_message = serde_json::to_vec(&c["message"]).unwrap();
        assert_eq!(Reply::decode(&from_message, Encoding::Json, &defaults).unwrap(), r, "{name}");
        assert_eq!(String::from_utf8(r.encode(Encoding::Json)).unwrap(), s(c, "json"), "{name}");
        assert_eq!(hex(&r.encode(Encoding::Binary)), s(c, "hex"), "{name}");
    }
    // Every op of both kinds is covered.
    let ops = |cases: &[Value]| {
        let mut o: Vec<String> = cases
            .iter()
            .map(|c| c["message"]["body"]["op"].as_str().unwrap().to_string())
            .collect();
        o.sort();
        o.dedup();
        o
    };
    assert_eq!(ops(requests), ["cancel", "cancel_all", "grant", "renew", "renew_all"]);
    assert_eq!(
        ops(replies),
        ["cancelled", "cancelled_all", "error", "granted", "renewed", "renewed_all"]
    );

    for c in v["decode"].as_array().unwrap() {
        let name = s(c, "name");
        let limits = c.get("limits").map(limits_of).unwrap_or(defaults);
        let enc = match s(c, "encoding") {
            "json" => Encoding::Json,
            "binary" => Encoding::Binary,
            e => panic!("encoding {e}"),
        };
        let bytes = unhex(s(c, "hex"));
        if let Some(t) = c.get("text") {
            assert_eq!(t.as_str().unwrap().as_bytes(), &bytes[..], "{name}: text and hex agree");
        }
        let check = |m: &Value, want: &Value| assert_eq!(m, want, "{name}");
        match s(c, "kind") {
            "request" => check_outcome(
                Request::decode(&bytes, enc, &limits)
                    .map(|r| json_value(&r.encode(Encoding::Json))),
                c,
                name,
                check,
                "message",
            ),
            "reply" => check_outcome(
                Reply::decode(&bytes, enc, &limits).map(|r| json_value(&r.encode(Encoding::Json))),
                c,
                name,
                check,
                "message",
            ),
            k => panic!("kind {k}"),
        }
    }
}

#[test]
fn error_vectors() {
    let v = load("errors.json");
    let codes = v["codes"].as_array().unwrap();
    assert_eq!(codes.len(), 7);
    for c in codes {
        let n = c["code"].as_i64().unwrap() as i32;
        let code = ErrorCode::from_i32(n).unwrap();
        assert_eq!(code as i32, n);
        assert_eq!(code.name(), s(c, "name"));
        if code != ErrorCode::Ok {
            let e = LeaseError::from_code(n, "m");
            assert_eq!(e.code(), code);
            assert_eq!(e.is_definite(), c["definite"].as_bool().unwrap());
        }
    }
}

/// The store directory of `store.json`: opened as a host would (here through `MemDir`), it gives
/// exactly the leases, sequence number and next cookie listed; the damaged copies are refused.
#[test]
fn store_vectors() {
    use leasehold::policy::Bounded;
    use leasehold::store::{MemDir, Store, StoreConfig};
    type LL = leasehold::Landlord<Vec<u8>>;
    let v = load("store.json");
    let files_of = |list: &Value| -> MemDir {
        let mut d = MemDir::new();
        for f in list.as_array().unwrap() {
            d.set(s(f, "name"), unhex(s(f, "hex")));
        }
        d
    };
    let p = &v["landlord"]["policy"];
    assert_eq!(s(p, "kind"), "bounded");
    let policy = || Bounded::new(i(p, "max"), i(p, "default")).unwrap();
    let open = |d: &MemDir| {
        Store::open(StoreConfig::default(), &d.files(), None, |snap| {
            LL::from_snapshot_bytes(snap.expect("the vector has a snapshot"), policy())
        })
    };
    let o = open(&files_of(&v["files"])).unwrap();
    let e = &v["expect"];
    assert_eq!(o.recovered.torn.is_some(), e["torn"].as_bool().unwrap());
    let mut ll = o.state;
    let now = i(&v, "read_now");
    ll.resume(now);
    assert_eq!(ll.journal_seq() as i64, i(e, "journal_seq"));
    assert_eq!(ll.expired_len() as u64, e["expired_waiting"].as_u64().unwrap());
    let got: Vec<(String, i64, String)> =
        ll.iter().map(|(c, x, r)| (c.to_string(), x, hex(r))).collect();
    let want: Vec<(String, i64, String)> = e["leases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (s(l, "cookie").to_string(), i(l, "expiration"), s(l, "resource").to_string()))
        .collect();
    assert_eq!(got, want);
    let n = &e["next_grant"];
    let g = ll.grant(unhex(s(n, "resource")), i(n, "duration"), i(n, "now")).unwrap();
    assert_eq!(g.cookie.to_string(), s(n, "cookie"));
    assert_eq!(g.expiration, i(n, "expiration"));
    for d in v["damaged"].as_array().unwrap() {
        let err = open(&files_of(&d["files"]))
            .err()
            .unwrap_or_else(|| panic!("{} accepted", s(d, "name")));
        assert_eq!(err.code() as i64, d["error_code"].as_i64().unwrap(), "{}", s(d, "name"));
    }
}
