//! Shared by the shared-vector tests (`vectors*.rs`): reading `core/tests/vectors/*.json` the
//! way a binding's tests do (plain JSON, hex strings, decimal strings) and checking a message
//! type against its cases both ways.

use std::collections::BTreeSet;

use leasehold::{Encoding, Limits};
use serde_json::Value;

/// One file of `core/tests/vectors/`.
pub fn load(name: &str) -> Value {
    let path = format!("{}/tests/vectors/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// A message file of `core/tests/vectors/` (schema 1) and its default limits, which are the
/// library's.
pub fn open(name: &str) -> (Value, Limits) {
    let v = load(name);
    assert_eq!(v["schema"], 1, "{name}");
    let defaults = limits_of(&v["default_limits"]);
    assert_eq!(defaults, Limits::default(), "{name}");
    (v, defaults)
}

/// A string field (panics with the case if it is missing).
pub fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_else(|| panic!("{k} missing in {v}"))
}

/// A decimal-string field as a number.
pub fn i(v: &Value, k: &str) -> i64 {
    s(v, k).parse().unwrap()
}

pub fn unhex(h: &str) -> Vec<u8> {
    assert!(h.len() % 2 == 0);
    (0..h.len()).step_by(2).map(|k| u8::from_str_radix(&h[k..k + 2], 16).unwrap()).collect()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn limits_of(v: &Value) -> Limits {
    let n = |k: &str| v[k].as_u64().unwrap() as usize;
    Limits {
        max_message_bytes: n("max_message_bytes"),
        max_batch: n("max_batch"),
        max_resource_bytes: n("max_resource_bytes"),
    }
}

/// A case's `limits`, or the file's defaults.
pub fn case_limits(c: &Value, defaults: Limits) -> Limits {
    c.get("limits").map(limits_of).unwrap_or(defaults)
}

pub fn ops(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// One message type: decode from either encoding, encode back to either
/// (implemented by [`message!`](crate::message) for each wire type).
pub trait Message: Sized + PartialEq + std::fmt::Debug {
    fn dec(bytes: &[u8], e: Encoding, l: &Limits) -> leasehold::Result<Self>;
    fn enc(&self, e: Encoding) -> Vec<u8>;

    /// Decodes `bytes` and gives the message back as canonical JSON.
    fn canonical(bytes: &[u8], e: Encoding, l: &Limits) -> leasehold::Result<Value> {
        Self::dec(bytes, e, l).map(|m| serde_json::from_slice(&m.enc(Encoding::Json)).unwrap())
    }
}

#[macro_export]
macro_rules! message {
    ($($t:ty),*) => {$(
        impl $crate::common::vectors::Message for $t {
            fn dec(
                bytes: &[u8],
                e: leasehold::Encoding,
                l: &leasehold::Limits,
            ) -> leasehold::Result<Self> {
                <$t>::decode(bytes, e, l)
            }
            fn enc(&self, e: leasehold::Encoding) -> Vec<u8> {
                self.encode(e)
            }
        }
    )*};
}

/// Every case both ways (JSON text, hex, the `message` tree); returns the ops covered
/// (`body.op`, where the message has a body).
pub fn round_trips<M: Message>(cases: &Value, limits: &Limits) -> BTreeSet<String> {
    let mut ops = BTreeSet::new();
    for c in cases.as_array().unwrap() {
        let name = s(c, "name");
        let m = M::dec(s(c, "json").as_bytes(), Encoding::Json, limits).unwrap();
        assert_eq!(M::dec(&unhex(s(c, "hex")), Encoding::Binary, limits).unwrap(), m, "{name}");
        let from_message = serde_json::to_vec(&c["message"]).unwrap();
        assert_eq!(M::dec(&from_message, Encoding::Json, limits).unwrap(), m, "{name}");
        assert_eq!(String::from_utf8(m.enc(Encoding::Json)).unwrap(), s(c, "json"), "{name}");
        assert_eq!(hex(&m.enc(Encoding::Binary)), s(c, "hex"), "{name}");
        if let Some(op) = c["message"]["body"]["op"].as_str() {
            ops.insert(op.to_string());
        }
    }
    ops
}

/// The `decode` cases of a file: each case's bytes (its `hex`, equal to its `text` where it
/// has one) in its `encoding`, decoded by `decode(kind, bytes, encoding, limits, case)`, must
/// give the case's `key` (canonical JSON) or its `error_code`. Returns the kinds covered.
pub fn decode_cases(
    v: &Value,
    defaults: Limits,
    key: &str,
    mut decode: impl FnMut(&str, &[u8], Encoding, &Limits, &Value) -> leasehold::Result<Value>,
) -> BTreeSet<String> {
    let mut kinds = BTreeSet::new();
    for c in v["decode"].as_array().unwrap() {
        let name = s(c, "name");
        let limits = case_limits(c, defaults);
        let enc = match s(c, "encoding") {
            "json" => Encoding::Json,
            "binary" => Encoding::Binary,
            e => panic!("encoding {e}"),
        };
        let bytes = unhex(s(c, "hex"));
        if let Some(t) = c.get("text") {
            assert_eq!(t.as_str().unwrap().as_bytes(), &bytes[..], "{name}: text and hex agree");
        }
        let kind = s(c, "kind");
        kinds.insert(kind.to_string());
        check_outcome(decode(kind, &bytes, enc, &limits, c), c, name, key);
    }
    kinds
}

/// A decode's outcome against the case: the value at `key`, or the error code.
pub fn check_outcome(got: leasehold::Result<Value>, c: &Value, name: &str, key: &str) {
    match (got, c.get("error_code")) {
        (Ok(m), None) => assert_eq!(m, c[key], "{name}"),
        (Err(e), Some(code)) => assert_eq!(e.code() as i64, code.as_i64().unwrap(), "{name}: {e}"),
        (got, want) => panic!("{name}: got {got:?}, want error {want:?}"),
    }
}
