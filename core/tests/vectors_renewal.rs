//! Checks `core/tests/vectors/renewal.json` against the library, reading the file the way a
//! binding's tests do. The file is made by `tests/vectors_gen/renewal.rs`.

use common::vectors::*;
use leasehold::service::wire::{SetEventMessage, SetReply, SetRequest};
use leasehold::Limits;
use serde_json::Value;

mod common;

/// Decodes `text` as `kind` and encodes it again (canonical JSON).
fn again(kind: &str, text: &[u8], l: &Limits) -> leasehold::Result<Vec<u8>> {
    match kind {
        "request" => SetRequest::from_json(text, l).map(|m| m.to_json()),
        "reply" => SetReply::from_json(text, l).map(|m| m.to_json()),
        "event" => SetEventMessage::from_json(text, l).map(|m| m.to_json()),
        k => panic!("kind {k}"),
    }
}

#[test]
fn renewal_vectors() {
    let (v, limits) = open("renewal.json");
    for (list, kind) in [("requests", "request"), ("replies", "reply"), ("events", "event")] {
        let cases = v[list].as_array().unwrap();
        assert!(!cases.is_empty());
        for c in cases {
            let name = s(c, "name");
            let text = s(c, "json");
            assert_eq!(again(kind, text.as_bytes(), &limits).unwrap(), text.as_bytes(), "{name}");
            let from_message = serde_json::to_vec(&c["message"]).unwrap();
            assert_eq!(again(kind, &from_message, &limits).unwrap(), text.as_bytes(), "{name}");
        }
    }
    for c in v["decode"].as_array().unwrap() {
        let name = s(c, "name");
        let l = case_limits(c, limits);
        let got = again(s(c, "kind"), s(c, "text").as_bytes(), &l);
        match (c.get("decoded"), c.get("error_code")) {
            (Some(d), None) => {
                let got: Value = serde_json::from_slice(&got.unwrap()).unwrap();
                assert_eq!(&got, d, "{name}");
            }
            (None, Some(code)) => {
                assert_eq!(got.unwrap_err().code() as i64, code.as_i64().unwrap(), "{name}")
            }
            _ => panic!("{name}: exactly one of decoded and error_code"),
        }
    }
}
