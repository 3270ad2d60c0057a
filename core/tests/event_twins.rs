//! Exactness of event tables: twins fed the same calls, one never restored, one restored (JSON or
//! binary, jump 0) at random moments, hand out the same ids and the same events; restore checks
//! what it reads; the restore jump is 0 for an exact restore and a gap for a stale one.

mod common;

use leasehold::event::{Delivery, EventSource, EventTable, GapTracker, DEFAULT_RESTORE_JUMP};
use leasehold::journal::Reader;
use leasehold::{LandlordId, LeaseError};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Register(u64, Vec<u8>),
    Remove(usize),
    Handback(usize, Vec<u8>),
    Next(usize),
    Rebuild(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u64..5, prop::collection::vec(any::<u8>(), 0..6)).prop_map(|(o, h)| Op::Register(o, h)),
        1 => (0usize..16).prop_map(Op::Remove),
        1 => (0usize..16, prop::collection::vec(any::<u8>(), 0..4)).prop_map(|(i, h)| Op::Handback(i, h)),
        6 => (0usize..16).prop_map(Op::Next),
        1 => any::<bool>().prop_map(Op::Rebuild),
    ]
}

fn rebuild(t: &EventTable, binary: bool) -> EventTable {
    let back = if binary {
        let mut b = Vec::new();
        t.write_binary(&mut b);
        let mut r = Reader::new(&b, "t");
        let back = EventTable::read_binary(&mut r).unwrap();
        r.finish().unwrap();
        back
    } else {
        serde_json::from_str(&serde_json::to_string(t).unwrap()).unwrap()
    };
    let back = back.try_restore(0).unwrap();
    assert_eq!(&back, t);
    back
}

fn step(t: &mut EventTable, op: &Op, ids: &[u64]) -> String {
    let pick = |i: usize| if ids.is_empty() { i as u64 } else { ids[i % ids.len()] };
    let src = |o| EventSource { service: LandlordId(7), object: o };
    match op {
        Op::Register(o, h) => format!("{}", t.register(src(*o), h.clone())),
        Op::Remove(i) => format!("{:?}", t.remove(pick(*i))),
        Op::Handback(i, h) => format!("{:?}", t.set_handback(pick(*i), h.clone())),
        Op::Next(i) => format!("{:?} {:?}", t.next_event(pick(*i), *i), t.sequence(pick(*i))),
        Op::Rebuild(_) => String::new(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn restored_event_tables_number_like_the_original(ops in prop::collection::vec(op(), 1..300)) {
        let mut a = EventTable::new();
        let mut b = EventTable::new();
        let mut ids = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            if let Op::Rebuild(binary) = op {
                b = rebuild(&b, *binary);
                continue;
            }
            let sa = step(&mut a, op, &ids);
            let sb = step(&mut b, op, &ids);
            prop_assert_eq!(&sa, &sb, "step {} ({:?})", i, op);
            if let Op::Register(..) = op {
                ids.push(sa.parse().unwrap());
            }
            prop_assert_eq!(&a, &b);
        }
    }

    /// Mutated JSON tables are refused or read back into a table that works; never a panic.
    #[test]
    fn mutated_json_tables_are_refused_or_usable(ms in common::mutations()) {
        let mut t = EventTable::new();
        for o in 0..4 {
            let id = t.register(EventSource { service: LandlordId(1), object: o }, vec![o as u8; 3]);
            t.next_event(id, ());
        }
        let text = common::mutate(&serde_json::to_string(&t).unwrap(), &ms);
        if let Ok(t) = serde_json::from_str::<EventTable>(&text) {
            match t.try_restore(0) {
                Ok(mut t) => {
                    let id = t.register(EventSource { service: LandlordId(1), object: 9 }, vec![]);
                    prop_assert!(id != 0 && t.next_event(id, ()).is_some());
                    for (id, _) in t.clone().iter() {
                        prop_assert!(id != 0);
                        let before = t.sequence(id).unwrap();
                        let e = t.next_event(id, ()).unwrap();
                        prop_assert!(e.sequence > before || before == u64::MAX);
                    }
                }
                Err(LeaseError::Decode(_)) => {}
                Err(e) => prop_assert!(false, "not a decode error: {:?}", e),
            }
        }
    }

    /// Damaged binary tables are refused or read back into a table that works; never a panic.
    #[test]
    fn damaged_binary_tables_are_refused_or_usable(
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4),
    ) {
        let mut t = EventTable::new();
        for o in 0..4 {
            let id = t.register(EventSource { service: LandlordId(1), object: o }, vec![o as u8; 3]);
            t.next_event(id, ());
        }
        let mut b = Vec::new();
        t.write_binary(&mut b);
        for (at, x) in flips {
            let i = at % b.len();
            b[i] ^= x.max(1);
        }
        let mut r = Reader::new(&b, "t");
        match EventTable::read_binary(&mut r) {
            Ok(mut t) => {
                let id = t.register(EventSource { service: LandlordId(1), object: 9 }, vec![]);
                prop_assert!(t.next_event(id, ()).is_some());
                for (id, _) in t.clone().iter() {
                    prop_assert!(id != 0);
                    let _ = t.next_event(id, ());
                }
            }
            Err(LeaseError::Decode(_)) => {}
            Err(e) => prop_assert!(false, "not a decode error: {:?}", e),
        }
    }
}

#[test]
fn restore_refuses_id_zero_and_repeated_ids() {
    let good = r#"{"next_id":3,"registrations":{"1":{"source":{"service":"0000000000000007","object":1},"handback":[1],"sequence":4},"2":{"source":{"service":"0000000000000007","object":2},"handback":[],"sequence":0}}}"#;
    let t: EventTable = serde_json::from_str(good).unwrap();
    assert_eq!(t.sequence(1), Some(4));
    let twice = good.replace(r#""2":{"#, r#""1":{"#);
    let e = serde_json::from_str::<EventTable>(&twice).unwrap_err().to_string();
    assert!(e.contains("appears twice"), "{e}");
    let zero = good.replace(r#""2":{"#, r#""0":{"#);
    let e = serde_json::from_str::<EventTable>(&zero).unwrap_err().to_string();
    assert!(e.contains("event id 0"), "{e}");
    // In the binary form, ids must come in increasing order.
    let mut b = Vec::new();
    t.write_binary(&mut b);
    let first_id_at = 2; // next_id (1 byte), count (1 byte)
    b[first_id_at] = 2;
    let e = EventTable::read_binary(&mut Reader::new(&b, "t")).unwrap_err();
    assert!(e.to_string().contains("after"), "{e}");
}

/// A jump of 0 restores the same numbers (no gap for listeners); a stale snapshot needs a
/// jump, which listeners read as a gap; a number that cannot jump is refused.
#[test]
fn the_restore_jump_is_zero_for_an_exact_restore_and_a_gap_for_a_stale_one() {
    let mut t = EventTable::new();
    let id = t.register(EventSource { service: LandlordId(1), object: 1 }, b"h".to_vec());
    let mut rx = GapTracker::new();
    rx.expect(id, 0);
    let e = t.next_event(id, ()).unwrap();
    assert_eq!(rx.observe(id, e.sequence), Delivery::InOrder);
    let snap = serde_json::to_string(&t).unwrap();

    let mut exact = serde_json::from_str::<EventTable>(&snap).unwrap().try_restore(0).unwrap();
    let e = exact.next_event(id, ()).unwrap();
    assert_eq!(rx.clone().observe(id, e.sequence), Delivery::InOrder);

    let mut stale = serde_json::from_str::<EventTable>(&snap)
        .unwrap()
        .try_restore(DEFAULT_RESTORE_JUMP)
        .unwrap();
    let e = stale.next_event(id, ()).unwrap();
    assert_eq!(rx.observe(id, e.sequence), Delivery::Gap { missed: DEFAULT_RESTORE_JUMP });

    let mut full = EventTable::new();
    let id = full.register(EventSource { service: LandlordId(1), object: 1 }, vec![]);
    for _ in 0..3 {
        full.next_event(id, ());
    }
    assert!(matches!(full.clone().try_restore(u64::MAX - 2), Err(LeaseError::Decode(_))));
    assert!(full.try_restore(u64::MAX - 3).is_ok());
}
