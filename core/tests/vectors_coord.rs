//! Checks `core/tests/vectors/coord.json` against the library, both ways, reading the file the
//! way a binding's tests do (plain JSON, hex strings, decimal strings). The file is made by
//! `tests/vectors_gen/coord.rs`; its schema is in `tests/vectors/README.md`.

use std::collections::BTreeSet;

use leasehold::coord::wire::{CoordReply, CoordRequest};
use leasehold::coord::Fence;
use leasehold::{Encoding, Limits};
use serde_json::Value;

fn load() -> Value {
    let path = format!("{}/tests/vectors/coord.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_else(|| panic!("{k} missing in {v}"))
}

fn unhex(h: &str) -> Vec<u8> {
    assert!(h.len() % 2 == 0);
    (0..h.len()).step_by(2).map(|k| u8::from_str_radix(&h[k..k + 2], 16).unwrap()).collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn limits_of(v: &Value) -> Limits {
    let n = |k: &str| v[k].as_u64().unwrap() as usize;
    Limits {
        max_message_bytes: n("max_message_bytes"),
        max_batch: n("max_batch"),
        max_resource_bytes: n("max_resource_bytes"),
    }
}

trait Message: Sized + PartialEq + std::fmt::Debug {
    fn dec(bytes: &[u8], e: Encoding, l: &Limits) -> leasehold::Result<Self>;
    fn enc(&self, e: Encoding) -> Vec<u8>;
}

macro_rules! message {
    ($t:ty) => {
        impl Message for $t {
            fn dec(bytes: &[u8], e: Encoding, l: &Limits) -> leasehold::Result<Self> {
                <$t>::decode(bytes, e, l)
            }
            fn enc(&self, e: Encoding) -> Vec<u8> {
                self.encode(e)
            }
        }
    };
}
message!(CoordRequest);
message!(CoordReply);

fn round_trips<M: Message>(cases: &Value, limits: &Limits) -> BTreeSet<String> {
    let mut ops = BTreeSet::new();
    for c in cases.as_array().unwrap() {
        let name = s(c, "name");
        let m = M::dec(s(c, "json").as_bytes(), Encoding::Json, limits).unwrap();
        assert_eq!(M::dec(&unhex(s(c, "hex")), Encoding::Binary, limits).unwrap(), m, "{name}");
        let from_message = serde_json::to_vec(&c["message"]).unwrap();
        assert_eq!(M::dec(&from_message, Encoding::Json, limits).unwrap(), m, "{name}");
        assert_eq!(String::from_utf8(m.enc(Encoding::Json)).unwrap(), s(c, "json"), "{name}");
        assert_eq!(hex(&m.enc(Encoding::Binary)), s(c, "hex"), "{name}");
        ops.insert(c["message"]["body"]["op"].as_str().unwrap().to_string());
    }
    ops
}

fn ops(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn coord_vectors() {
    let v = load();
    assert_eq!(v["schema"], 1);
    let defaults = limits_of(&v["default_limits"]);
    assert_eq!(defaults, Limits::default());
    let req_ops = round_trips::<CoordRequest>(&v["requests"], &defaults);
    assert_eq!(req_ops, ops(&["acquire", "watch", "poll", "holders"]));
    let rep_ops = round_trips::<CoordReply>(&v["replies"], &defaults);
    assert_eq!(rep_ops, ops(&["acquired", "watching", "events", "holders", "error"]));

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
        let canonical = |b: Vec<u8>| serde_json::from_slice::<Value>(&b).unwrap();
        let got = match s(c, "kind") {
            "request" => CoordRequest::decode(&bytes, enc, &limits)
                .map(|m| canonical(m.encode(Encoding::Json))),
            "reply" => CoordReply::decode(&bytes, enc, &limits)
                .map(|m| canonical(m.encode(Encoding::Json))),
            k => panic!("kind {k}"),
        };
        match (got, c.get("error_code")) {
            (Ok(m), None) => assert_eq!(m, c["message"], "{name}"),
            (Err(e), Some(code)) => {
                assert_eq!(e.code() as i64, code.as_i64().unwrap(), "{name}: {e}")
            }
            (got, want) => panic!("{name}: got {got:?}, want error {want:?}"),
        }
    }

    for c in v["fence"].as_array().unwrap() {
        let name = s(c, "name");
        let mut f = Fence::with_highest(s(c, "highest").parse().unwrap());
        let ok = f.check(s(c, "token").parse().unwrap()).is_ok();
        assert_eq!(ok, c["accepted"].as_bool().unwrap(), "{name}");
        assert_eq!(f.highest().to_string(), s(c, "highest_after"), "{name}");
    }
}
