//! Checks `core/tests/vectors/renewal.json` against the library, both ways, reading the file the
//! way a binding's tests do. The file is made by `tests/vectors_gen/renewal.rs`.

use common::vectors::*;
use leasehold::service::wire::{SetEventMessage, SetReply, SetRequest};
use leasehold::{Encoding, Limits};
use serde_json::Value;

mod common;

message!(SetRequest, SetReply, SetEventMessage);

/// Decodes `bytes` as `kind` and gives it back as canonical JSON.
fn canonical(kind: &str, bytes: &[u8], e: Encoding, l: &Limits) -> leasehold::Result<Value> {
    match kind {
        "request" => SetRequest::canonical(bytes, e, l),
        "reply" => SetReply::canonical(bytes, e, l),
        "event" => SetEventMessage::canonical(bytes, e, l),
        k => panic!("kind {k}"),
    }
}

#[test]
fn renewal_vectors() {
    let (v, limits) = open("renewal.json");
    assert!(!round_trips::<SetRequest>(&v["requests"], &limits).is_empty());
    assert!(!round_trips::<SetReply>(&v["replies"], &limits).is_empty());
    round_trips::<SetEventMessage>(&v["events"], &limits);
    assert!(!v["events"].as_array().unwrap().is_empty());
    // JSON inputs, given as text; binary ones as hex
    for (list, e) in [("decode", Encoding::Json), ("decode_binary", Encoding::Binary)] {
        let cases = v[list].as_array().unwrap();
        assert!(cases.iter().any(|c| c.get("error_code").is_some()), "{list}");
        for c in cases {
            let bytes = match e {
                Encoding::Json => s(c, "text").as_bytes().to_vec(),
                Encoding::Binary => unhex(s(c, "hex")),
            };
            let got = canonical(s(c, "kind"), &bytes, e, &case_limits(c, limits));
            check_outcome(got, c, s(c, "name"), "decoded");
        }
    }
}
