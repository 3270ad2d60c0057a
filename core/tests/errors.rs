//! The error family: stable codes, and what survives the wire.

use leasehold::wire::{Encoding, Limits, Outcome, WireError};
use leasehold::{Cookie, ErrorCode, LandlordId, LeaseError, LeaseFailure, Reply, ReplyBody};

/// The numbers are an external contract (C status codes, JS and Python `code`): never change them.
#[test]
fn codes_never_change() {
    let table = [
        (ErrorCode::Ok, 0),
        (ErrorCode::UnknownLease, 1),
        (ErrorCode::LeaseDenied, 2),
        (ErrorCode::LeaseMap, 3),
        (ErrorCode::InvalidArgument, 4),
        (ErrorCode::Decode, 5),
        (ErrorCode::Indefinite, 6),
    ];
    for (code, n) in table {
        assert_eq!(code as i32, n);
        assert_eq!(ErrorCode::from_i32(n), Some(code));
    }
    let names = [
        "ok",
        "unknown_lease",
        "lease_denied",
        "lease_map",
        "invalid_argument",
        "decode",
        "indefinite",
    ];
    for ((code, _), name) in table.iter().zip(names) {
        assert_eq!(code.name(), name);
    }
    for n in [-1, 7, 100, i32::MIN, i32::MAX] {
        assert_eq!(ErrorCode::from_i32(n), None);
    }
}

fn every_error() -> Vec<LeaseError> {
    vec![
        LeaseError::UnknownLease,
        LeaseError::LeaseDenied("capacity reached: 10 of 10 leases live".into()),
        LeaseError::LeaseMap(vec![LeaseFailure {
            cookie: Cookie(9),
            error: LeaseError::UnknownLease,
        }]),
        LeaseError::InvalidArgument("requested duration -5 ms is negative and not ANY (-1)".into()),
        LeaseError::Decode("truncated message".into()),
        LeaseError::Indefinite("connection reset".into()),
    ]
}

#[test]
fn each_variant_has_its_code() {
    let want = [1, 2, 3, 4, 5, 6];
    for (e, n) in every_error().iter().zip(want) {
        assert_eq!(e.code() as i32, n, "{e}");
        assert_eq!(e.is_definite(), n != 6, "{e}");
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn messages() {
    assert_eq!(LeaseError::UnknownLease.to_string(), "unknown lease");
    assert_eq!(LeaseError::LeaseDenied("full".into()).to_string(), "lease denied: full");
    assert_eq!(LeaseError::InvalidArgument("x".into()).to_string(), "invalid argument: x");
    assert_eq!(LeaseError::Decode("x".into()).to_string(), "decode error: x");
    assert_eq!(LeaseError::Indefinite("x".into()).to_string(), "indefinite failure: x");
    let map = LeaseError::LeaseMap(vec![
        LeaseFailure { cookie: Cookie(1), error: LeaseError::UnknownLease },
        LeaseFailure { cookie: Cookie(2), error: LeaseError::LeaseDenied("no".into()) },
    ]);
    assert_eq!(map.to_string(), "2 lease(s) of the batch failed");
}

/// Every single error but LeaseMap survives `WireError` and back with its code and message.
/// LeaseMap keeps its code; its per-lease failures travel as the per-lease outcomes of a
/// batch reply instead (see `batch_failures_travel_per_lease`).
#[test]
fn from_code_round_trips() {
    for e in every_error() {
        let w = WireError::from(&e);
        assert_eq!(w.code, e.code() as i32);
        assert_eq!(w.message, e.detail());
        assert_eq!(w.error_code(), Some(e.code()));
        let back = w.to_error();
        assert_eq!(back.code(), e.code());
        if e.code() != ErrorCode::LeaseMap {
            assert_eq!(back, e);
        } else {
            assert_eq!(back, LeaseError::LeaseMap(vec![]));
        }
    }
}

#[test]
fn unknown_codes_do_not_crash_an_older_peer() {
    for code in [0, 7, 99, -3] {
        let e = LeaseError::from_code(code, "from the future");
        assert_eq!(e.code(), ErrorCode::Decode);
        assert!(e.to_string().contains(&code.to_string()), "{e}");
        assert!(e.to_string().contains("from the future"), "{e}");
    }
}

/// A wire error keeps its exact code and message in both encodings, even a code this version
/// does not know, and messages with any Unicode.
#[test]
fn wire_round_trip_keeps_code_and_message() {
    let mut errors: Vec<WireError> = every_error().iter().map(WireError::from).collect();
    errors.push(WireError { code: 42, message: "a code from a newer peer".into() });
    errors.push(WireError { code: -1, message: "\"quotes\" \\ \n\t\u{0} ünïcødé 🚀".into() });
    for w in errors {
        for enc in [Encoding::Json, Encoding::Binary] {
            let reply = Reply { id: 3, landlord: LandlordId(4), body: ReplyBody::Error(w.clone()) };
            let back = Reply::decode(&reply.encode(enc), enc, &Limits::default()).unwrap();
            assert_eq!(back, reply, "{enc:?}");
        }
    }
}

#[test]
fn batch_failures_travel_per_lease() {
    let results: Vec<Outcome<i64>> = vec![
        Outcome::from(Ok(30_000)),
        Outcome::from(Err(LeaseError::UnknownLease)),
        Outcome::from(Err(LeaseError::LeaseDenied("no".into()))),
    ];
    for enc in [Encoding::Json, Encoding::Binary] {
        let reply = Reply {
            id: 1,
            landlord: LandlordId(1),
            body: ReplyBody::RenewedAll { results: results.clone() },
        };
        let back = Reply::decode(&reply.encode(enc), enc, &Limits::default()).unwrap();
        let ReplyBody::RenewedAll { results: got } = back.body else { panic!("wrong op") };
        let got: Vec<_> = got.iter().map(Outcome::to_result).collect();
        assert_eq!(
            got,
            vec![
                Ok(30_000),
                Err(LeaseError::UnknownLease),
                Err(LeaseError::LeaseDenied("no".into()))
            ]
        );
    }
}

#[test]
fn errors_serialize_with_serde() {
    for e in every_error() {
        let text = serde_json::to_string(&e).unwrap();
        let back: LeaseError = serde_json::from_str(&text).unwrap();
        assert_eq!(back, e);
    }
}
