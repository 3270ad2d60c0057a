//! The renewal service as bindings drive it ([`leasehold::machine::Machine`]): settings, calls,
//! answers, transmissions and events in their data form, built and read as JSON values the way
//! a binding's converter does, against a real landlord.

use leasehold::machine::Machine;
use leasehold::policy::Fixed;
use leasehold::service::machine::{ServiceInput, ServiceOptions};
use leasehold::service::RenewalService;
use leasehold::{Encoding, Landlord, LandlordConfig, LandlordId, Limits, Reply, Request};
use serde_json::{json, Value};

fn options(v: Value) -> ServiceOptions {
    serde_json::from_value(v).unwrap()
}

fn call(s: &mut RenewalService, input: Value, now: i64) -> leasehold::Result<Value> {
    let input: ServiceInput = serde_json::from_value(input).unwrap();
    s.handle(input, now).map(|o| serde_json::to_value(o).unwrap())
}

fn service() -> RenewalService {
    RenewalService::create(options(json!({"id": 9, "seed": vec![1u8; 32]})), [0; 32]).unwrap()
}

#[test]
fn options_default_as_the_config_does_and_refuse_bad_ones() {
    let c = options(json!({"id": "0000000000000009"})).config([5; 32]).unwrap();
    let d = leasehold::service::RenewalServiceConfig::new(LandlordId(9), [5; 32]);
    assert_eq!(format!("{c:?}"), format!("{d:?}"));
    let c = options(json!({"id": 9, "grace": 5, "restore_jump": 0,
        "manager": {"batch_window": 10, "attempts": 2}, "limits": {"max_batch": 3},
        "set_policy": {"kind": "fixed", "duration": 1000}}))
    .config([0; 32])
    .unwrap();
    assert_eq!((c.landlord.grace, c.restore_jump, c.landlord.limits.max_batch), (5, 0, 3));
    assert_eq!((c.manager.batch_window, c.manager.attempts), (10, 2));
    let e = serde_json::from_value::<ServiceOptions>(json!({"id": 9, "manager": {"colour": 1}}));
    assert!(e.unwrap_err().to_string().contains("unknown field `colour`"));
    let bad = options(json!({"id": 9, "manager": {"max_batch": 0}})).config([0; 32]);
    assert_eq!(bad.unwrap_err().code(), leasehold::ErrorCode::InvalidArgument);
    let bad = options(json!({"id": 9, "grace": -1})).config([0; 32]);
    assert_eq!(bad.unwrap_err().code(), leasehold::ErrorCode::InvalidArgument);
}

#[test]
fn a_set_renews_its_lease_through_data_and_reports_failure_as_an_event() {
    let mut ll =
        Landlord::new(LandlordConfig::new(LandlordId(3), [2; 32]), Fixed::new(1000).unwrap());
    let client = ll.grant(b"r".to_vec(), 1000, 0).unwrap();
    let client = leasehold::Lease::new(LandlordId(3), client.cookie, client.expiration);
    let client = serde_json::to_value(client).unwrap();
    let mut s = service();
    assert_eq!(call(&mut s, json!({"op": "id"}), 0).unwrap(), json!("0000000000000009"));
    let created = call(&mut s, json!({"op": "create_set", "lease_duration": 60000}), 0).unwrap();
    let set = created["set"].clone();
    assert_eq!(set, json!(1));
    assert_eq!(created["lease"]["landlord"], json!("0000000000000009"));
    assert_eq!(call(&mut s, json!({"op": "sets"}), 0).unwrap(), json!([1]));
    let policy = call(&mut s, json!({"op": "set_policy"}), 0).unwrap();
    assert_eq!(policy, json!({"kind": "bounded", "max": 7_200_000, "default": 3_600_000}));
    let of = call(&mut s, json!({"op": "set_of", "lease": created["lease"]}), 0).unwrap();
    assert_eq!(of, set);
    let add = json!({"op": "add", "set": 1, "lease": client, "membership_duration": 5000,
        "renew_duration": 1000});
    assert_eq!(call(&mut s, add, 0).unwrap(), Value::Null);
    let m = call(&mut s, json!({"op": "membership", "set": 1, "lease": client}), 0).unwrap();
    assert_eq!(m, json!({"expiration": 5000, "renew_duration": 1000}));
    let r =
        call(&mut s, json!({"op": "set_renewal_failure_listener", "set": 1, "handback": "h"}), 0)
            .unwrap();
    assert_eq!(r["source"]["object"], json!(1));
    assert_eq!(call(&mut s, json!({"op": "registrations", "set": 1}), 0).unwrap(), json!([r]));
    let stats = call(&mut s, json!({"op": "stats"}), 0).unwrap();
    assert_eq!(stats["leases_renewed"], json!(0));

    // The renewal goes out as bytes; the landlord's reply comes back as bytes.
    let due = Machine::poll_timeout(&s).unwrap();
    Machine::handle_timeout(&mut s, due);
    let t = serde_json::to_value(Machine::poll_transmit(&mut s, due).unwrap()).unwrap();
    assert_eq!(t["landlord"], json!("0000000000000003"));
    let bytes: Vec<u8> = serde_json::from_value(t["request"].clone()).unwrap();
    let req = Request::decode(&bytes, Encoding::Binary, &Limits::default()).unwrap();
    assert_eq!(json!(req.id), t["id"]);
    let reply: Reply = ll.handle_request(&req, due);
    let input = json!({"op": "reply", "message": reply.encode(Encoding::Json), "encoding": "json"});
    assert_eq!(call(&mut s, input, due).unwrap(), Value::Null);
    assert!(Machine::poll_event(&mut s, due).is_none());

    // The next renewal fails definitely: the lease leaves the set with a renewal-failure event.
    let due = Machine::poll_timeout(&s).unwrap();
    Machine::handle_timeout(&mut s, due);
    let t = serde_json::to_value(Machine::poll_transmit(&mut s, due).unwrap()).unwrap();
    let f = json!({"op": "failure", "id": t["id"], "code": 1, "message": "gone"});
    call(&mut s, f, due).unwrap();
    let e = serde_json::to_value(Machine::poll_event(&mut s, due).unwrap()).unwrap();
    assert_eq!(e["kind"]["type"], json!("renewal_failure"));
    assert_eq!(e["kind"]["error"]["code"], json!(1));
    assert_eq!(e["kind"]["lease"]["cookie"], client["cookie"]);
    assert_eq!(e["handback"], json!(b"h".to_vec()));
    assert_eq!(call(&mut s, json!({"op": "leases", "set": 1}), due).unwrap(), json!([]));

    // Snapshot and restore keep the set.
    let text = Machine::snapshot(&mut s, due);
    let o = options(json!({"id": 9, "seed": vec![1u8; 32]}));
    let mut back = <RenewalService as Machine>::restore(o, &text, due).unwrap();
    assert_eq!(call(&mut back, json!({"op": "sets"}), due).unwrap(), json!([1]));
}

#[test]
fn bad_inputs_are_refused() {
    let mut s = service();
    let no_set = call(&mut s, json!({"op": "leases", "set": 5}), 0).unwrap_err();
    assert_eq!(no_set.code(), leasehold::ErrorCode::UnknownLease);
    let e = serde_json::from_value::<ServiceInput>(json!({"op": "paint", "set": 1}));
    assert!(e.unwrap_err().to_string().contains("unknown variant"));
    let e = serde_json::from_value::<ServiceInput>(json!({"op": "add", "set": 1}));
    assert!(e.unwrap_err().to_string().contains("missing field"));
    let bad = call(&mut s, json!({"op": "reply", "message": [1, 2], "encoding": "binary"}), 0);
    assert_eq!(bad.unwrap_err().code(), leasehold::ErrorCode::Decode);
    let served =
        call(&mut s, json!({"op": "serve", "message": "{", "encoding": "json"}), 0).unwrap();
    assert!(served.is_array());
}
