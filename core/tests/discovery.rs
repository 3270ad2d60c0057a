//! The lookup discovery service (seed 003, LD.3 and LD.4), one rule per test, in virtual time.

use std::collections::BTreeSet;

use leasehold::discovery::{
    Announcement, DeliveryFailure, DiscoveryConfig, DiscoveryService, Groups, Locator, Registered,
    RegistrarId, RegistrationId, RemoteDiscoveryEvent, UnicastResponse,
};
use leasehold::wire::{ReplyBody, Request, RequestBody};
use leasehold::{Duration, EventId, LandlordId, LeaseError, Millis, ANY, FOREVER};

const SEC: i64 = 1_000;
const MIN: i64 = 60 * SEC;
const SERVICE: LandlordId = LandlordId(0xd15c);

fn loc(s: &str) -> Locator {
    s.parse().unwrap()
}

fn names(g: &[&str]) -> BTreeSet<String> {
    g.iter().map(|s| s.to_string()).collect()
}

/// A service, a clock, and the events delivered so far.
struct World {
    svc: DiscoveryService,
    now: Millis,
    seq: u64,
    log: Vec<RemoteDiscoveryEvent>,
}

/// One delivered event, in short: (event id, discarded, registrar numbers).
type Short = (EventId, bool, Vec<u128>);

impl World {
    fn new() -> World {
        World::with(DiscoveryConfig::new(SERVICE, [5; 32]))
    }

    fn with(config: DiscoveryConfig) -> World {
        World { svc: DiscoveryService::new(config).unwrap(), now: 0, seq: 0, log: Vec::new() }
    }

    fn at(&mut self, t: Millis) {
        self.now = t;
        self.svc.handle_timeout(t);
    }

    fn register(&mut self, groups: Groups, locators: &[&str]) -> Registered {
        let ls: Vec<Locator> = locators.iter().map(|s| loc(s)).collect();
        self.svc.register(groups, ls, b"hb".to_vec(), FOREVER, self.now).unwrap()
    }

    fn announce(&mut self, id: u128, groups: &[&str], locator: &str) {
        self.announce_ttl(id, groups, locator, 10 * SEC);
    }

    fn announce_ttl(&mut self, id: u128, groups: &[&str], locator: &str, ttl: Duration) {
        self.seq += 1;
        let a = Announcement {
            registrar: RegistrarId(id),
            groups: names(groups),
            locator: loc(locator),
            sequence: self.seq,
            ttl,
        };
        self.svc.handle_announcement(&a, self.now).unwrap();
    }

    /// Delivers every event due now, in order; returns them in short.
    fn drain(&mut self) -> Vec<Short> {
        let mut out = Vec::new();
        while let Some(e) = self.svc.poll_event(self.now) {
            assert!(self.svc.delivered(e.event_id, e.sequence, self.now));
            out.push(short(&e));
            self.log.push(e);
        }
        out
    }

    fn held(&mut self, r: &Registered) -> Vec<u128> {
        self.svc.registrars(r.id, self.now).unwrap().iter().map(|g| g.id.0).collect()
    }

    fn discovered(&self) -> Vec<u128> {
        self.svc.discovered().iter().map(|g| g.id.0).collect()
    }
}

fn short(e: &RemoteDiscoveryEvent) -> Short {
    (e.event_id, e.is_discarded(), e.registrars().iter().map(|g| g.id.0).collect())
}

fn found(r: &Registered, discarded: bool, ids: &[u128]) -> Short {
    (r.event.event_id, discarded, ids.to_vec())
}

#[test]
fn lease_duration_must_be_positive_forever_or_any() {
    let mut w = World::new();
    for bad in [0, -2, -1000, i64::MIN] {
        let e = w.svc.register(Groups::none(), [], vec![], bad, 0).unwrap_err();
        assert!(matches!(e, LeaseError::InvalidArgument(_)), "{bad}: {e:?}");
    }
    let any = w.svc.register(Groups::none(), [], vec![], ANY, 0).unwrap();
    assert_eq!(any.lease.expiration(), 30 * MIN);
    let forever = w.svc.register(Groups::none(), [], vec![], FOREVER, 0).unwrap();
    assert_eq!(forever.lease.expiration(), 30 * MIN, "granted at most the policy's bound");
    let short = w.svc.register(Groups::none(), [], vec![], 5 * SEC, 0).unwrap();
    assert_eq!(short.lease.expiration(), 5 * SEC, "never more than asked");
    assert_eq!(short.lease.landlord(), SERVICE);
    assert_eq!(short.event.lease, short.lease);
    assert_eq!(short.event.source.service, SERVICE);
    assert_eq!(short.event.source.object, short.id.0);
    assert_eq!(short.event.sequence, 0);
}

#[test]
fn event_ids_are_unique_among_live_registrations_and_handbacks_come_back() {
    let mut w = World::new();
    let a = w.svc.register(Groups::all(), [], b"\x00a".to_vec(), FOREVER, 0).unwrap();
    let b = w.svc.register(Groups::all(), [], vec![0xff; 300], FOREVER, 0).unwrap();
    assert_ne!(a.event.event_id, b.event.event_id);
    w.announce(1, &["x"], "h1:1");
    w.svc.poll_event(0).map(|e| {
        assert_eq!(e.handback, b"\x00a");
        w.svc.delivered(e.event_id, e.sequence, 0)
    });
    let e = w.svc.poll_event(0).unwrap();
    assert_eq!((e.event_id, &e.handback), (b.event.event_id, &vec![0xff; 300]));
    // Cancelled registrations free nothing that a live one could collide with.
    let ids: BTreeSet<EventId> = (0..20)
        .map(|_| w.svc.register(Groups::none(), [], vec![], FOREVER, 0).unwrap().event.event_id)
        .collect();
    assert_eq!(ids.len(), 20);
    assert!(!ids.contains(&a.event.event_id) && !ids.contains(&b.event.event_id));
}

#[test]
fn groups_all_none_or_names() {
    let mut w = World::new();
    let all = w.register(Groups::all(), &[]);
    let none = w.register(Groups::none(), &[]);
    let some = w.register(Groups::of(["a", "b", "a"]), &[]);
    let public = w.register(Groups::of([""]), &[]);
    w.announce(1, &["a"], "h1:1");
    w.announce(2, &["c"], "h2:1");
    w.announce(3, &[], "h3:1");
    w.announce(4, &["", "z"], "h4:1");
    w.drain();
    assert_eq!(w.held(&all), [1, 2, 3, 4]);
    assert_eq!(w.held(&none), Vec::<u128>::new());
    assert_eq!(w.held(&some), [1]);
    assert_eq!(w.held(&public), [4]);
    assert_eq!(w.svc.groups(some.id, 0).unwrap(), Groups::of(["a", "b"]));
    assert_eq!(w.svc.groups(all.id, 0).unwrap(), Groups::All);
}

#[test]
fn a_new_registration_discovers_what_the_service_already_knows_in_one_event() {
    let mut w = World::new();
    w.announce(3, &["a"], "h3:1");
    w.announce(1, &["a"], "h1:1");
    w.announce(2, &["b"], "h2:1");
    let r = w.register(Groups::of(["a"]), &["h2:1"]);
    assert_eq!(w.drain(), [found(&r, false, &[1, 2, 3])], "batched, in id order");
    assert_eq!(w.log[0].sequence, r.event.sequence + 1);
    let g = &w.log[0].registrars()[1];
    assert_eq!(
        (g.groups.clone(), g.locators.iter().cloned().collect::<Vec<_>>()),
        (names(&["b"]), vec![loc("h2:1")])
    );
}

#[test]
fn one_discovered_event_per_registrar_until_it_is_discarded() {
    let mut w = World::new();
    let r = w.register(Groups::of(["a", "b"]), &["h1:1"]);
    w.announce(1, &["a"], "h1:1");
    assert_eq!(w.drain(), [found(&r, false, &[1])]);
    // Re-announcements, a new group that is also wanted, a group change still wanted, a unicast
    // answer for the same registrar: nothing new for a registration that holds it.
    for t in 1..5 {
        w.at(t * SEC);
        w.announce(1, &["a"], "h1:1");
    }
    w.announce(1, &["a", "b"], "h1:1");
    w.announce(1, &["b"], "h1:1");
    assert_eq!(w.drain(), []);
    // Discarded, then discovered again: exactly one more event each.
    w.svc.discard(r.id, RegistrarId(1), w.now).unwrap();
    assert_eq!(w.drain(), [found(&r, true, &[1])]);
    w.announce(1, &["b"], "h1:1");
    w.announce(1, &["b"], "h1:1");
    assert_eq!(w.drain(), [found(&r, false, &[1])]);
    let seqs: Vec<u64> = w.log.iter().map(|e| e.sequence).collect();
    assert_eq!(seqs, [1, 2, 3], "strictly increasing, no gaps");
}

#[test]
fn a_registrar_joining_a_wanted_group_is_discovered_by_those_that_lack_it() {
    let mut w = World::new();
    let a = w.register(Groups::of(["a"]), &[]);
    let b = w.register(Groups::of(["b"]), &[]);
    w.announce(1, &["a"], "h1:1");
    assert_eq!(w.drain(), [found(&a, false, &[1])]);
    w.announce(1, &["a", "b"], "h1:1");
    assert_eq!(w.drain(), [found(&b, false, &[1])], "only b, which had yet to discover it");
}

#[test]
fn passive_no_interest_discard_goes_to_group_registrations_only() {
    let mut w = World::new();
    let by_group = w.register(Groups::of(["a"]), &[]);
    let by_both = w.register(Groups::of(["a"]), &["h1:1"]);
    let by_locator = w.register(Groups::none(), &["h1:1"]);
    w.announce(1, &["a"], "h1:1");
    w.drain();
    // It leaves group "a": no longer of interest to `by_group`; the others still want it by
    // locator and are not told anything.
    w.announce(1, &["c"], "h1:1");
    assert_eq!(w.drain(), [found(&by_group, true, &[1])]);
    assert_eq!(w.log.last().unwrap().registrars()[0].groups, names(&["c"]));
    assert_eq!(w.held(&by_both), [1]);
    assert_eq!(w.held(&by_locator), [1]);
    // Back in "a": rediscovered by the one that dropped it.
    w.announce(1, &["a"], "h1:1");
    assert_eq!(w.drain(), [found(&by_group, false, &[1])]);
}

#[test]
fn silence_is_a_passive_communication_discard_for_group_registrations_only() {
    let mut w = World::new();
    let by_group = w.register(Groups::of(["a"]), &[]);
    let by_both = w.register(Groups::all(), &["h1:1"]);
    let by_locator = w.register(Groups::none(), &["h1:1"]);
    w.announce_ttl(1, &["a"], "h1:1", 10 * SEC);
    w.drain();
    w.at(9 * SEC);
    w.announce_ttl(1, &["a"], "h1:1", 10 * SEC); // alive until 19 s
    w.at(19 * SEC - 1);
    assert_eq!(w.drain(), []);
    w.at(19 * SEC);
    // `by_both` wants it by group too, so it is told; `by_locator` is not, and keeps it.
    assert_eq!(w.drain(), [found(&by_group, true, &[1]), found(&by_both, true, &[1])]);
    assert_eq!(w.held(&by_locator), [1]);
    assert_eq!(w.discovered(), Vec::<u128>::new(), "the service dropped it, to find it again");
    // Unicast discovery of h1:1 starts again (its registrar is no longer in the service's set);
    // when it answers, the group registrations discover it again, `by_locator` hears nothing.
    let p = w.svc.poll_transmit(w.now).unwrap();
    assert_eq!(p.locator, loc("h1:1"));
    let answer = UnicastResponse { registrar: RegistrarId(1), groups: names(&["a"]) };
    assert!(w.svc.handle_unicast(p.id, Ok(answer), w.now));
    assert_eq!(w.drain(), [found(&by_group, false, &[1]), found(&by_both, false, &[1])]);
}

#[test]
fn a_registrar_wanted_only_by_locator_is_never_discarded_for_silence() {
    let mut w = World::new();
    let by_locator = w.register(Groups::of(["x"]), &["h1:1"]);
    w.announce_ttl(1, &["a"], "h1:1", 10 * SEC);
    assert_eq!(w.drain(), [found(&by_locator, false, &[1])]);
    w.at(60 * SEC);
    assert!(w.svc.registrar_unreachable(RegistrarId(1), w.now));
    assert_eq!(w.drain(), []);
    assert_eq!(w.held(&by_locator), [1]);
    assert_eq!(w.discovered(), [1], "no registration wants it by group: not discarded at all");
    // A registration that joins later by group gets it at once from the service's set.
    let late = w.register(Groups::of(["a"]), &[]);
    assert_eq!(w.drain(), [found(&late, false, &[1])]);
}

#[test]
fn unreachable_reports_discard_like_silence() {
    let mut w = World::new();
    let a = w.register(Groups::of(["a"]), &[]);
    let l = w.register(Groups::none(), &["h1:1"]);
    w.announce_ttl(1, &["a"], "h1:1", 10 * MIN);
    w.drain();
    assert!(!w.svc.registrar_unreachable(RegistrarId(99), 0), "unknown registrar");
    assert!(w.svc.registrar_unreachable(RegistrarId(1), 0));
    assert_eq!(w.drain(), [found(&a, true, &[1])]);
    assert_eq!(w.held(&l), [1]);
    // Its next announcement brings it back for `a` only.
    w.announce(1, &["a"], "h1:1");
    assert_eq!(w.drain(), [found(&a, false, &[1])]);
}

#[test]
fn a_registrar_nobody_holds_is_forgotten_when_it_falls_silent() {
    let mut w = World::new();
    w.announce_ttl(1, &["a"], "h1:1", 5 * SEC);
    assert_eq!(w.discovered(), [1]);
    w.at(5 * SEC);
    assert_eq!(w.discovered(), Vec::<u128>::new());
    assert!(w.svc.registrar(RegistrarId(1)).is_none());
}

#[test]
fn active_discard_makes_the_registrar_eligible_for_rediscovery() {
    let mut w = World::new();
    let r1 = w.register(Groups::of(["a"]), &[]);
    let r2 = w.register(Groups::of(["a"]), &[]);
    w.announce_ttl(1, &["a"], "h1:1", 10 * MIN);
    w.drain();
    w.svc.discard(r1.id, RegistrarId(1), 0).unwrap();
    assert_eq!(w.drain(), [found(&r1, true, &[1])], "only the registration that discarded it");
    assert_eq!(w.held(&r1), Vec::<u128>::new());
    assert_eq!(w.held(&r2), [1]);
    // A second discard before rediscovery: r2 is told and joins those notified on rediscovery.
    w.svc.discard(r2.id, RegistrarId(1), 0).unwrap();
    assert_eq!(w.drain(), [found(&r2, true, &[1])]);
    // A registration made in between does not get it until it is rediscovered...
    let r3 = w.register(Groups::of(["a"]), &[]);
    assert_eq!(w.drain(), []);
    // ...and then all three do, in one step.
    w.announce(1, &["a"], "h1:1");
    assert_eq!(
        w.drain(),
        [found(&r1, false, &[1]), found(&r2, false, &[1]), found(&r3, false, &[1])]
    );
    // Discarding something not held does nothing.
    w.svc.discard(r1.id, RegistrarId(77), 0).unwrap();
    assert_eq!(w.drain(), []);
}

#[test]
fn active_discard_of_a_locator_registrar_probes_its_locator_again() {
    let mut w = World::new();
    let r = w.register(Groups::none(), &["h1:1"]);
    let p = w.svc.poll_transmit(0).unwrap();
    let answer = UnicastResponse { registrar: RegistrarId(1), groups: names(&["q"]) };
    assert!(w.svc.handle_unicast(p.id, Ok(answer.clone()), 0));
    assert_eq!(w.drain(), [found(&r, false, &[1])]);
    assert_eq!(w.svc.poll_transmit(0), None, "found: no more probes");
    w.at(SEC);
    w.svc.discard(r.id, RegistrarId(1), w.now).unwrap();
    assert_eq!(w.drain(), [found(&r, true, &[1])]);
    let p = w.svc.poll_transmit(w.now).unwrap();
    assert_eq!(p.locator, loc("h1:1"));
    assert!(w.svc.handle_unicast(p.id, Ok(answer), w.now));
    assert_eq!(w.drain(), [found(&r, false, &[1])]);
}

#[test]
fn group_mutators_discover_and_discard_as_ld_4_1_1_says() {
    let mut w = World::new();
    let r = w.register(Groups::of(["a"]), &["h3:1"]);
    w.announce(1, &["a", "b"], "h1:1");
    w.announce(2, &["b"], "h2:1");
    w.announce(3, &["c"], "h3:1");
    w.announce(4, &["a"], "h4:1");
    let each = |g| found(&r, false, &[g]);
    assert_eq!(w.drain(), [each(1), each(3), each(4)], "one announcement, one event");
    // addGroups: 1 is already held (no event), 2 is discovered.
    w.svc.add_groups(r.id, ["b"], 0).unwrap();
    assert_eq!(w.drain(), [found(&r, false, &[2])]);
    // removeGroups("a"): 4 is a member of no remaining group: discarded; 1 is still in "b".
    w.svc.remove_groups(r.id, ["a", "nope"], 0).unwrap();
    assert_eq!(w.drain(), [found(&r, true, &[4])]);
    // setGroups(["c"]): 1 and 2 go; 3 stays (wanted by locator anyway, and in "c").
    w.svc.set_groups(r.id, Groups::of(["c"]), 0).unwrap();
    assert_eq!(w.drain(), [found(&r, true, &[1, 2])]);
    // setGroups(NO_GROUPS): 3 stays, wanted by its locator.
    w.svc.set_groups(r.id, Groups::none(), 0).unwrap();
    assert_eq!(w.drain(), []);
    assert_eq!(w.held(&r), [3]);
    // Group discovery is halted: a new "a" registrar is not discovered.
    w.announce(5, &["a"], "h5:1");
    assert_eq!(w.drain(), []);
    // setGroups(ALL_GROUPS): every undiscovered registrar, at once.
    w.svc.set_groups(r.id, Groups::all(), 0).unwrap();
    assert_eq!(w.drain(), [found(&r, false, &[1, 2, 4, 5])]);
    // ALL_GROUPS has no set to add to or remove from.
    for e in [w.svc.add_groups(r.id, ["x"], 0), w.svc.remove_groups(r.id, ["x"], 0)] {
        assert!(matches!(e, Err(LeaseError::InvalidArgument(_))), "{e:?}");
    }
    assert_eq!(w.svc.groups(r.id, 0).unwrap(), Groups::All);
    // Adding nothing changes nothing.
    w.svc.set_groups(r.id, Groups::of(["a"]), 0).unwrap();
    w.drain();
    w.svc.add_groups(r.id, Vec::<String>::new(), 0).unwrap();
    assert_eq!(w.drain(), []);
}

#[test]
fn locator_mutators_discover_and_discard_as_ld_4_1_1_says() {
    let mut w = World::new();
    let r = w.register(Groups::of(["a"]), &[]);
    w.announce(1, &["a"], "h1:1");
    w.announce(2, &["b"], "h2:1");
    assert_eq!(w.drain(), [found(&r, false, &[1])]);
    // A locator of a registrar the service knows: discovered at once, no probe.
    w.svc.add_locators(r.id, [loc("h2:1"), loc("H1:1")], 0).unwrap();
    assert_eq!(w.drain(), [found(&r, false, &[2])], "1 is already held: no event");
    assert_eq!(w.svc.poll_transmit(0), None);
    // A locator nobody serves yet: unicast discovery.
    w.svc.add_locators(r.id, [loc("h9:1")], 0).unwrap();
    assert_eq!(w.svc.poll_transmit(0).unwrap().locator, loc("h9:1"));
    // removeLocators: 2 (wanted only by h2:1) is discarded; 1 stays (group "a").
    w.svc.remove_locators(r.id, [loc("h2:1"), loc("h1:1"), loc("zz:1")], 0).unwrap();
    assert_eq!(w.drain(), [found(&r, true, &[2])]);
    assert_eq!(w.svc.locators(r.id, 0).unwrap(), [loc("h9:1")]);
    // setLocators replaces the set: h9:1 is no longer probed, h2:1 brings 2 back.
    w.svc.set_locators(r.id, [loc("h2:1")], 0).unwrap();
    assert_eq!(w.drain(), [found(&r, false, &[2])]);
    w.svc.set_locators(r.id, [], 0).unwrap();
    assert_eq!(w.drain(), [found(&r, true, &[2])]);
    assert_eq!(w.held(&r), [1]);
}

#[test]
fn unicast_discovery_is_retried_until_found_or_no_longer_wanted() {
    let mut w = World::new();
    let r1 = w.register(Groups::none(), &["h1:1"]);
    let r2 = w.register(Groups::none(), &["h1:1"]);
    let p = w.svc.poll_transmit(0).unwrap();
    assert_eq!(w.svc.poll_transmit(0), None, "one probe per locator, whoever wants it");
    // Failures back off 1 s, 2 s, 4 s...
    let mut t = 0;
    let mut id = p.id;
    for wait in [1, 2, 4, 8] {
        assert!(w.svc.handle_unicast(id, Err(LeaseError::Indefinite("refused".into())), t));
        assert!(!w.svc.handle_unicast(id, Err(LeaseError::Indefinite("again".into())), t), "once");
        assert_eq!(w.svc.poll_transmit(t + wait * SEC - 1), None);
        t += wait * SEC;
        let p = w.svc.poll_transmit(t).unwrap();
        assert!(p.id > id);
        id = p.id;
    }
    // No answer within the time-out (30 s) counts as a failure: retried 16 s later.
    assert_eq!(w.svc.poll_timeout(), Some(t + 30 * SEC));
    w.at(t + 30 * SEC);
    assert!(
        !w.svc.handle_unicast(
            id,
            Ok(UnicastResponse { registrar: RegistrarId(1), groups: names(&[]) }),
            w.now
        ),
        "too late"
    );
    assert_eq!(w.svc.poll_transmit(w.now + 16 * SEC - 1), None);
    let p = w.svc.poll_transmit(w.now + 16 * SEC).unwrap();
    w.now += 16 * SEC;
    // Found: both registrations discover it, in one step each.
    let answer = UnicastResponse { registrar: RegistrarId(1), groups: names(&["g"]) };
    assert!(w.svc.handle_unicast(p.id, Ok(answer), w.now));
    assert_eq!(w.drain(), [found(&r1, false, &[1]), found(&r2, false, &[1])]);
    // A locator given up: removed by its only registration, it is not probed again.
    w.svc.set_locators(r1.id, [loc("h7:1")], w.now).unwrap();
    let p = w.svc.poll_transmit(w.now).unwrap();
    assert_eq!(p.locator, loc("h7:1"));
    w.svc.remove_locators(r1.id, [loc("h7:1")], w.now).unwrap();
    assert!(!w.svc.handle_unicast(p.id, Err(LeaseError::Indefinite("x".into())), w.now));
    w.at(w.now + 10 * MIN);
    assert_eq!(w.svc.poll_transmit(w.now), None);
}

#[test]
fn unicast_discovery_stops_when_the_registration_ends() {
    let mut w = World::new();
    let r = w.svc.register(Groups::none(), [loc("h1:1")], vec![], 10 * SEC, 0).unwrap();
    let p = w.svc.poll_transmit(0).unwrap();
    assert!(w.svc.handle_unicast(p.id, Err(LeaseError::Indefinite("down".into())), 0));
    w.at(10 * SEC + 1);
    assert!(matches!(w.svc.locators(r.id, w.now), Err(LeaseError::UnknownLease)));
    assert_eq!(w.svc.poll_transmit(w.now + HOUR), None);
    assert_eq!(w.svc.poll_timeout(), None, "nothing left to do");
}

const HOUR: i64 = 60 * MIN;

#[test]
fn a_locator_taken_over_by_another_registrar_swaps_them_for_locator_registrations() {
    let mut w = World::new();
    let by_locator = w.register(Groups::none(), &["h1:1"]);
    let by_group = w.register(Groups::of(["a"]), &[]);
    w.announce(1, &["a"], "h1:1");
    w.drain();
    // Registrar 2 now announces itself at h1:1 (the host was given to another lookup service).
    w.announce(2, &["b"], "h1:1");
    assert_eq!(w.drain(), [found(&by_locator, true, &[1]), found(&by_locator, false, &[2])]);
    assert_eq!(w.held(&by_group), [1]);
    assert_eq!(w.svc.registrar(RegistrarId(1)).unwrap().locators.len(), 0);
}

#[test]
fn stale_and_bad_announcements() {
    let mut config = DiscoveryConfig::new(SERVICE, [5; 32]);
    config.max_announcement_ttl = MIN;
    let mut w = World::with(config);
    let r = w.register(Groups::all(), &[]);
    let a = |seq, groups: &[&str], ttl| Announcement {
        registrar: RegistrarId(1),
        groups: names(groups),
        locator: loc("h1:1"),
        sequence: seq,
        ttl,
    };
    w.svc.handle_announcement(&a(10, &["a"], 5 * SEC), 0).unwrap();
    w.drain();
    // A reordered older announcement neither changes groups nor refreshes liveness.
    w.svc.handle_announcement(&a(9, &["zzz"], 60 * SEC), SEC).unwrap();
    w.svc.handle_announcement(&a(10, &["zzz"], 60 * SEC), SEC).unwrap();
    assert_eq!(w.svc.registrar(RegistrarId(1)).unwrap().groups, names(&["a"]));
    w.at(5 * SEC);
    assert_eq!(w.drain(), [found(&r, true, &[1])]);
    for ttl in [0, -5, u32::MAX as i64 + 1] {
        let e = w.svc.handle_announcement(&a(20, &[], ttl), w.now).unwrap_err();
        assert!(matches!(e, LeaseError::InvalidArgument(_)), "{ttl}");
    }
    let long = "x".repeat(256);
    let e = w.svc.handle_announcement(&a(20, &[long.as_str()], SEC), w.now).unwrap_err();
    assert!(matches!(e, LeaseError::InvalidArgument(_)));
    // A very long ttl is shortened to the configured maximum.
    w.svc.handle_announcement(&a(21, &["a"], u32::MAX as i64), w.now).unwrap();
    let heard = w.now;
    w.at(heard + MIN - 1);
    assert!(w.svc.registrar(RegistrarId(1)).is_some());
    w.at(heard + MIN);
    assert!(w.svc.registrar(RegistrarId(1)).is_none());
    assert_eq!(w.drain(), [found(&r, false, &[1]), found(&r, true, &[1])]);
    // Datagrams go through the same door.
    let bytes = a(22, &["a"], SEC).encode().unwrap();
    w.svc.handle_datagram(&bytes, w.now).unwrap();
    assert!(matches!(w.svc.handle_datagram(&bytes[..10], w.now), Err(LeaseError::Decode(_))));
}

#[test]
fn the_registrar_table_is_bounded() {
    let mut config = DiscoveryConfig::new(SERVICE, [5; 32]);
    config.max_registrars = 2;
    let mut w = World::with(config);
    w.announce(1, &[], "h1:1");
    w.announce(2, &[], "h2:1");
    let a = Announcement {
        registrar: RegistrarId(3),
        groups: names(&[]),
        locator: loc("h3:1"),
        sequence: 100,
        ttl: SEC,
    };
    assert!(matches!(w.svc.handle_announcement(&a, 0), Err(LeaseError::LeaseDenied(_))));
    w.announce(2, &["x"], "h2:1"); // known ones still refresh
    w.at(10 * SEC); // all silent, forgotten
    w.svc.handle_announcement(&a, w.now).unwrap();
    assert_eq!(w.discovered(), [3]);
}

#[test]
fn expired_or_cancelled_registrations_answer_no_such_object() {
    let mut w = World::new();
    let expiring = w.svc.register(Groups::all(), [loc("h1:1")], vec![], 10 * SEC, 0).unwrap();
    let cancelled = w.register(Groups::all(), &[]);
    w.announce(1, &["a"], "h1:1");
    let reply = w.svc.handle_request(
        &Request { id: 1, body: RequestBody::Cancel { cookie: cancelled.lease.cookie() } },
        0,
    );
    assert_eq!(reply.body, ReplyBody::Cancelled);
    w.at(10 * SEC + 1);
    for r in [&expiring, &cancelled] {
        let id = r.id;
        let g = RegistrarId(1);
        let t = w.now;
        let s = &mut w.svc;
        let results = [
            s.lease(id, t).err(),
            s.event_registration(id, t).err(),
            s.registrars(id, t).err(),
            s.groups(id, t).err(),
            s.locators(id, t).err(),
            s.add_groups(id, ["x"], t).err(),
            s.set_groups(id, Groups::none(), t).err(),
            s.remove_groups(id, ["x"], t).err(),
            s.add_locators(id, [loc("h2:2")], t).err(),
            s.set_locators(id, [], t).err(),
            s.remove_locators(id, [loc("h1:1")], t).err(),
            s.discard(id, g, t).err(),
            s.registration(id).groups(t).err(),
        ];
        for (i, e) in results.into_iter().enumerate() {
            assert_eq!(e, Some(LeaseError::UnknownLease), "method {i}");
        }
        let renew =
            Request { id: 2, body: RequestBody::Renew { cookie: r.lease.cookie(), duration: MIN } };
        assert!(matches!(w.svc.handle_request(&renew, t).body, ReplyBody::Error(e) if e.code == 1));
    }
    // Their events are gone too.
    assert_eq!(w.svc.poll_event(w.now), None);
    assert!(w.svc.registrations().is_empty());
}

#[test]
fn a_registration_lives_as_long_as_it_is_renewed() {
    let mut w = World::new();
    let r = w.svc.register(Groups::all(), [], vec![], MIN, 0).unwrap();
    let renew = |c| Request { id: 9, body: RequestBody::Renew { cookie: c, duration: 2 * MIN } };
    w.at(50 * SEC);
    assert_eq!(
        w.svc.handle_request(&renew(r.lease.cookie()), w.now).body,
        ReplyBody::Renewed { duration: 2 * MIN }
    );
    w.at(2 * MIN);
    assert_eq!(w.svc.lease(r.id, w.now).unwrap().expiration(), 50 * SEC + 2 * MIN);
    let grant = Request { id: 1, body: RequestBody::Grant { resource: vec![], duration: MIN } };
    assert!(matches!(w.svc.handle_request(&grant, w.now).body, ReplyBody::Error(e) if e.code == 4));
    w.at(50 * SEC + 2 * MIN + 1);
    assert_eq!(w.svc.lease(r.id, w.now), Err(LeaseError::UnknownLease));
}

#[test]
fn indefinite_delivery_failures_are_retried_until_the_lease_ends() {
    let mut w = World::new();
    let r = w.svc.register(Groups::all(), [], b"h".to_vec(), 3 * MIN, 0).unwrap();
    w.announce_ttl(1, &["a"], "h1:1", HOUR);
    w.announce_ttl(2, &["a"], "h2:1", HOUR);
    let mut times = Vec::new();
    let mut first = None;
    while let Some(t) = w.svc.poll_timeout() {
        if t > HOUR {
            break;
        }
        w.at(t.max(w.now));
        while let Some(e) = w.svc.poll_event(w.now) {
            times.push(w.now);
            // Always the first event: the second waits behind it.
            let f = *first.get_or_insert((e.sequence, e.registrars()[0].id));
            assert_eq!((e.sequence, e.registrars()[0].id), f);
            assert!(w.svc.delivery_failed(
                e.event_id,
                e.sequence,
                DeliveryFailure::Indefinite("503".into()),
                w.now
            ));
        }
    }
    // 0, then 1 s, 5 s, 10 s, 1 min, 1 min later... until the lease ends at 3 min.
    assert_eq!(times, [0, SEC, 6 * SEC, 16 * SEC, 76 * SEC, 136 * SEC]);
    assert_eq!(w.svc.registrations(), Vec::<RegistrationId>::new());
    assert_eq!(w.svc.lease(r.id, w.now), Err(LeaseError::UnknownLease));
}

#[test]
fn an_unreported_delivery_times_out_and_is_retried() {
    let mut w = World::new();
    let r = w.register(Groups::all(), &[]);
    w.announce_ttl(1, &["a"], "h1:1", HOUR);
    let e = w.svc.poll_event(0).unwrap();
    assert_eq!(w.svc.poll_event(0), None, "one event of a registration in flight at a time");
    w.at(MIN);
    assert!(!w.svc.delivered(e.event_id, e.sequence, MIN), "timed out already");
    w.at(MIN + SEC);
    let again = w.svc.poll_event(w.now).unwrap();
    assert_eq!(again, e, "the same event, same number");
    assert!(w.svc.delivered(again.event_id, again.sequence, w.now));
    assert_eq!(w.held(&r), [1]);
}

#[test]
fn events_are_delivered_in_order_after_a_failure() {
    let mut w = World::new();
    let r = w.register(Groups::all(), &[]);
    w.announce_ttl(1, &["a"], "h1:1", HOUR);
    let e1 = w.svc.poll_event(0).unwrap();
    w.svc.discard(r.id, RegistrarId(1), 0).unwrap();
    assert!(w.svc.delivery_failed(
        e1.event_id,
        e1.sequence,
        DeliveryFailure::Indefinite("x".into()),
        0
    ));
    w.at(SEC);
    let got = w.drain();
    assert_eq!(got, [found(&r, false, &[1]), found(&r, true, &[1])]);
    assert_eq!(w.log.iter().map(|e| e.sequence).collect::<Vec<_>>(), [1, 2]);
}

#[test]
fn unknown_event_bad_object_or_bad_invocation_cancel_the_registration() {
    for failure in [
        DeliveryFailure::UnknownEvent,
        DeliveryFailure::BadObject("ClassCastException".into()),
        DeliveryFailure::BadInvocation("no such method".into()),
    ] {
        let mut w = World::new();
        let r = w.register(Groups::all(), &["h5:5"]);
        let other = w.register(Groups::all(), &[]);
        w.announce_ttl(1, &["a"], "h1:1", HOUR);
        let e = w.svc.poll_event(0).unwrap();
        assert_eq!(e.event_id, r.event.event_id);
        w.svc.discard(r.id, RegistrarId(1), 0).unwrap();
        assert!(w.svc.delivery_failed(e.event_id, e.sequence, failure.clone(), 0));
        assert_eq!(w.svc.registrations(), [other.id], "{failure:?}");
        let renew =
            Request { id: 2, body: RequestBody::Renew { cookie: r.lease.cookie(), duration: MIN } };
        assert!(matches!(w.svc.handle_request(&renew, 0).body, ReplyBody::Error(e) if e.code == 1));
        // Its queued events and its unicast discovery are gone; the other registration's stay.
        let rest: Vec<Short> = w.drain();
        assert_eq!(rest, [found(&other, false, &[1])]);
        assert_eq!(w.svc.poll_transmit(0), None);
    }
}

#[test]
fn the_service_clock_never_runs_backwards() {
    let mut w = World::new();
    let r = w.svc.register(Groups::all(), [], vec![], 10 * SEC, 5 * SEC).unwrap();
    assert_eq!(r.lease.expiration(), 15 * SEC);
    w.at(20 * SEC);
    // The host's clock steps back: the registration stays gone, and new times count from 20 s.
    assert_eq!(w.svc.lease(r.id, 0), Err(LeaseError::UnknownLease));
    let r2 = w.svc.register(Groups::all(), [], vec![], 10 * SEC, 1).unwrap();
    assert_eq!(r2.lease.expiration(), 30 * SEC);
    assert_eq!(w.svc.now(), 20 * SEC);
    w.announce_ttl(1, &[], "h1:1", 5 * SEC);
    assert_eq!(w.svc.poll_timeout(), Some(20 * SEC), "the discovered event is due");
    w.drain();
    assert_eq!(w.svc.poll_timeout(), Some(25 * SEC));
}

#[test]
fn configuration_is_checked() {
    let base = || DiscoveryConfig::new(SERVICE, [1; 32]);
    let mut bad = Vec::new();
    let mut c = base();
    c.event_retry = vec![];
    bad.push(c);
    let mut c = base();
    c.unicast_retry = vec![SEC, 0];
    bad.push(c);
    let mut c = base();
    c.delivery_timeout = 0;
    bad.push(c);
    let mut c = base();
    c.max_registrars = 0;
    bad.push(c);
    let mut c = base();
    c.lease_policy = leasehold::PolicySpec::Bounded { max: SEC, default: 2 * SEC };
    bad.push(c);
    for c in bad {
        assert!(matches!(DiscoveryService::new(c), Err(LeaseError::InvalidArgument(_))));
    }
}

#[test]
fn arguments_are_checked() {
    let mut w = World::new();
    let long = "g".repeat(256);
    let e = w.svc.register(Groups::of([long.clone()]), [], vec![], MIN, 0).unwrap_err();
    assert!(matches!(e, LeaseError::InvalidArgument(_)));
    let e = w.svc.register(Groups::none(), [], vec![0; 64 * 1024 + 1], MIN, 0).unwrap_err();
    assert!(matches!(e, LeaseError::InvalidArgument(_)));
    let many: Vec<Locator> = (1..=10_001).map(|p| Locator::new("h", p as u16).unwrap()).collect();
    let e = w.svc.register(Groups::none(), many, vec![], MIN, 0).unwrap_err();
    assert!(matches!(e, LeaseError::InvalidArgument(_)));
    let r = w.register(Groups::none(), &[]);
    assert!(matches!(w.svc.add_groups(r.id, [long], 0), Err(LeaseError::InvalidArgument(_))));
    assert_eq!(w.svc.groups(r.id, 0).unwrap(), Groups::none(), "unchanged");
    assert_eq!(w.svc.registration(r.id).id(), r.id);
    for bad in
        ["", "h", ":1", "h:0", "h:65536", "h:+1", "a b:1", "[h]:1", "::1:4160", "[::1]4160", "h:1x"]
    {
        assert!(bad.parse::<Locator>().is_err(), "{bad}");
    }
    assert_eq!(loc("[::1]:4160").to_string(), "[::1]:4160");
    assert_eq!(loc("Host_1.Example-2:65535"), Locator::new("host_1.example-2", 65535).unwrap());
}

#[test]
fn poll_timeout_is_exactly_when_a_registration_ends() {
    let mut config = DiscoveryConfig::new(SERVICE, [5; 32]);
    config.landlord = config.landlord.with_grace(500);
    let mut w = World::with(config);
    let r = w.svc.register(Groups::none(), [], vec![], 10 * SEC, 0).unwrap();
    assert_eq!(w.svc.poll_timeout(), Some(10 * SEC + 501), "honoured through the grace period");
    w.at(10 * SEC + 500);
    assert!(w.svc.lease(r.id, w.now).is_ok());
    let renew =
        Request { id: 1, body: RequestBody::Renew { cookie: r.lease.cookie(), duration: MIN } };
    w.svc.handle_request(&renew, w.now);
    assert_eq!(w.svc.poll_timeout(), Some(10 * SEC + 500 + MIN + 501));
    w.at(10 * SEC + 500 + MIN + 501);
    assert_eq!(w.svc.registrations(), Vec::<RegistrationId>::new());
    assert_eq!(w.svc.poll_timeout(), None);
    let forever = w.svc.register(Groups::none(), [], vec![], FOREVER, w.now).unwrap();
    assert_eq!(w.svc.poll_timeout(), Some(forever.lease.expiration() + 501), "the policy's bound");
}
