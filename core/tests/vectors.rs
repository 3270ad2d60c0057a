//! Checks the shared test vectors in `core/tests/vectors/` against the library, both ways,
//! reading the files the way a binding's tests do (plain JSON, hex strings, decimal strings).
//! The files are made by `tests/vectors_gen.rs`; their schema is in `tests/vectors/README.md`.

use leasehold::{Cookie, ErrorCode, LandlordId, Lease, LeaseError, Reply, Request, SerialFormat};
use serde_json::Value;

mod common;
use common::vectors::*;

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
        check_with(got, c, name, |l, f| assert_fields(l, f, name), "decoded");
    }
}

fn check_with<T: std::fmt::Debug>(
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

message!(Request, Reply);

#[test]
fn wire_vectors() {
    let (v, defaults) = open("wire.json");
    let req_ops = round_trips::<Request>(&v["requests"], &defaults);
    assert_eq!(req_ops, ops(&["cancel", "cancel_all", "grant", "renew", "renew_all"]));
    let rep_ops = round_trips::<Reply>(&v["replies"], &defaults);
    assert_eq!(
        rep_ops,
        ops(&["cancelled", "cancelled_all", "error", "granted", "renewed", "renewed_all"])
    );
    decode_cases(&v, defaults, "message", |kind, bytes, enc, limits, _| match kind {
        "request" => Request::canonical(bytes, enc, limits),
        "reply" => Reply::canonical(bytes, enc, limits),
        k => panic!("kind {k}"),
    });
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
