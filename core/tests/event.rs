//! Event registrations and the receiver-side gap tracker (seed 003, LD.3.2).

use leasehold::event::{Delivery, EventSource, EventTable, GapTracker, DEFAULT_RESTORE_JUMP};
use leasehold::LandlordId;

fn src(object: u64) -> EventSource {
    EventSource { service: LandlordId(7), object }
}

#[test]
fn event_ids_are_unique_among_active_registrations() {
    let mut t = EventTable::new();
    let a = t.register(src(1), vec![]);
    let b = t.register(src(1), vec![]);
    let c = t.register(src(2), vec![]);
    assert!(a != b && b != c && a != c);
    t.remove(b);
    let d = t.register(src(3), vec![]);
    assert!(d != a && d != c);
    assert_eq!(t.len(), 3);
    assert_eq!(t.get(d).unwrap().source, src(3));
}

#[test]
fn sequence_numbers_strictly_increase_per_event_id() {
    let mut t = EventTable::new();
    let a = t.register(src(1), vec![]);
    let b = t.register(src(2), vec![]);
    let mut last_a = t.sequence(a).unwrap();
    for i in 0..50u64 {
        let e = t.next_event(a, i).unwrap();
        assert!(e.sequence > last_a);
        assert_eq!(e.sequence, last_a + 1);
        last_a = e.sequence;
        if i % 3 == 0 {
            let eb = t.next_event(b, i).unwrap();
            assert_eq!(eb.event_id, b);
        }
    }
    assert_eq!(t.sequence(b), Some(17));
    assert!(t.next_event(999, ()).is_none());
}

#[test]
fn handback_comes_back_byte_for_byte() {
    let mut t = EventTable::new();
    let bytes: Vec<u8> = (0..=255).collect();
    let id = t.register(src(1), bytes.clone());
    let e = t.next_event(id, ()).unwrap();
    assert_eq!(e.handback, bytes);
    t.set_handback(id, vec![0, 0, 1]).unwrap();
    assert_eq!(t.next_event(id, ()).unwrap().handback, vec![0, 0, 1]);
    assert!(t.set_handback(12345, vec![]).is_err());
    let empty = t.register(src(1), Vec::new());
    assert!(t.next_event(empty, ()).unwrap().handback.is_empty());
}

#[test]
fn restore_jumps_sequence_numbers_and_reads_as_gap() {
    let mut t = EventTable::new();
    let id = t.register(src(1), b"h".to_vec());
    let mut rx = GapTracker::new();
    rx.expect(id, t.sequence(id).unwrap());
    let e = t.next_event(id, ()).unwrap();
    assert_eq!(rx.observe(id, e.sequence), Delivery::InOrder);

    // Snapshot, then events issued after it and lost with the crash.
    let snap = serde_json::to_string(&t).unwrap();
    let lost = t.next_event(id, ()).unwrap();
    assert_eq!(rx.observe(id, lost.sequence), Delivery::InOrder);

    let restored: EventTable = serde_json::from_str(&snap).unwrap();
    let mut restored = restored.restore(DEFAULT_RESTORE_JUMP);
    let after = restored.next_event(id, ()).unwrap();
    assert!(after.sequence > lost.sequence, "no number is issued twice");
    assert_eq!(after.handback, b"h");
    assert!(matches!(rx.observe(id, after.sequence), Delivery::Gap { .. }));
    // New registrations after a restore still get fresh ids.
    let other = restored.register(src(2), vec![]);
    assert_ne!(other, id);
}

#[test]
fn tracker_reports_first_in_order_gap_and_stale() {
    let mut rx = GapTracker::new();
    assert_eq!(rx.observe(5, 10), Delivery::First);
    assert_eq!(rx.observe(5, 11), Delivery::InOrder);
    assert_eq!(rx.observe(5, 15), Delivery::Gap { missed: 3 });
    assert_eq!(rx.observe(5, 15), Delivery::Stale);
    assert_eq!(rx.observe(5, 12), Delivery::Stale);
    assert_eq!(rx.last(5), Some(15));
    assert_eq!(rx.observe(5, 16), Delivery::InOrder);
    // Event ids are tracked independently.
    rx.expect(6, 0);
    assert_eq!(rx.observe(6, 1), Delivery::InOrder);
    rx.forget(6);
    assert_eq!(rx.last(6), None);
    assert_eq!(rx.observe(6, 9), Delivery::First);
}
