//! The lease renewal service (seed 003, LR) in virtual time, against real landlords.

use std::collections::{BTreeMap, BTreeSet};

use leasehold::policy::{Bounded, Fixed};
use leasehold::service::{RenewalService, RenewalServiceConfig, SetEvent, SetEventKind, SetId};
use leasehold::wire::{ReplyBody, Request, RequestBody};
use leasehold::{
    Cookie, Duration, Encoding, Landlord, LandlordConfig, LandlordId, Lease, LeaseError, Millis,
    PolicySpec, ANY, FOREVER,
};

const SEC: i64 = 1_000;
const MIN: i64 = 60 * SEC;
const HOUR: i64 = 60 * MIN;
const SERVICE: LandlordId = LandlordId(0x5e);

/// A renewal service, two landlords of client leases, and an instant network between them.
struct World {
    now: Millis,
    svc: RenewalService,
    lls: BTreeMap<LandlordId, Landlord>,
    /// Landlords the network cannot reach: requests to them fail indefinitely.
    down: BTreeSet<LandlordId>,
    /// Every request the service sent: when, to whom, what.
    sent: Vec<(Millis, LandlordId, RequestBody)>,
    /// Every event the service gave out, with the time.
    events: Vec<(Millis, SetEvent)>,
}

fn client_landlord(id: u64) -> Landlord {
    Landlord::new(
        LandlordConfig::new(LandlordId(id), [id as u8; 32]),
        Bounded::new(10 * MIN, MIN).unwrap(),
    )
}

impl World {
    fn new() -> World {
        World::with_config(RenewalServiceConfig::new(SERVICE, [9; 32]))
    }

    fn with_config(config: RenewalServiceConfig) -> World {
        let mut lls = BTreeMap::new();
        for id in [1, 2] {
            lls.insert(LandlordId(id), client_landlord(id));
        }
        World {
            now: 0,
            svc: RenewalService::new(config).unwrap(),
            lls,
            down: BTreeSet::new(),
            sent: Vec::new(),
            events: Vec::new(),
        }
    }

    /// A client lease of landlord `ll` for `d` ms from now.
    fn grant(&mut self, ll: u64, d: Duration) -> Lease {
        let g =
            self.lls.get_mut(&LandlordId(ll)).unwrap().grant(b"r".to_vec(), d, self.now).unwrap();
        Lease::new(LandlordId(ll), g.cookie, g.expiration)
    }

    fn alive(&self, lease: &Lease) -> bool {
        self.lls[&lease.landlord()].get(lease.cookie(), self.now).is_some()
    }

    /// Delivers every pending request and collects every event.
    fn pump(&mut self) {
        while let Some(tx) = self.svc.poll_transmit(self.now) {
            self.sent.push((self.now, tx.landlord, tx.request.body.clone()));
            if self.down.contains(&tx.landlord) {
                let e = LeaseError::Indefinite("landlord unreachable".into());
                self.svc.handle_failure(tx.request.id, e, self.now);
            } else {
                let ll = self.lls.get_mut(&tx.landlord).expect("known landlord");
                let reply = ll.handle_request(&tx.request, self.now);
                self.svc.handle_reply(&reply, self.now);
            }
        }
        while let Some(e) = self.svc.poll_event() {
            // Delivered at once: the host reports it, so a restore does not hand it out again.
            assert!(self.svc.delivered(e.event_id, e.sequence, self.now));
            self.events.push((self.now, e));
        }
    }

    fn tick(&mut self, now: Millis) {
        self.now = now;
        self.svc.handle_timeout(now);
        for ll in self.lls.values_mut() {
            ll.handle_timeout(now);
            while ll.poll_expired().is_some() {}
        }
        self.pump();
    }

    /// Runs virtual time to `to`, waking at every time-out on the way.
    fn advance(&mut self, to: Millis) {
        self.pump();
        for _ in 0..1_000_000 {
            let next = self
                .lls
                .values()
                .filter_map(|l| l.poll_timeout())
                .chain(self.svc.poll_timeout())
                .min();
            match next {
                Some(t) if t <= to => self.tick(t.max(self.now)),
                _ => {
                    self.tick(to);
                    return;
                }
            }
        }
        panic!("time does not advance at {}", self.now);
    }

    /// Renewal requests for `lease`: (send time, requested duration).
    fn renewals(&self, lease: &Lease) -> Vec<(Millis, Duration)> {
        let mut out = Vec::new();
        for (t, ll, body) in &self.sent {
            if *ll != lease.landlord() {
                continue;
            }
            match body {
                RequestBody::Renew { cookie, duration } if *cookie == lease.cookie() => {
                    out.push((*t, *duration))
                }
                RequestBody::RenewAll { items } => out.extend(
                    items.iter().filter(|(c, _)| *c == lease.cookie()).map(|(_, d)| (*t, *d)),
                ),
                _ => {}
            }
        }
        out
    }

    fn cancels_sent(&self) -> usize {
        self.sent
            .iter()
            .filter(|(_, _, b)| {
                matches!(b, RequestBody::Cancel { .. } | RequestBody::CancelAll { .. })
            })
            .count()
    }

    /// Sends a request about a set lease to the service, as a client would.
    fn set_request(&mut self, body: RequestBody) -> ReplyBody {
        let reply = self.svc.handle_request(&Request { id: 77, body }, self.now);
        assert_eq!(reply.id, 77);
        assert_eq!(reply.landlord, SERVICE);
        self.pump();
        reply.body
    }

    fn failures(&self) -> Vec<(Millis, SetId, Lease, Option<LeaseError>)> {
        self.events
            .iter()
            .filter_map(|(t, e)| match &e.kind {
                SetEventKind::RenewalFailure { set, lease, error } => {
                    Some((*t, *set, *lease, error.clone()))
                }
                _ => None,
            })
            .collect()
    }

    fn warnings(&self) -> Vec<(Millis, &SetEvent)> {
        self.events
            .iter()
            .filter(|(_, e)| matches!(e.kind, SetEventKind::ExpirationWarning { .. }))
            .map(|(t, e)| (*t, e))
            .collect()
    }
}

fn invalid<T: std::fmt::Debug>(r: Result<T, LeaseError>) -> bool {
    matches!(r, Err(LeaseError::InvalidArgument(_)))
}

#[test]
fn set_leases_follow_the_default_policy() {
    let mut w = World::new();
    let (_, l) = w.svc.create_set(ANY, 0).unwrap();
    assert_eq!(l.expiration(), HOUR);
    assert_eq!(l.landlord(), SERVICE);
    let (_, l) = w.svc.create_set(3 * HOUR, 0).unwrap();
    assert_eq!(l.expiration(), 2 * HOUR);
    let (_, l) = w.svc.create_set(FOREVER, 0).unwrap();
    assert_eq!(l.expiration(), 2 * HOUR);
    let (_, l) = w.svc.create_set(10 * SEC, 5).unwrap();
    assert_eq!(l.expiration(), 10 * SEC + 5);
    assert!(invalid(w.svc.create_set(-5, 0)));
    assert!(invalid(w.svc.create_set(0, 0)));
    assert_eq!(w.svc.sets().len(), 4);

    let mut config = RenewalServiceConfig::new(SERVICE, [3; 32]);
    config.set_policy = PolicySpec::Fixed { duration: 5 * MIN };
    let mut w = World::with_config(config);
    let (set, l) = w.svc.create_set(ANY, 0).unwrap();
    assert_eq!(l.expiration(), 5 * MIN);
    assert_eq!(w.svc.set_of(&l, 0), Some(set));
    assert_eq!(w.svc.set_lease(set, 0).unwrap().expiration(), 5 * MIN);
    // A bad policy is refused when the service is made.
    let mut bad = RenewalServiceConfig::new(SERVICE, [3; 32]);
    bad.set_policy = PolicySpec::Bounded { max: MIN, default: HOUR };
    assert!(invalid(RenewalService::new(bad).map(|_| ())));
    let _ = Fixed::new(1).unwrap();
}

#[test]
fn add_checks_the_lr_rules() {
    let mut w = World::new();
    let (set, set_lease) = w.svc.create_set(HOUR, 0).unwrap();
    let (_, other_set_lease) = w.svc.create_set(HOUR, 0).unwrap();
    let l = w.grant(1, MIN);
    // ANY only with a FOREVER membership.
    assert!(invalid(w.svc.add(set, l, HOUR, ANY, 0)));
    w.svc.add(set, l, FOREVER, ANY, 0).unwrap();
    // Otherwise positive or FOREVER.
    assert!(invalid(w.svc.add(set, l, HOUR, 0, 0)));
    assert!(invalid(w.svc.add(set, l, HOUR, -7, 0)));
    assert!(invalid(w.svc.add(set, l, FOREVER, -2, 0)));
    w.svc.add(set, l, HOUR, FOREVER, 0).unwrap();
    w.svc.add(set, l, HOUR, MIN, 0).unwrap();
    // A set lease of this service cannot go into one of its sets, not even another set's.
    assert!(invalid(w.svc.add(set, set_lease, HOUR, MIN, 0)));
    assert!(invalid(w.svc.add(set, other_set_lease, HOUR, MIN, 0)));
    // Unknown sets.
    assert_eq!(w.svc.add(SetId(999), l, HOUR, MIN, 0), Err(LeaseError::UnknownLease));
    assert_eq!(w.svc.leases(SetId(999), 0), Err(LeaseError::UnknownLease));
    assert_eq!(w.svc.remove(SetId(999), &l, 0), Err(LeaseError::UnknownLease));
    assert_eq!(w.svc.leases(set, 0).unwrap(), vec![l]);
    let m = w.svc.membership(set, &l, 0).unwrap().unwrap();
    assert_eq!((m.expiration, m.renew_duration), (HOUR, MIN));
    // A rejected add changes nothing.
    assert!(invalid(w.svc.add(set, l, 5, ANY, 0)));
    assert_eq!(w.svc.membership(set, &l, 0).unwrap().unwrap().expiration, HOUR);
}

#[test]
fn membership_of_zero_or_less_drops_out_at_once() {
    let mut w = World::new();
    let (set, _) = w.svc.create_set(HOUR, 0).unwrap();
    let a = w.grant(1, MIN);
    let b = w.grant(1, MIN);
    w.svc.add(set, a, 0, MIN, 0).unwrap();
    w.svc.add(set, b, -5 * MIN, MIN, 0).unwrap();
    assert!(w.svc.leases(set, 0).unwrap().is_empty());
    // Re-adding with zero membership takes a member out, silently.
    let c = w.grant(2, MIN);
    w.svc.add(set, c, HOUR, MIN, 0).unwrap();
    assert_eq!(w.svc.leases(set, 0).unwrap(), vec![c]);
    w.svc.add(set, c, 0, MIN, 0).unwrap();
    assert!(w.svc.leases(set, 0).unwrap().is_empty());
    w.advance(5 * MIN);
    assert!(w.renewals(&a).is_empty() && w.renewals(&b).is_empty() && w.renewals(&c).is_empty());
    assert!(w.events.is_empty());
    assert!(w.svc.manager().is_empty());
}

#[test]
fn renews_until_the_membership_then_leaves_silently() {
    let mut w = World::new();
    let (set, _) = w.svc.create_set(HOUR, 0).unwrap();
    w.svc.set_renewal_failure_listener(set, b"f".to_vec(), 0).unwrap();
    let l = w.grant(1, MIN);
    let membership = 10 * MIN + 30 * SEC;
    w.svc.add(set, l, membership, MIN, 0).unwrap();
    for m in 1..=10 {
        w.advance(m * MIN);
        assert!(w.alive(&l), "client lease alive at minute {m}");
        assert_eq!(w.svc.leases(set, w.now).unwrap().len(), 1);
    }
    // One more step to just before the membership ends.
    w.advance(membership - 1);
    assert!(w.alive(&l));
    let renewals = w.renewals(&l);
    assert!(renewals.len() >= 10, "{renewals:?}");
    for &(t, d) in &renewals {
        // The renew duration, until less membership remains; then the remainder.
        assert_eq!(d, MIN.min(membership - t), "request at {t}");
        assert!(t < membership);
    }
    assert!(renewals.iter().any(|&(_, d)| d < MIN), "the last renewal asks for the remainder");
    w.advance(membership);
    assert!(w.svc.leases(set, w.now).unwrap().is_empty(), "gone at its desired expiration");
    w.advance(20 * MIN);
    assert_eq!(w.renewals(&l).len(), renewals.len(), "no renewal after the membership");
    assert!(!w.alive(&l));
    assert!(w.events.is_empty(), "a reached membership removes silently: {:?}", w.events);
    assert_eq!(w.cancels_sent(), 0);
}

#[test]
fn any_is_passed_through_as_any() {
    let mut w = World::new();
    let (set, _) = w.svc.create_set(2 * HOUR, 0).unwrap();
    let l = w.grant(1, MIN);
    w.svc.add(set, l, FOREVER, ANY, 0).unwrap();
    w.advance(HOUR);
    assert!(w.alive(&l));
    let r = w.renewals(&l);
    assert!(r.len() >= 50, "{}", r.len());
    assert!(r.iter().all(|&(_, d)| d == ANY));
}

#[test]
fn an_expired_set_stops_renewing_and_leaves_live_sets_alone() {
    let mut w = World::new();
    let (short, _) = w.svc.create_set(5 * MIN, 0).unwrap();
    let (long, long_lease) = w.svc.create_set(2 * HOUR, 0).unwrap();
    w.svc.set_renewal_failure_listener(short, vec![1], 0).unwrap();
    let w_reg = w.svc.set_expiration_warning_listener(short, 0, vec![2], 0).unwrap();
    let a = w.grant(1, MIN);
    let b = w.grant(1, MIN);
    let c = w.grant(2, MIN);
    w.svc.add(short, a, FOREVER, MIN, 0).unwrap();
    w.svc.add(long, b, FOREVER, MIN, 0).unwrap();
    w.svc.add(long, c, FOREVER, MIN, 0).unwrap();
    w.advance(30 * MIN);
    let last_a = w.renewals(&a).last().map(|r| r.0).unwrap();
    assert!(last_a <= 5 * MIN, "no renewal of a after its set expired (last at {last_a})");
    assert!(!w.alive(&a));
    assert!(w.alive(&b) && w.alive(&c));
    assert_eq!(w.svc.leases(short, w.now), Err(LeaseError::UnknownLease));
    assert_eq!(w.svc.leases(long, w.now).unwrap().len(), 2);
    assert_eq!(w.svc.sets(), vec![long]);
    // The destroyed set's registrations ended with it; no failure event for its lease.
    assert!(w.failures().is_empty());
    assert!(!w.svc.unknown_event(w_reg.event_id));
    // The live set's lease still renews over the wire.
    match w.set_request(RequestBody::Renew { cookie: long_lease.cookie(), duration: HOUR }) {
        ReplyBody::Renewed { duration } => assert_eq!(duration, HOUR),
        other => panic!("{other:?}"),
    }
    assert_eq!(w.svc.set_lease(long, w.now).unwrap().expiration(), w.now + HOUR);
}

#[test]
fn cancelling_a_set_lease_destroys_the_set() {
    let mut w = World::new();
    let (set, sl) = w.svc.create_set(HOUR, 0).unwrap();
    let l = w.grant(1, MIN);
    w.svc.add(set, l, FOREVER, MIN, 0).unwrap();
    w.advance(3 * MIN);
    assert!(w.alive(&l));
    let before = w.renewals(&l).len();
    assert_eq!(w.set_request(RequestBody::Cancel { cookie: sl.cookie() }), ReplyBody::Cancelled);
    assert_eq!(w.svc.leases(set, w.now), Err(LeaseError::UnknownLease));
    assert!(matches!(
        w.set_request(RequestBody::Renew { cookie: sl.cookie(), duration: HOUR }),
        ReplyBody::Error(e) if e.to_error() == LeaseError::UnknownLease
    ));
    w.advance(20 * MIN);
    assert_eq!(w.renewals(&l).len(), before);
    assert!(!w.alive(&l));
    assert!(w.svc.manager().is_empty());
    assert_eq!(w.cancels_sent(), 0, "the service never cancels a client lease");
    // Grant requests are refused; the encoded path answers like the structured one.
    assert!(matches!(
        w.set_request(RequestBody::Grant { resource: vec![], duration: HOUR }),
        ReplyBody::Error(e) if e.to_error().code() == leasehold::ErrorCode::InvalidArgument
    ));
    let (_, sl2) = w.svc.create_set(HOUR, w.now).unwrap();
    let req =
        Request { id: 5, body: RequestBody::CancelAll { cookies: vec![sl2.cookie(), Cookie(1)] } };
    let bytes = w.svc.handle_bytes(&req.encode(Encoding::Binary), Encoding::Binary, w.now);
    let reply = leasehold::Reply::decode(&bytes, Encoding::Binary, &Default::default()).unwrap();
    match reply.body {
        ReplyBody::CancelledAll { results } => {
            assert!(results[0].to_result().is_ok());
            assert_eq!(results[1].to_result(), Err(LeaseError::UnknownLease));
        }
        other => panic!("{other:?}"),
    }
    assert!(w.svc.sets().is_empty());
}

#[test]
fn a_lease_in_two_sets_is_renewed_for_the_longer_membership() {
    let mut w = World::new();
    let (a, _) = w.svc.create_set(2 * HOUR, 0).unwrap();
    let (b, b_lease) = w.svc.create_set(2 * HOUR, 0).unwrap();
    let l = w.grant(1, MIN);
    w.svc.add(a, l, 5 * MIN, MIN, 0).unwrap();
    w.svc.add(b, l, 20 * MIN, MIN, 0).unwrap();
    assert_eq!(w.svc.manager().len(), 1, "the manager holds the lease once");
    assert_eq!(w.svc.manager().expiration(&l), Ok(20 * MIN));
    w.advance(10 * MIN);
    assert!(w.alive(&l));
    assert!(w.svc.leases(a, w.now).unwrap().is_empty(), "left a at a's membership");
    assert_eq!(w.svc.leases(b, w.now).unwrap(), vec![l]);
    // Destroying b stops the renewals.
    assert_eq!(
        w.set_request(RequestBody::Cancel { cookie: b_lease.cookie() }),
        ReplyBody::Cancelled
    );
    let n = w.renewals(&l).len();
    w.advance(30 * MIN);
    assert_eq!(w.renewals(&l).len(), n);
    assert!(!w.alive(&l));
    assert!(w.events.is_empty());
}

#[test]
fn removing_from_one_set_falls_back_to_the_other_membership() {
    let mut w = World::new();
    let (a, _) = w.svc.create_set(2 * HOUR, 0).unwrap();
    let (b, _) = w.svc.create_set(2 * HOUR, 0).unwrap();
    let l = w.grant(1, MIN);
    w.svc.add(a, l, 8 * MIN, MIN, 0).unwrap();
    w.svc.add(b, l, HOUR, 2 * MIN, 0).unwrap();
    assert_eq!(w.svc.manager().renew_duration(&l), Ok(2 * MIN));
    w.advance(3 * MIN);
    let removed = w.svc.remove(b, &l, w.now).unwrap().unwrap();
    assert!(removed.expiration() > w.now, "removal hands back the renewed copy");
    assert_eq!(w.svc.remove(b, &l, w.now), Ok(None));
    assert_eq!(w.svc.manager().expiration(&l), Ok(8 * MIN));
    assert_eq!(w.svc.manager().renew_duration(&l), Ok(MIN));
    w.advance(30 * MIN);
    assert!(w.renewals(&l).iter().all(|&(t, _)| t < 8 * MIN));
    assert!(!w.alive(&l));
    assert_eq!(w.cancels_sent(), 0);
}

#[test]
fn remove_never_cancels() {
    let mut w = World::new();
    let (set, _) = w.svc.create_set(HOUR, 0).unwrap();
    let l = w.grant(1, 10 * MIN);
    w.svc.add(set, l, FOREVER, 10 * MIN, 0).unwrap();
    w.advance(MIN);
    let back = w.svc.remove(set, &l, w.now).unwrap().unwrap();
    assert_eq!(back, l);
    assert_eq!(back.expiration(), 10 * MIN);
    w.advance(9 * MIN);
    assert!(w.alive(&l), "still held at its landlord until its own expiration");
    w.advance(11 * MIN);
    assert!(!w.alive(&l));
    assert!(w.renewals(&l).is_empty());
    assert_eq!(w.cancels_sent(), 0);
}

#[test]
fn re_adding_updates_the_membership() {
    let mut w = World::new();
    let (set, _) = w.svc.create_set(HOUR, 0).unwrap();
    let l = w.grant(1, MIN);
    w.svc.add(set, l, 30 * MIN, MIN, 0).unwrap();
    w.advance(2 * MIN);
    w.svc.add(set, l, 3 * MIN, 30 * SEC, w.now).unwrap();
    let m = w.svc.membership(set, &l, w.now).unwrap().unwrap();
    assert_eq!((m.expiration, m.renew_duration), (5 * MIN, 30 * SEC));
    w.advance(20 * MIN);
    let r = w.renewals(&l);
    assert!(r.iter().all(|&(t, _)| t < 5 * MIN));
    assert!(r.iter().filter(|&&(t, _)| t > 2 * MIN).all(|&(_, d)| d <= 30 * SEC));
    assert!(!w.alive(&l));
    assert!(w.events.is_empty());
}

#[test]
fn definite_failure_makes_one_attempt_and_one_event() {
    let mut w = World::new();
    let (set, _) = w.svc.create_set(HOUR, 0).unwrap();
    let handback: Vec<u8> = vec![0, 255, 7, 0];
    let reg = w.svc.set_renewal_failure_listener(set, handback.clone(), 0).unwrap();
    assert_eq!(reg.sequence, 0);
    assert_eq!(reg.source.object, set.0);
    let doomed = w.grant(1, MIN);
    let fine = w.grant(1, MIN);
    w.svc.add(set, doomed, FOREVER, MIN, 0).unwrap();
    w.svc.add(set, fine, FOREVER, MIN, 0).unwrap();
    w.advance(5 * MIN);
    // The landlord forgets the lease behind the service's back.
    let t_cancel = w.now;
    w.lls.get_mut(&LandlordId(1)).unwrap().cancel(doomed.cookie(), w.now).unwrap();
    w.advance(30 * MIN);
    let after: Vec<_> = w.renewals(&doomed).into_iter().filter(|&(t, _)| t > t_cancel).collect();
    assert_eq!(after.len(), 1, "exactly one attempt after a definite failure: {after:?}");
    let f = w.failures();
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].1, f[0].2), (set, doomed));
    assert_eq!(f[0].3, Some(LeaseError::UnknownLease));
    let ev = &w.events[0].1;
    assert_eq!((ev.event_id, ev.sequence), (reg.event_id, 1));
    assert_eq!(ev.handback, handback);
    assert_eq!(ev.source, reg.source);
    assert_eq!(w.svc.leases(set, w.now).unwrap(), vec![fine]);
    assert!(w.alive(&fine));
}

/// Grants anything, denies every renewal.
struct DenyRenewals;

impl leasehold::LeasePolicy for DenyRenewals {
    fn grant(
        &mut self,
        requested: Duration,
        _: &leasehold::PolicyContext,
    ) -> Result<Duration, LeaseError> {
        Ok(if requested == ANY { MIN } else { requested.min(10 * MIN) })
    }
    fn renew(
        &mut self,
        _: Duration,
        _: Millis,
        _: &leasehold::PolicyContext,
    ) -> Result<Duration, LeaseError> {
        Err(LeaseError::LeaseDenied("no renewals here".into()))
    }
}

#[test]
fn a_denied_renewal_is_definite() {
    let mut w = World::new();
    let mut strict = Landlord::new(LandlordConfig::new(LandlordId(3), [3; 32]), DenyRenewals);
    let g = strict.grant(vec![], MIN, 0).unwrap();
    let l = Lease::new(LandlordId(3), g.cookie, g.expiration);
    w.lls.insert(LandlordId(3), strict);
    let (set, _) = w.svc.create_set(HOUR, 0).unwrap();
    w.svc.set_renewal_failure_listener(set, vec![], 0).unwrap();
    w.svc.add(set, l, FOREVER, MIN, 0).unwrap();
    w.advance(10 * MIN);
    assert_eq!(w.renewals(&l).len(), 1, "one attempt");
    let f = w.failures();
    assert_eq!(f.len(), 1);
    assert!(matches!(f[0].3, Some(LeaseError::LeaseDenied(_))));
    assert!(f[0].0 < MIN, "reported at the attempt, before the lease ran out");
    assert!(w.svc.leases(set, w.now).unwrap().is_empty());
}

#[test]
fn indefinite_failures_retry_until_the_actual_expiration_then_one_event() {
    let mut w = World::new();
    let (set, _) = w.svc.create_set(HOUR, 0).unwrap();
    w.svc.set_renewal_failure_listener(set, b"hb".to_vec(), 0).unwrap();
    let l = w.grant(2, 2 * MIN);
    let ok = w.grant(1, 2 * MIN);
    w.svc.add(set, l, FOREVER, MIN, 0).unwrap();
    w.svc.add(set, ok, FOREVER, MIN, 0).unwrap();
    w.down.insert(LandlordId(2));
    w.advance(20 * MIN);
    let attempts = w.renewals(&l);
    assert!(attempts.len() >= 3, "retried: {attempts:?}");
    let f = w.failures();
    assert_eq!(f.len(), 1, "{f:?}");
    let (t, s, lease, error) = &f[0];
    assert_eq!((*s, *lease), (set, l));
    assert!(matches!(error, Some(LeaseError::Indefinite(_))), "{error:?}");
    assert!(
        *t >= l.expiration() - 1 && *t <= l.expiration() + SEC,
        "at the actual expiration: {t}"
    );
    assert!(attempts.iter().all(|&(a, _)| a < *t), "no attempt after the failure event");
    assert!(w.svc.leases(set, w.now).unwrap() == vec![ok]);
    assert!(w.alive(&ok));
}

#[test]
fn expiration_warnings() {
    let mut w = World::new();
    let (set, sl) = w.svc.create_set(HOUR, 0).unwrap();
    assert!(invalid(w.svc.set_expiration_warning_listener(set, -1, vec![], 0)));
    let reg = w.svc.set_expiration_warning_listener(set, 10 * MIN, b"wake".to_vec(), 0).unwrap();
    assert_eq!(reg.lease, sl);
    assert_eq!(reg.lease.expiration(), HOUR);
    w.advance(49 * MIN);
    assert!(w.warnings().is_empty());
    w.advance(55 * MIN);
    let ws = w.warnings();
    assert_eq!(ws.len(), 1);
    assert_eq!(ws[0].0, 50 * MIN);
    assert_eq!(ws[0].1.kind, SetEventKind::ExpirationWarning { set, expiration: HOUR });
    assert_eq!((ws[0].1.event_id, ws[0].1.sequence), (reg.event_id, 1));
    assert_eq!(ws[0].1.handback, b"wake");
    // Renewing the set lease re-arms the warning.
    assert_eq!(
        w.set_request(RequestBody::Renew { cookie: sl.cookie(), duration: HOUR }),
        ReplyBody::Renewed { duration: HOUR }
    );
    w.advance(2 * HOUR);
    let ws = w.warnings();
    assert_eq!(ws.len(), 2);
    assert_eq!(ws[1].0, 55 * MIN + HOUR - 10 * MIN);
    assert_eq!(ws[1].1.sequence, 2);
    // The set expired: gone, and no more warnings.
    assert!(w.svc.sets().is_empty());
}

#[test]
fn a_warning_longer_than_the_time_left_comes_at_once() {
    let mut w = World::new();
    let (set, _) = w.svc.create_set(10 * MIN, 0).unwrap();
    w.advance(MIN);
    let reg = w.svc.set_expiration_warning_listener(set, HOUR, vec![1], w.now).unwrap();
    let e = w.svc.poll_event().expect("delivered at once");
    assert_eq!(e.event_id, reg.event_id);
    assert_eq!(e.kind, SetEventKind::ExpirationWarning { set, expiration: 10 * MIN });
    w.advance(9 * MIN);
    assert!(w.events.is_empty(), "only once per expiration");
}

#[test]
fn unknown_event_clears_only_that_registration() {
    let mut w = World::new();
    let (set, _) = w.svc.create_set(HOUR, 0).unwrap();
    let (other, _) = w.svc.create_set(HOUR, 0).unwrap();
    let warn = w.svc.set_expiration_warning_listener(set, 5 * MIN, vec![1], 0).unwrap();
    let fail = w.svc.set_renewal_failure_listener(set, vec![2], 0).unwrap();
    let other_fail = w.svc.set_renewal_failure_listener(other, vec![3], 0).unwrap();
    let ids: BTreeSet<_> = [warn.event_id, fail.event_id, other_fail.event_id].into();
    assert_eq!(ids.len(), 3, "event ids are unique among active registrations");
    assert!(w.svc.unknown_event(warn.event_id));
    assert!(!w.svc.unknown_event(warn.event_id));
    let regs = w.svc.registrations(set, 0).unwrap();
    assert_eq!(regs.iter().map(|r| r.event_id).collect::<Vec<_>>(), vec![fail.event_id]);
    // The failure registration still works; the warning no longer comes.
    let l = w.grant(1, MIN);
    w.svc.add(set, l, FOREVER, MIN, 0).unwrap();
    w.lls.get_mut(&LandlordId(1)).unwrap().cancel(l.cookie(), 0).unwrap();
    w.advance(58 * MIN);
    assert_eq!(w.failures().len(), 1);
    assert_eq!(w.events[0].1.event_id, fail.event_id);
    assert!(w.warnings().is_empty());
    assert_eq!(w.svc.registrations(other, w.now).unwrap().len(), 1);
    // Re-registering gives back the same id and numbering; clearing ends it.
    let again = w.svc.set_renewal_failure_listener(set, vec![9], w.now).unwrap();
    assert_eq!((again.event_id, again.sequence), (fail.event_id, 1));
    w.svc.clear_renewal_failure_listener(set, w.now).unwrap();
    assert!(w.svc.registrations(set, w.now).unwrap().is_empty());
}

#[test]
fn leases_of_one_landlord_are_batched_across_sets() {
    let mut w = World::new();
    let (a, _) = w.svc.create_set(HOUR, 0).unwrap();
    let (b, _) = w.svc.create_set(HOUR, 0).unwrap();
    let x = w.grant(1, MIN);
    let y = w.grant(1, MIN);
    w.svc.add(a, x, FOREVER, MIN, 0).unwrap();
    w.svc.add(b, y, FOREVER, MIN, 0).unwrap();
    w.advance(10 * MIN);
    let batches = w
        .sent
        .iter()
        .filter(|(_, _, body)| matches!(body, RequestBody::RenewAll { items } if items.len() == 2))
        .count();
    assert!(batches >= 5, "renewals of both sets go out together: {batches}");
    assert!(w.alive(&x) && w.alive(&y));
}

#[test]
fn snapshot_and_restore_lose_nothing() {
    use leasehold::event::{Delivery, GapTracker, DEFAULT_RESTORE_JUMP};
    use leasehold::service::ServiceSnapshot;

    let mut w = World::new();
    let (a, a_lease) = w.svc.create_set(HOUR, 0).unwrap();
    let (b, _) = w.svc.create_set(2 * HOUR, 0).unwrap();
    let warn = w.svc.set_expiration_warning_listener(a, 10 * MIN, b"warn".to_vec(), 0).unwrap();
    let fail = w.svc.set_renewal_failure_listener(a, b"fail".to_vec(), 0).unwrap();
    let mut rx = GapTracker::new();
    rx.expect(fail.event_id, fail.sequence);
    rx.expect(warn.event_id, warn.sequence);
    let x = w.grant(1, MIN);
    let y = w.grant(2, MIN);
    let doomed = w.grant(1, MIN);
    w.svc.add(a, x, 40 * MIN, MIN, 0).unwrap();
    w.svc.add(b, x, FOREVER, 2 * MIN, 0).unwrap();
    w.svc.add(a, y, FOREVER, ANY, 0).unwrap();
    w.svc.add(a, doomed, FOREVER, MIN, 0).unwrap();
    w.lls.get_mut(&LandlordId(1)).unwrap().cancel(doomed.cookie(), 0).unwrap();
    w.advance(5 * MIN);
    assert_eq!(w.failures().len(), 1);
    let e = &w.events[0].1;
    assert_eq!(rx.observe(e.event_id, e.sequence), Delivery::InOrder);

    // Snapshot, carried as JSON; the old service dies.
    let text = w.svc.snapshot(w.now).to_json();
    let snap = ServiceSnapshot::from_json(&text).unwrap();
    assert_eq!(snap.taken_at(), 5 * MIN);
    let down_until = w.now + 2 * SEC;
    let config = RenewalServiceConfig::new(SERVICE, [9; 32]);
    w.svc = RenewalService::restore(config, snap, down_until).unwrap();
    w.now = down_until;

    assert_eq!(w.svc.sets(), vec![a, b]);
    assert_eq!(w.svc.leases(a, w.now).unwrap().len(), 2);
    assert_eq!(w.svc.leases(b, w.now).unwrap(), vec![x]);
    assert_eq!(w.svc.membership(a, &x, w.now).unwrap().unwrap().expiration, 40 * MIN);
    assert_eq!(w.svc.manager().expiration(&x), Ok(FOREVER));
    assert_eq!(w.svc.manager().renew_duration(&x), Ok(2 * MIN));
    let regs = w.svc.registrations(a, w.now).unwrap();
    assert_eq!(
        regs.iter().map(|r| r.event_id).collect::<Vec<_>>(),
        vec![warn.event_id, fail.event_id]
    );
    assert_eq!(regs[1].sequence, 1 + DEFAULT_RESTORE_JUMP);
    // The set lease kept its time left (the landlord's rule) and renews over the wire.
    let sl = w.svc.set_lease(a, w.now).unwrap();
    assert_eq!(sl.cookie(), a_lease.cookie());
    assert_eq!(sl.expiration(), HOUR + 2 * SEC);

    // Renewals go on; a later failure reads as a gap; the warning comes once.
    w.advance(30 * MIN);
    assert!(w.alive(&x) && w.alive(&y));
    w.lls.get_mut(&LandlordId(2)).unwrap().cancel(y.cookie(), w.now).unwrap();
    w.advance(55 * MIN);
    let f = w.failures();
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!(f[1].2, y);
    let later =
        w.events.iter().find(|(_, e)| e.event_id == fail.event_id && e.sequence > 1).unwrap();
    assert_eq!(later.1.handback, b"fail");
    assert!(matches!(rx.observe(later.1.event_id, later.1.sequence), Delivery::Gap { .. }));
    let ws = w.warnings();
    assert_eq!(ws.len(), 1);
    assert_eq!(ws[0].0, HOUR + 2 * SEC - 10 * MIN);
    assert_eq!(ws[0].1.handback, b"warn");
    assert!(w.alive(&x), "x stays in b, forever");
    assert!(w.svc.leases(a, w.now).unwrap().is_empty());
}

#[test]
fn bad_snapshots_are_refused() {
    use leasehold::service::ServiceSnapshot;

    let mut w = World::new();
    let (set, _) = w.svc.create_set(HOUR, 0).unwrap();
    let l = w.grant(1, MIN);
    w.svc.add(set, l, FOREVER, MIN, 0).unwrap();
    let text = w.svc.snapshot(0).to_json();
    assert!(matches!(ServiceSnapshot::from_json("{"), Err(LeaseError::Decode(_))));
    assert!(matches!(
        ServiceSnapshot::from_json(&text.replacen("\"version\":2", "\"version\":3", 1))
            .map(|s| RenewalService::restore(RenewalServiceConfig::new(SERVICE, [9; 32]), s, 0)
                .map(|_| ())),
        Ok(Err(LeaseError::Decode(_)))
    ));
    let snap = ServiceSnapshot::from_json(&text).unwrap();
    let other = RenewalServiceConfig::new(LandlordId(0x77), [9; 32]);
    assert!(invalid(RenewalService::restore(other, snap, 0).map(|_| ())));
    // A membership naming a client lease the snapshot does not hold.
    let cookie = format!("{}", l.cookie());
    let broken = text.replacen(
        &format!("\"cookie\":\"{cookie}\",\"expiration\""),
        "\"cookie\":\"00000000000000000000000000000001\",\"expiration\"",
        1,
    );
    assert_ne!(broken, text);
    let s = ServiceSnapshot::from_json(&broken).unwrap();
    assert!(matches!(
        RenewalService::restore(RenewalServiceConfig::new(SERVICE, [9; 32]), s, 0),
        Err(LeaseError::Decode(_))
    ));
}

#[test]
fn a_lease_that_simply_expires_fails_without_an_error() {
    let mut w = World::new();
    let (set, _) = w.svc.create_set(HOUR, 0).unwrap();
    w.svc.set_renewal_failure_listener(set, vec![], 0).unwrap();
    let l = w.grant(1, MIN);
    w.advance(2 * MIN);
    // Handed over too late: it expired before the service could renew it.
    w.svc.add(set, l, FOREVER, MIN, w.now).unwrap();
    w.advance(3 * MIN);
    let f = w.failures();
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].1, f[0].2, f[0].3.clone()), (set, l, None));
    assert!(w.renewals(&l).is_empty());
    assert!(w.svc.leases(set, w.now).unwrap().is_empty());
}

#[test]
fn a_lease_longer_than_its_membership_is_not_renewed_and_leaves_silently() {
    let mut w = World::new();
    let (set, _) = w.svc.create_set(HOUR, 0).unwrap();
    w.svc.set_renewal_failure_listener(set, vec![], 0).unwrap();
    let l = w.grant(1, 10 * MIN);
    w.svc.add(set, l, 3 * MIN, MIN, 0).unwrap();
    w.advance(3 * MIN - 1);
    assert_eq!(w.svc.leases(set, w.now).unwrap(), vec![l], "stays until its desired expiration");
    w.advance(3 * MIN);
    assert!(w.svc.leases(set, w.now).unwrap().is_empty());
    w.advance(20 * MIN);
    assert!(w.renewals(&l).is_empty());
    assert!(w.events.is_empty());
}

#[test]
fn the_set_handle_speaks_lease_renewal_set() {
    let mut w = World::new();
    let (id, sl) = w.svc.create_set(HOUR, 0).unwrap();
    let l = w.grant(1, MIN);
    let mut set = w.svc.set(id);
    assert_eq!(set.id(), id);
    assert_eq!(set.lease(0), Some(sl));
    set.renew_for(l, FOREVER, MIN, 0).unwrap();
    assert_eq!(set.leases(0).unwrap(), vec![l]);
    assert_eq!(set.membership(&l, 0).unwrap().unwrap().renew_duration, MIN);
    let warn = set.set_expiration_warning_listener(MIN, vec![1], 0).unwrap();
    let fail = set.set_renewal_failure_listener(vec![2], 0).unwrap();
    assert_ne!(warn.event_id, fail.event_id);
    set.clear_expiration_warning_listener(0).unwrap();
    set.clear_renewal_failure_listener(0).unwrap();
    assert_eq!(set.remove(&l, 0).unwrap(), Some(l));
    assert!(w.svc.registrations(id, 0).unwrap().is_empty());
    assert_eq!(w.svc.set(SetId(42)).leases(0), Err(LeaseError::UnknownLease));
}

#[test]
fn the_service_can_move_between_threads() {
    fn send<T: Send>() {}
    send::<RenewalService>();
    send::<leasehold::service::ServiceSnapshot>();
    send::<SetEvent>();
}

#[test]
fn a_snapshot_with_set_numbers_used_up_gives_an_error_not_a_panic() {
    // A damaged (or hostile) snapshot may claim that every set number is used: creating a set
    // must then fail cleanly instead of overflowing the counter.
    let cfg = RenewalServiceConfig::new(SERVICE, [9; 32]);
    let svc = RenewalService::new(cfg.clone()).unwrap();
    let text = svc.snapshot(0).to_json();
    assert!(text.contains("\"next_set\":1"), "{text}");
    let text = text.replace("\"next_set\":1", &format!("\"next_set\":{}", u64::MAX));
    let snap = leasehold::service::ServiceSnapshot::from_json(&text).unwrap();
    let mut svc = RenewalService::restore(cfg, snap, 0).unwrap();
    assert!(matches!(svc.create_set(MIN, 0), Err(LeaseError::LeaseDenied(_))));
    assert!(svc.sets().is_empty());
}

#[test]
fn no_client_lease_is_renewed_for_a_set_whose_expiry_is_still_being_swept() {
    // The service's landlord sweeps at most `expiry_budget` set leases per call. When many sets
    // expire at once (here: a host that woke up late, a budget of 1), the client leases of the
    // sets not yet swept must not be renewed in the meantime.
    let mut cfg = RenewalServiceConfig::new(SERVICE, [9; 32]);
    cfg.landlord = cfg.landlord.with_expiry_budget(1);
    let mut w = World::with_config(cfg);
    let mut leases = Vec::new();
    for _ in 0..4 {
        let (set, _) = w.svc.create_set(MIN, 0).unwrap();
        let lease = w.grant(1, 10 * MIN);
        w.svc.add(set, lease, FOREVER, 10 * MIN, 0).unwrap();
        leases.push(lease);
    }
    // The host sleeps through the sets' expiry and the leases' renewal time.
    let late = 10 * MIN - 10 * SEC;
    for _ in 0..100 {
        w.tick(late);
        if w.svc.sets().is_empty() {
            break;
        }
    }
    assert!(w.svc.sets().is_empty(), "every expired set is destroyed");
    for l in &leases {
        assert_eq!(w.renewals(l), vec![], "renewed for an expired set");
    }
    assert!(w.svc.manager().is_empty());
}

#[test]
fn a_snapshot_whose_sequence_numbers_would_overflow_is_refused() {
    // Restoring moves sequence numbers forward by the restore jump; a number that cannot move
    // that far (damaged or hostile snapshot) would leave the registration issuing u64::MAX
    // again and again, which every receiver drops as stale.
    let cfg = RenewalServiceConfig::new(SERVICE, [9; 32]);
    let mut svc = RenewalService::new(cfg.clone()).unwrap();
    let (set, _) = svc.create_set(HOUR, 0).unwrap();
    svc.set_renewal_failure_listener(set, b"h".to_vec(), 0).unwrap();
    let text = svc.snapshot(0).to_json();
    assert_eq!(text.matches("\"sequence\":0").count(), 1, "{text}");
    let near_end = u64::MAX - 5;
    let bad = text.replace("\"sequence\":0", &format!("\"sequence\":{near_end}"));
    let snap = leasehold::service::ServiceSnapshot::from_json(&bad).unwrap();
    assert!(matches!(RenewalService::restore(cfg.clone(), snap, 0), Err(LeaseError::Decode(_))));
    // With room for the jump it restores.
    let fine = text.replace("\"sequence\":0", &format!("\"sequence\":{}", u64::MAX >> 1));
    let snap = leasehold::service::ServiceSnapshot::from_json(&fine).unwrap();
    assert!(RenewalService::restore(cfg, snap, 0).is_ok());
}
