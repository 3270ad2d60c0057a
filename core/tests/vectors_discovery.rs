//! Checks `core/tests/vectors/discovery.json` against the library, both ways, reading the file
//! the way a binding's tests do (plain JSON, hex strings, decimal strings). The file is made by
//! `tests/vectors_gen/discovery.rs`; its schema is in `tests/vectors/README.md`.

use std::collections::BTreeSet;

use leasehold::discovery::wire::{
    DiscoveryReply, DiscoveryRequest, EventReply, ANNOUNCEMENT_MAX_BYTES,
};
use leasehold::discovery::{Announcement, Locator, RegistrarId, RemoteDiscoveryEvent};
use leasehold::{Encoding, Limits};
use serde_json::Value;

fn load() -> Value {
    let path = format!("{}/tests/vectors/discovery.json", env!("CARGO_MANIFEST_DIR"));
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

/// One message type: decode from either encoding, encode back to either.
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
message!(DiscoveryRequest);
message!(DiscoveryReply);
message!(RemoteDiscoveryEvent);
message!(EventReply);

/// Every case both ways; returns the ops covered (`body.op`, if the message has a body).
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
        if let Some(op) = c["message"]["body"]["op"].as_str() {
            ops.insert(op.to_string());
        }
    }
    ops
}

fn announcement_of(f: &Value) -> Announcement {
    Announcement {
        registrar: s(f, "registrar").parse::<RegistrarId>().unwrap(),
        groups: f["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_str().unwrap().to_string())
            .collect(),
        locator: s(f, "locator").parse::<Locator>().unwrap(),
        sequence: s(f, "sequence").parse().unwrap(),
        ttl: s(f, "ttl").parse().unwrap(),
    }
}

fn ops(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn discovery_vectors() {
    let v = load();
    assert_eq!(v["schema"], 1);
    let defaults = limits_of(&v["default_limits"]);
    assert_eq!(defaults, Limits::default());
    assert_eq!(v["announcement_max_bytes"].as_u64().unwrap() as usize, ANNOUNCEMENT_MAX_BYTES);

    let req_ops = round_trips::<DiscoveryRequest>(&v["requests"], &defaults);
    assert_eq!(
        req_ops,
        ops(&[
            "register",
            "get_groups",
            "add_groups",
            "set_groups",
            "remove_groups",
            "get_locators",
            "add_locators",
            "set_locators",
            "remove_locators",
            "get_registrars",
            "discard"
        ])
    );
    let rep_ops = round_trips::<DiscoveryReply>(&v["replies"], &defaults);
    assert_eq!(rep_ops, ops(&["registered", "groups", "locators", "registrars", "done", "error"]));
    round_trips::<RemoteDiscoveryEvent>(&v["events"], &defaults);
    let ev_ops = round_trips::<EventReply>(&v["event_replies"], &defaults);
    assert_eq!(ev_ops, ops(&["received", "unknown_event", "error"]));

    for c in v["announcements"].as_array().unwrap() {
        let name = s(c, "name");
        let a = announcement_of(&c["announcement"]);
        assert_eq!(hex(&a.encode().unwrap()), s(c, "hex"), "{name}");
        assert_eq!(Announcement::decode(&unhex(s(c, "hex"))).unwrap(), a, "{name}");
    }

    let mut kinds = BTreeSet::new();
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
        let kind = s(c, "kind");
        kinds.insert(kind.to_string());
        let got: leasehold::Result<Value> = match kind {
            "request" => DiscoveryRequest::decode(&bytes, enc, &limits)
                .map(|m| canonical(m.encode(Encoding::Json))),
            "reply" => DiscoveryReply::decode(&bytes, enc, &limits)
                .map(|m| canonical(m.encode(Encoding::Json))),
            "event" => RemoteDiscoveryEvent::decode(&bytes, enc, &limits)
                .map(|m| canonical(m.encode(Encoding::Json))),
            "event_reply" => EventReply::decode(&bytes, enc, &limits)
                .map(|m| canonical(m.encode(Encoding::Json))),
            "announcement" => Announcement::decode(&bytes).map(|a| {
                let want = announcement_of(&c["announcement"]);
                assert_eq!(a, want, "{name}");
                c["announcement"].clone()
            }),
            k => panic!("kind {k}"),
        };
        match (got, c.get("error_code")) {
            (Ok(m), None) => {
                let key = if kind == "announcement" { "announcement" } else { "message" };
                assert_eq!(m, c[key], "{name}");
            }
            (Err(e), Some(code)) => {
                assert_eq!(e.code() as i64, code.as_i64().unwrap(), "{name}: {e}")
            }
            (got, want) => panic!("{name}: got {got:?}, want error {want:?}"),
        }
    }
    assert_eq!(kinds, ops(&["announcement", "event", "event_reply", "reply", "request"]));
}
