//! The renewal service's outbox: events are delivered at least once across a crash.
//!
//! An event handed out by `poll_event` stays in its registration's outbox until the host reports
//! it `delivered`; a service rebuilt from its snapshot and journal (or restored from JSON) hands
//! out again, in sequence order, exactly the events handed out and not reported. All in virtual
//! time.

use leasehold::journal::{self, write_snapshot, KIND_RENEWAL_SERVICE};
use leasehold::policy::Bounded;
use leasehold::service::{
    RenewalService, RenewalServiceConfig, ServiceSnapshot, SetEvent, SetEventKind, SetId,
    MAX_UNACKED_EVENTS,
};
use leasehold::{Landlord, LandlordConfig, LandlordId, Lease, Millis, FOREVER};

const MIN: i64 = 60_000;
const SERVICE: LandlordId = LandlordId(99);

struct World {
    svc: RenewalService,
    ll: Landlord,
    now: Millis,
    /// The binary snapshot the journal follows, and the log written since.
    snapshot: Vec<u8>,
    log: Vec<u8>,
}

impl World {
    fn new() -> World {
        let mut svc = RenewalService::new(RenewalServiceConfig::new(SERVICE, [2; 32])).unwrap();
        svc.enable_journal();
        let mut snapshot = Vec::new();
        svc.snapshot_bytes(&mut snapshot);
        let ll = Landlord::new(
            LandlordConfig::new(LandlordId(1), [1; 32]),
            Bounded::new(MIN, MIN).unwrap(),
        );
        World { svc, ll, now: 0, snapshot, log: Vec::new() }
    }

    fn lease(&mut self) -> Lease {
        let g = self.ll.grant(b"r".to_vec(), MIN, self.now).unwrap();
        Lease::new(LandlordId(1), g.cookie, g.expiration)
    }

    /// Runs virtual time to `to`: time-outs, renewals carried to the landlord and back.
    fn run(&mut self, to: Millis) {
        while let Some(t) = self.svc.poll_timeout() {
            if t > to {
                break;
            }
            self.now = self.now.max(t);
            self.svc.handle_timeout(self.now);
            self.ll.handle_timeout(self.now);
            while let Some(tx) = self.svc.poll_transmit(self.now) {
                let reply = self.ll.handle_request(&tx.request, self.now);
                self.svc.handle_reply(&reply, self.now);
            }
        }
        self.now = self.now.max(to);
        self.sync();
    }

    fn sync(&mut self) {
        self.svc.take_journal(&mut self.log);
    }

    fn events(&mut self) -> Vec<SetEvent> {
        let out = std::iter::from_fn(|| self.svc.poll_event()).collect();
        self.sync();
        out
    }

    /// The process dies; a new one recovers from the snapshot and the log.
    fn crash(&mut self) {
        self.sync();
        let (svc, rec) = RenewalService::recover(&self.snapshot, &[&self.log], self.now).unwrap();
        assert_eq!(rec.torn, None);
        self.svc = svc;
        self.sync();
    }

    /// A compaction: the snapshot holds everything, the log starts again.
    fn compact(&mut self) {
        self.sync();
        self.snapshot.clear();
        self.svc.snapshot_bytes(&mut self.snapshot);
        self.log.clear();
    }
}

fn ids(events: &[SetEvent]) -> Vec<(u64, u64)> {
    events.iter().map(|e| (e.event_id, e.sequence)).collect()
}

/// A set with both listeners and `n` client leases the landlord then forgets: `n` renewal
/// failures come out.
fn failing(w: &mut World, n: usize) -> (SetId, u64, u64) {
    let (set, _) = w.svc.create_set(FOREVER, w.now).unwrap();
    let fail = w.svc.set_renewal_failure_listener(set, b"f".to_vec(), w.now).unwrap();
    let warn = w.svc.set_expiration_warning_listener(set, MIN, b"w".to_vec(), w.now).unwrap();
    let leases: Vec<Lease> = (0..n).map(|_| w.lease()).collect();
    for l in &leases {
        w.svc.add(set, *l, FOREVER, MIN, w.now).unwrap();
    }
    for l in &leases {
        w.ll.cancel(l.cookie(), w.now).unwrap();
    }
    w.run(w.now + MIN);
    (set, fail.event_id, warn.event_id)
}

#[test]
fn events_handed_out_and_not_delivered_come_back_after_a_crash() {
    let mut w = World::new();
    let (_, fail, _) = failing(&mut w, 4);
    let first = w.events();
    assert_eq!(ids(&first), vec![(fail, 1), (fail, 2), (fail, 3), (fail, 4)]);
    assert_eq!(w.svc.unacked_events(), 4);
    // The listener took 1 and 3; 2 and 4 were on their way when the process died.
    assert!(w.svc.delivered(fail, 1, w.now));
    assert!(w.svc.delivered(fail, 3, w.now));
    assert!(!w.svc.delivered(fail, 3, w.now), "reported once");
    assert!(!w.svc.delivered(fail, 9, w.now), "never handed out");
    assert_eq!(w.svc.unacked_events(), 2);
    w.crash();

    let again = w.events();
    assert_eq!(ids(&again), vec![(fail, 2), (fail, 4)], "in sequence order, the delivered not");
    assert_eq!(again[0], first[1], "the same event, byte for byte");
    assert_eq!(again[1], first[3]);
    // Not reported again before the next crash: handed out once more.
    w.crash();
    assert_eq!(ids(&w.events()), vec![(fail, 2), (fail, 4)]);
    assert!(w.svc.delivered(fail, 2, w.now));
    assert!(w.svc.delivered(fail, 4, w.now));
    w.crash();
    assert!(w.events().is_empty(), "every event delivered");
    assert_eq!(w.svc.unacked_events(), 0);
}

#[test]
fn the_outbox_is_in_both_snapshot_forms() {
    let mut w = World::new();
    let (_, fail, _) = failing(&mut w, 3);
    assert_eq!(w.events().len(), 3);
    assert!(w.svc.delivered(fail, 2, w.now));
    // In the binary snapshot (the log after it is empty).
    w.compact();
    assert!(w.log.is_empty());
    w.crash();
    assert_eq!(ids(&w.events()), vec![(fail, 1), (fail, 3)]);
    // In the JSON snapshot, restored exactly: handed out again at once.
    let text = w.svc.snapshot(w.now).to_json();
    assert!(text.contains("\"unacked\""), "{text}");
    let snap = ServiceSnapshot::from_json(&text).unwrap();
    let mut config = RenewalServiceConfig::new(SERVICE, [2; 32]);
    config.restore_jump = 0;
    let mut back = RenewalService::restore(config, snap, w.now).unwrap();
    let again: Vec<SetEvent> = std::iter::from_fn(|| back.poll_event()).collect();
    assert_eq!(ids(&again), vec![(fail, 1), (fail, 3)]);
    // A snapshot with nothing in the outbox writes no `unacked` (as before the outbox).
    assert!(back.delivered(fail, 1, w.now) && back.delivered(fail, 3, w.now));
    assert!(!back.snapshot(w.now).to_json().contains("unacked"));
}

#[test]
fn expiration_warnings_come_back_too() {
    let mut w = World::new();
    let (set, lease) = w.svc.create_set(10 * MIN, 0).unwrap();
    let warn = w.svc.set_expiration_warning_listener(set, 2 * MIN, b"w".to_vec(), 0).unwrap();
    w.run(8 * MIN);
    let e = w.events();
    assert_eq!(ids(&e), vec![(warn.event_id, 1)]);
    assert!(matches!(e[0].kind, SetEventKind::ExpirationWarning { expiration, .. }
        if expiration == lease.expiration()));
    w.crash();
    let again = w.events();
    assert_eq!(ids(&again), vec![(warn.event_id, 1)]);
    // The set's lease did not count the time down (none here): the same expiration.
    assert_eq!(again[0].kind, e[0].kind);
    assert!(w.svc.delivered(warn.event_id, 1, w.now));
    w.crash();
    assert!(w.events().is_empty());
}

#[test]
fn a_registration_that_ends_drops_its_outbox() {
    let mut w = World::new();
    let (set, fail, _) = failing(&mut w, 2);
    assert_eq!(w.events().len(), 2);
    w.svc.clear_renewal_failure_listener(set, w.now).unwrap();
    assert_eq!(w.svc.unacked_events(), 0);
    assert!(!w.svc.delivered(fail, 1, w.now), "the registration ended");
    w.crash();
    assert!(w.events().is_empty());

    // An unknown event and a cancelled set end theirs too.
    let (_, fail, _) = failing(&mut w, 2);
    assert_eq!(w.events().len(), 2);
    assert!(w.svc.unknown_event(fail));
    assert_eq!(w.svc.unacked_events(), 0);
    let (set2, _, _) = failing(&mut w, 1);
    assert_eq!(w.events().len(), 1);
    let cookie = w.svc.set_lease(set2, w.now).unwrap().cookie();
    let cancel = leasehold::Request { id: 1, body: leasehold::RequestBody::Cancel { cookie } };
    w.svc.handle_request(&cancel, w.now);
    assert_eq!(w.svc.unacked_events(), 0);
    w.crash();
    assert!(w.events().is_empty());
}

#[test]
fn the_outbox_of_a_registration_is_bounded() {
    let mut w = World::new();
    let n = MAX_UNACKED_EVENTS + 6;
    let (_, fail, _) = failing(&mut w, n);
    let first = w.events();
    assert_eq!(first.len(), n, "every event is handed out");
    assert_eq!(w.svc.unacked_events(), MAX_UNACKED_EVENTS);
    assert_eq!(w.svc.unacked_dropped(), 6, "the oldest dropped, counted");
    assert!(!w.svc.delivered(fail, 1, w.now), "dropped from the outbox");
    w.crash();
    let again = w.events();
    assert_eq!(again.len(), MAX_UNACKED_EVENTS);
    assert_eq!(again[0].sequence, 7, "the newest are kept");
    assert_eq!(again.last().unwrap().sequence, n as u64);
}

/// Binary snapshots of version 2 (before the outbox) still read, with an empty outbox.
#[test]
fn version_2_binary_snapshots_still_read() {
    let mut w = World::new();
    failing(&mut w, 2);
    let events = w.events();
    for e in &events {
        assert!(w.svc.delivered(e.event_id, e.sequence, w.now));
    }
    let mut bytes = Vec::new();
    w.svc.snapshot_bytes(&mut bytes);
    let snap = journal::read_snapshot(&bytes).unwrap();
    assert_eq!(snap.version, 3);
    // Version 3 appends the outbox (here empty: one count byte) to a version 2 body.
    assert_eq!(snap.body.last(), Some(&0));
    let mut v2 = Vec::new();
    let body = &snap.body[..snap.body.len() - 1];
    write_snapshot(&mut v2, KIND_RENEWAL_SERVICE, 2, snap.seq, body);
    let old = RenewalService::from_snapshot_bytes(&v2).unwrap();
    let t = w.svc.now();
    assert_eq!(old.snapshot(t), w.svc.snapshot(t));
    // A version 3 snapshot with its outbox cut off is damage, not an old version.
    let mut cut = Vec::new();
    write_snapshot(&mut cut, KIND_RENEWAL_SERVICE, 3, snap.seq, body);
    assert!(RenewalService::from_snapshot_bytes(&cut).is_err());
}

/// A snapshot whose outbox does not fit its registrations is refused.
#[test]
fn an_outbox_that_does_not_fit_is_refused() {
    let mut w = World::new();
    let (_, fail, _) = failing(&mut w, 2);
    assert_eq!(w.events().len(), 2);
    let text = w.svc.snapshot(w.now).to_json();
    let config = || {
        let mut c = RenewalServiceConfig::new(SERVICE, [2; 32]);
        c.restore_jump = 0;
        c
    };
    let restore = |t: &str| {
        ServiceSnapshot::from_json(t).and_then(|s| RenewalService::restore(config(), s, 0))
    };
    assert!(restore(&text).is_ok());
    // Out of order.
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let u = v["unacked"].as_array_mut().unwrap();
    u.swap(0, 1);
    assert!(restore(&v.to_string()).is_err());
    // Of a registration that is not active.
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["unacked"][0]["event_id"] = (fail + 100).into();
    assert!(restore(&v.to_string()).is_err());
    // Numbered past its registration.
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["unacked"][1]["sequence"] = 7.into();
    assert!(restore(&v.to_string()).is_err());
}
