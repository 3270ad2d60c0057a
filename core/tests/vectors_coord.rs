//! Checks `core/tests/vectors/coord.json` against the library, both ways, reading the file the
//! way a binding's tests do (plain JSON, hex strings, decimal strings). The file is made by
//! `tests/vectors_gen/coord.rs`; its schema is in `tests/vectors/README.md`.

use common::vectors::*;
use leasehold::coord::wire::{CoordReply, CoordRequest};
use leasehold::coord::Fence;

mod common;

message!(CoordRequest, CoordReply);

#[test]
fn coord_vectors() {
    let (v, defaults) = open("coord.json");
    let req_ops = round_trips::<CoordRequest>(&v["requests"], &defaults);
    assert_eq!(req_ops, ops(&["acquire", "watch", "poll", "holders"]));
    let rep_ops = round_trips::<CoordReply>(&v["replies"], &defaults);
    assert_eq!(rep_ops, ops(&["acquired", "watching", "events", "holders", "error"]));

    decode_cases(&v, defaults, "message", |kind, bytes, enc, limits, _| match kind {
        "request" => CoordRequest::canonical(bytes, enc, limits),
        "reply" => CoordReply::canonical(bytes, enc, limits),
        k => panic!("kind {k}"),
    });

    for c in v["fence"].as_array().unwrap() {
        let name = s(c, "name");
        let mut f = Fence::with_highest(s(c, "highest").parse().unwrap());
        let ok = f.check(s(c, "token").parse().unwrap()).is_ok();
        assert_eq!(ok, c["accepted"].as_bool().unwrap(), "{name}");
        assert_eq!(f.highest().to_string(), s(c, "highest_after"), "{name}");
    }
}
