//! The renewal manager as bindings drive it ([`leasehold::machine::Machine`]): settings, calls,
//! answers, transmissions and events in their data form, built and read as JSON values the way
//! a binding's converter does, against a real landlord.

use leasehold::holder::machine::ManagerInput;
use leasehold::holder::RenewalManager;
use leasehold::machine::Machine;
use leasehold::policy::Fixed;
use leasehold::{Encoding, Landlord, LandlordConfig, LandlordId, Lease, Limits, Request};
use serde_json::{json, Value};

fn call(m: &mut RenewalManager, input: Value, now: i64) -> leasehold::Result<Value> {
    let input: ManagerInput = serde_json::from_value(input).unwrap();
    m.handle(input, now).map(|o| serde_json::to_value(o).unwrap())
}

#[test]
fn settings_default_refuse_bad_values_and_read_back() {
    let m = RenewalManager::create(serde_json::from_value(json!(null)).unwrap(), [0; 32]).unwrap();
    assert_eq!(m.config(), &leasehold::holder::RenewalManagerConfig::default());
    let o = serde_json::from_value(json!({"renew_divisor": 1})).unwrap();
    let e = RenewalManager::create(o, [0; 32]).err().unwrap();
    assert!(e.to_string().contains("renew_divisor"));
    let o = serde_json::from_value(json!({"initial_rtt": 10, "min_rto": 10})).unwrap();
    let mut m = RenewalManager::create(o, [0; 32]).unwrap();
    let c = call(&mut m, json!({"op": "config"}), 0).unwrap();
    assert_eq!((c["initial_rtt"].clone(), c["min_rto"].clone()), (json!(10), json!(10)));
    assert_eq!(call(&mut m, json!({"op": "size"}), 0).unwrap(), json!(0));
}

#[test]
fn a_lease_is_renewed_through_data_until_a_definite_failure() {
    let mut ll =
        Landlord::new(LandlordConfig::new(LandlordId(3), [2; 32]), Fixed::new(1000).unwrap());
    let g = ll.grant(b"r".to_vec(), 1000, 0).unwrap();
    let lease = serde_json::to_value(Lease::new(LandlordId(3), g.cookie, g.expiration)).unwrap();
    let o = serde_json::from_value(json!({"initial_rtt": 10, "min_rto": 10})).unwrap();
    let mut m = RenewalManager::create(o, [0; 32]).unwrap();
    let add =
        json!({"op": "renew_for", "lease": lease, "duration": 10_000, "renew_duration": 1000});
    assert_eq!(call(&mut m, add, 0).unwrap(), Value::Null);
    assert_eq!(call(&mut m, json!({"op": "leases"}), 0).unwrap(), json!([lease]));
    assert_eq!(
        call(&mut m, json!({"op": "expiration", "lease": lease}), 0).unwrap(),
        json!(10_000)
    );
    let due = Machine::poll_timeout(&m).unwrap();
    Machine::handle_timeout(&mut m, due);
    let t = serde_json::to_value(Machine::poll_transmit(&mut m, due).unwrap()).unwrap();
    let bytes: Vec<u8> = serde_json::from_value(t["request"].clone()).unwrap();
    let req = Request::decode(&bytes, Encoding::Binary, &Limits::default()).unwrap();
    let reply = ll.handle_request(&req, due);
    let input =
        json!({"op": "reply", "message": reply.encode(Encoding::Binary), "encoding": "binary"});
    call(&mut m, input, due + 5).unwrap();
    let e = serde_json::to_value(Machine::poll_event(&mut m, due).unwrap()).unwrap();
    assert_eq!(e["type"], json!("renewed"));
    let rtt = call(&mut m, json!({"op": "rtt", "landlord": "0000000000000003"}), due).unwrap();
    assert_eq!(rtt["samples"], json!(1));
    let text = Machine::snapshot(&mut m, due + 5);
    let mut back = <RenewalManager as Machine>::restore(None, &text, due + 5).unwrap();
    assert_eq!(call(&mut back, json!({"op": "size"}), due + 5).unwrap(), json!(1));

    let due = Machine::poll_timeout(&m).unwrap();
    Machine::handle_timeout(&mut m, due);
    let t = serde_json::to_value(Machine::poll_transmit(&mut m, due).unwrap()).unwrap();
    call(&mut m, json!({"op": "failure", "id": t["id"], "code": 1, "message": "gone"}), due)
        .unwrap();
    let e = serde_json::to_value(Machine::poll_event(&mut m, due).unwrap()).unwrap();
    assert_eq!(
        (e["type"].clone(), e["error"]["code"].clone()),
        (json!("renewal_failed"), json!(1))
    );
    assert_eq!(e["desired_expiration"], json!(10_000));
    let gone = call(&mut m, json!({"op": "remove", "lease": lease}), due).unwrap_err();
    assert_eq!(gone.code(), leasehold::ErrorCode::UnknownLease);
}
