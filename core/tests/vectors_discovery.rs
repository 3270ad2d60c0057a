//! Checks `core/tests/vectors/discovery.json` against the library, both ways, reading the file
//! the way a binding's tests do (plain JSON, hex strings, decimal strings). The file is made by
//! `tests/vectors_gen/discovery.rs`; its schema is in `tests/vectors/README.md`.

use common::vectors::*;
use leasehold::discovery::wire::{
    DiscoveryReply, DiscoveryRequest, EventReply, ANNOUNCEMENT_MAX_BYTES,
};
use leasehold::discovery::{Announcement, Locator, RegistrarId, RemoteDiscoveryEvent};
use serde_json::Value;

mod common;

message!(DiscoveryRequest, DiscoveryReply, RemoteDiscoveryEvent, EventReply);

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

#[test]
fn discovery_vectors() {
    let (v, defaults) = open("discovery.json");
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

    let kinds = decode_cases(&v, defaults, "message", |kind, bytes, enc, limits, c| match kind {
        "request" => DiscoveryRequest::canonical(bytes, enc, limits),
        "reply" => DiscoveryReply::canonical(bytes, enc, limits),
        "event" => RemoteDiscoveryEvent::canonical(bytes, enc, limits),
        "event_reply" => EventReply::canonical(bytes, enc, limits),
        // checked here against its fields; a case of this kind has no `message`
        "announcement" => Announcement::decode(bytes).map(|a| {
            assert_eq!(a, announcement_of(&c["announcement"]), "{}", s(c, "name"));
            c["message"].clone()
        }),
        k => panic!("kind {k}"),
    });
    assert_eq!(kinds, ops(&["announcement", "event", "event_reply", "reply", "request"]));
}
