//! The discovery service as bindings drive it ([`leasehold::machine::Machine`]): its settings,
//! calls, answers, probes and events in their data form (built and read here as JSON values,
//! the way a binding's converter builds and reads them), checked against the direct API and
//! the shared vectors; and the messages' wire form unchanged through [`Message`].

use leasehold::discovery::{
    Announcement, DiscoveryConfig, DiscoveryInput, DiscoveryOptions, DiscoveryOutput,
    DiscoveryService, RegistrarId,
};
use leasehold::machine::{transcode, Machine, Message};
use leasehold::{Encoding, Limits, ANY, FOREVER};
use serde_json::{json, Value};

fn vectors() -> Value {
    let path = format!("{}/tests/vectors/discovery.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn unhex(h: &str) -> Vec<u8> {
    (0..h.len()).step_by(2).map(|k| u8::from_str_radix(&h[k..k + 2], 16).unwrap()).collect()
}

fn options(v: Value) -> DiscoveryOptions {
    serde_json::from_value(v).unwrap()
}

fn call(s: &mut DiscoveryService, input: Value, now: i64) -> Value {
    let input: DiscoveryInput = serde_json::from_value(input).unwrap();
    serde_json::to_value(s.handle(input, now).unwrap()).unwrap()
}

fn service() -> DiscoveryService {
    let o = options(
        json!({"id": 7, "seed": vec![0u8; 32], "lease_policy": {"kind": "bounded", "max": 60000, "default": 30000}}),
    );
    DiscoveryService::create(o, [9; 32]).unwrap()
}

#[test]
fn options_default_as_the_config_does_and_refuse_unknown_names() {
    let c = options(json!({"id": "0000000000000007"})).config([5; 32]).unwrap();
    let d = DiscoveryConfig::new(leasehold::LandlordId(7), [5; 32]);
    assert_eq!(format!("{c:?}"), format!("{d:?}"));
    let c =
        options(json!({"id": 7, "event_retry": [10, 20], "limits": {"max_batch": 3}, "grace": 5}))
            .config([0; 32])
            .unwrap();
    assert_eq!(
        (c.event_retry, c.landlord.limits.max_batch, c.landlord.grace),
        (vec![10, 20], 3, 5)
    );
    assert_eq!(c.landlord.limits.max_message_bytes, Limits::default().max_message_bytes);
    let e = serde_json::from_value::<DiscoveryOptions>(json!({"id": 7, "colour": "blue"}));
    assert!(e.unwrap_err().to_string().contains("unknown field `colour`"));
    let bad = options(json!({"id": 7, "event_retry": []})).config([0; 32]);
    assert_eq!(bad.unwrap_err().code(), leasehold::ErrorCode::InvalidArgument);
    let short = options(json!({"id": 7, "seed": [1, 2, 3]})).config([0; 32]);
    assert_eq!(short.unwrap_err().code(), leasehold::ErrorCode::InvalidArgument);
}

#[test]
fn a_registration_lives_through_data_inputs_as_through_the_methods() {
    let mut s = service();
    let r = call(
        &mut s,
        json!({"op": "register", "groups": ["printers"], "locators": ["Lookup.Example:4160"],
               "handback": "mine", "lease_duration": ANY, "listener": [1, 2]}),
        0,
    );
    assert_eq!(r["id"], 1);
    assert_eq!(r["lease"]["landlord"], "0000000000000007");
    assert_eq!(r["lease"]["expiration"], 30_000);
    assert_eq!(r["event"]["source"], json!({"service": "0000000000000007", "object": 1}));
    // The probe: data form with host and port.
    let p = serde_json::to_value(Machine::poll_transmit(&mut s, 0).unwrap()).unwrap();
    assert_eq!(
        p,
        json!({"id": 1, "locator": "lookup.example:4160", "host": "lookup.example", "port": 4160})
    );
    let a = json!({"registrar": "00000000000000000000000000000001", "groups": ["printers"],
                   "locator": "10.0.0.1:4160", "sequence": 1, "ttl": 30000});
    assert_eq!(call(&mut s, json!({"op": "announcement", "announcement": a}), 10), Value::Null);
    let e = serde_json::to_value(Machine::poll_event(&mut s, 10).unwrap()).unwrap();
    assert_eq!(e["event_id"], r["event"]["event_id"]);
    assert_eq!(
        (&e["sequence"], &e["discarded"], &e["listener"]),
        (&json!(1), &json!(false), &json!([1, 2]))
    );
    assert_eq!(e["handback"], json!(b"mine".to_vec()));
    assert_eq!(e["registrars"][0]["locators"], json!(["10.0.0.1:4160"]));
    let done = json!({"op": "delivered", "event_id": e["event_id"], "sequence": 1});
    assert_eq!(call(&mut s, done.clone(), 11), json!(true));
    assert_eq!(call(&mut s, done, 11), json!(false));
    // Every read of the registration, as data.
    let reg = json!(1);
    assert_eq!(call(&mut s, json!({"op": "groups", "registration": reg}), 12), json!(["printers"]));
    assert_eq!(
        call(&mut s, json!({"op": "set_groups", "registration": reg, "groups": null}), 12),
        Value::Null
    );
    assert_eq!(call(&mut s, json!({"op": "groups", "registration": reg}), 12), Value::Null);
    assert_eq!(
        call(&mut s, json!({"op": "locators", "registration": reg}), 12),
        json!(["lookup.example:4160"])
    );
    assert_eq!(
        call(&mut s, json!({"op": "renew", "registration": reg, "duration": 1000}), 13),
        json!(1000)
    );
    let ids = call(&mut s, json!({"op": "registrars", "registration": reg}), 14);
    assert_eq!(ids[0]["id"], "00000000000000000000000000000001");
    assert_eq!(call(&mut s, json!({"op": "listener", "registration": reg}), 14), json!([1, 2]));
    // A delivery failure as data: unknown_event cancels the registration.
    call(&mut s, json!({"op": "unreachable", "registrar": "00000000000000000000000000000001"}), 15);
    let e = serde_json::to_value(Machine::poll_event(&mut s, 15).unwrap()).unwrap();
    assert_eq!(e["discarded"], true);
    let f = json!({"op": "delivery_failed", "event_id": e["event_id"], "sequence": e["sequence"],
                   "failure": {"kind": "unknown_event"}});
    assert_eq!(call(&mut s, f, 16), json!(true));
    let gone: DiscoveryInput =
        serde_json::from_value(json!({"op": "lease", "registration": 1})).unwrap();
    assert_eq!(s.handle(gone, 16).unwrap_err().code(), leasehold::ErrorCode::UnknownLease);
    assert_eq!(call(&mut s, json!({"op": "registrations"}), 16), json!([]));
}

#[test]
fn inputs_refuse_what_the_methods_refuse() {
    let mut s = service();
    let bad = |v: Value| serde_json::from_value::<DiscoveryInput>(v).is_err();
    assert!(bad(
        json!({"op": "register", "groups": ["a"], "locators": ["no-port"], "handback": [], "lease_duration": 1})
    ));
    assert!(bad(json!({"op": "register", "locators": [], "handback": [], "lease_duration": 1})));
    assert!(bad(json!({"op": "discard", "registration": 1, "registrar": "xyz"})));
    assert!(bad(json!({"op": "nothing"})));
    assert!(bad(json!({"op": "lease", "registration": 1, "extra": 1})));
    let neg: DiscoveryInput = serde_json::from_value(
        json!({"op": "register", "groups": [], "locators": [], "handback": [], "lease_duration": -5}),
    )
    .unwrap();
    assert_eq!(s.handle(neg, 0).unwrap_err().code(), leasehold::ErrorCode::InvalidArgument);
    let long = json!({"op": "register", "groups": [], "locators": [], "handback": [],
                      "lease_duration": FOREVER, "listener": vec![0u8; 70_000]});
    let long: DiscoveryInput = serde_json::from_value(long).unwrap();
    assert!(s.handle(long, 0).is_err());
    assert_eq!(s.registrations(), vec![], "a refused listener leaves no registration behind");
}

#[test]
fn announcements_read_the_same_as_data_and_as_datagrams() {
    for v in vectors()["announcements"].as_array().unwrap() {
        let a = Announcement::decode(&unhex(v["hex"].as_str().unwrap())).unwrap();
        let data = serde_json::to_value(&a).unwrap();
        let m = &v["announcement"];
        assert_eq!(data["registrar"], m["registrar"]);
        assert_eq!(data["locator"], m["locator"]);
        assert_eq!(data["groups"], m["groups"]);
        assert_eq!(data["sequence"].to_string(), m["sequence"].as_str().unwrap());
        assert_eq!(data["ttl"].to_string(), m["ttl"].as_str().unwrap());
        assert_eq!(serde_json::from_value::<Announcement>(data).unwrap(), a);
    }
}

#[test]
fn messages_keep_their_wire_form_byte_for_byte() {
    let v = vectors();
    let limits = Limits::default();
    fn check<M: Message>(v: &Value, limits: &Limits) {
        let json = v["json"].as_str().unwrap().as_bytes();
        let bin = unhex(v["hex"].as_str().unwrap());
        assert_eq!(transcode::<M>(json, Encoding::Json, Encoding::Binary, limits).unwrap(), bin);
        assert_eq!(transcode::<M>(&bin, Encoding::Binary, Encoding::Json, limits).unwrap(), json);
        // The JSON object form a binding hands out is the JSON text parsed; written back, it
        // decodes to the same message.
        let text = serde_json::to_vec(&v["message"]).unwrap();
        assert_eq!(transcode::<M>(&text, Encoding::Json, Encoding::Binary, limits).unwrap(), bin);
    }
    for r in v["requests"].as_array().unwrap() {
        check::<leasehold::discovery::wire::DiscoveryRequest>(r, &limits);
    }
    for r in v["replies"].as_array().unwrap() {
        check::<leasehold::discovery::wire::DiscoveryReply>(r, &limits);
    }
    for r in v["events"].as_array().unwrap() {
        check::<leasehold::RemoteDiscoveryEvent>(r, &limits);
    }
    for r in v["event_replies"].as_array().unwrap() {
        check::<leasehold::discovery::wire::EventReply>(r, &limits);
    }
}

#[test]
fn serve_answers_both_protocols_and_event_replies() {
    let mut s = service();
    let v = vectors();
    let req = v["requests"].as_array().unwrap().iter().find(|r| r["name"] == "register").unwrap();
    let input = json!({"op": "serve", "protocol": "discovery", "encoding": "json",
                       "message": req["json"].as_str().unwrap(), "listener": "http://l/"});
    let out = call(&mut s, input, 0);
    let reply: Vec<u8> = serde_json::from_value(out).unwrap();
    let reply: Value = serde_json::from_slice(&reply).unwrap();
    assert_eq!(reply["body"]["op"], "registered");
    assert_eq!(s.listener(leasehold::RegistrationId(1)), Some(&b"http://l/"[..]));
    let garbage =
        json!({"op": "serve", "protocol": "lease", "encoding": "binary", "message": [1, 2]});
    let out: Vec<u8> = serde_json::from_value(call(&mut s, garbage, 0)).unwrap();
    let r = leasehold::Reply::decode(&out, Encoding::Binary, &Limits::default()).unwrap();
    assert!(matches!(r.body, leasehold::ReplyBody::Error(_)) && r.id == 0);
    let bad =
        json!({"op": "serve", "protocol": "event_reply", "encoding": "json", "message": "{}"});
    let bad: DiscoveryInput = serde_json::from_value(bad).unwrap();
    assert_eq!(s.handle(bad, 0).unwrap_err().code(), leasehold::ErrorCode::Decode);
}

#[test]
fn snapshot_and_restore_through_the_trait() {
    let mut s = service();
    call(
        &mut s,
        json!({"op": "register", "groups": null, "locators": [], "handback": [], "lease_duration": 40000}),
        0,
    );
    let text = Machine::snapshot(&mut s, 100);
    let o = options(
        json!({"id": 7, "restore_jump": 0, "lease_policy": {"kind": "bounded", "max": 60000, "default": 30000}}),
    );
    let mut back = <DiscoveryService as Machine>::restore(o, &text, 100).unwrap();
    assert_eq!(Machine::snapshot(&mut back, 100), text);
    let wrong = options(json!({"id": 8}));
    assert!(<DiscoveryService as Machine>::restore(wrong, &text, 100).is_err());
    assert_eq!(
        serde_json::to_value(DiscoveryOutput::Registrar(None)).unwrap(),
        Value::Null,
        "an absent value is null in every runtime"
    );
    let _ = RegistrarId(0);
}
