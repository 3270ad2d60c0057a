//! Random operation sequences against the renewal service, checked against a plain model of
//! the LR rules: only leases some live set wants are ever renewed, every lease a live set
//! holds stays alive at its landlord (or its failure is reported), nothing is ever cancelled,
//! and events are numbered and handed back correctly.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use leasehold::policy::Bounded;
use leasehold::service::{RenewalService, RenewalServiceConfig, SetEventKind, SetId};
use leasehold::wire::{ReplyBody, Request, RequestBody};
use leasehold::{
    Cookie, Duration, Landlord, LandlordConfig, LandlordId, Lease, LeaseError, Millis, ANY, FOREVER,
};

const SEC: i64 = 1_000;
const MIN: i64 = 60 * SEC;

#[derive(Debug, Clone)]
enum Op {
    CreateSet {
        minutes: i64,
    },
    AddNew {
        set: usize,
        landlord: u64,
        membership: Duration,
        renew: Duration,
    },
    ReAdd {
        set: usize,
        which: usize,
        membership: Duration,
        renew: Duration,
    },
    Remove {
        set: usize,
        which: usize,
    },
    RenewSet {
        set: usize,
        minutes: i64,
    },
    CancelSet {
        set: usize,
    },
    Forget {
        which: usize,
    },
    Down {
        landlord: u64,
        down: bool,
    },
    Advance {
        ms: i64,
    },
    /// Snapshot, carry as JSON, restore at the same time.
    Restart,
}

fn membership() -> impl Strategy<Value = Duration> {
    prop_oneof![
        1 => Just(0i64),
        1 => -5 * MIN..0i64,
        6 => 1i64..40 * MIN,
        3 => Just(FOREVER),
    ]
}

fn renew_for(membership: Duration, pick: u8) -> Duration {
    match pick % 4 {
        0 if membership == FOREVER => ANY,
        0 | 1 => MIN,
        2 => 3 * MIN,
        _ => FOREVER,
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (1i64..90).prop_map(|minutes| Op::CreateSet { minutes }),
        4 => (0usize..8, 1u64..=2, membership(), any::<u8>()).prop_map(|(set, landlord, m, r)| {
            Op::AddNew { set, landlord, membership: m, renew: renew_for(m, r) }
        }),
        2 => (0usize..8, 0usize..16, membership(), any::<u8>()).prop_map(|(set, which, m, r)| {
            Op::ReAdd { set, which, membership: m, renew: renew_for(m, r) }
        }),
        1 => (0usize..8, 0usize..16).prop_map(|(set, which)| Op::Remove { set, which }),
        1 => (0usize..8, 1i64..90).prop_map(|(set, minutes)| Op::RenewSet { set, minutes }),
        1 => (0usize..8).prop_map(|set| Op::CancelSet { set }),
        1 => (0usize..16).prop_map(|which| Op::Forget { which }),
        1 => (1u64..=2, any::<bool>()).prop_map(|(landlord, down)| Op::Down { landlord, down }),
        5 => (1i64..15 * MIN).prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::Restart),
    ]
}

#[derive(Default)]
struct ModelSet {
    cookie: Cookie,
    expiration: Millis,
    /// Client lease -> membership (desired) expiration.
    members: BTreeMap<(LandlordId, Cookie), Millis>,
    failure_event: u64,
    handback: Vec<u8>,
    last_sequence: u64,
    /// Restored since the last event: the next number may jump.
    jumped: bool,
}

struct Run {
    now: Millis,
    svc: RenewalService,
    lls: BTreeMap<LandlordId, Landlord>,
    down: BTreeSet<LandlordId>,
    forgotten: BTreeSet<(LandlordId, Cookie)>,
    sets: Vec<SetId>,
    model: BTreeMap<SetId, ModelSet>,
    clients: Vec<Lease>,
}

impl Run {
    fn new() -> Run {
        let mut lls = BTreeMap::new();
        for id in [1u64, 2] {
            lls.insert(
                LandlordId(id),
                Landlord::new(
                    LandlordConfig::new(LandlordId(id), [id as u8; 32]),
                    Bounded::new(10 * MIN, MIN).unwrap(),
                ),
            );
        }
        Run {
            now: 0,
            svc: RenewalService::new(RenewalServiceConfig::new(LandlordId(0x5e), [4; 32])).unwrap(),
            lls,
            down: BTreeSet::new(),
            forgotten: BTreeSet::new(),
            sets: Vec::new(),
            model: BTreeMap::new(),
            clients: Vec::new(),
        }
    }

    fn set_alive(&self, set: SetId, t: Millis) -> bool {
        self.model.get(&set).is_some_and(|s| s.expiration >= t)
    }

    /// Some live set wants `key` renewed at `t`.
    fn wanted(&self, key: (LandlordId, Cookie), t: Millis) -> bool {
        self.model
            .values()
            .any(|s| s.expiration >= t && s.members.get(&key).is_some_and(|&m| m > t))
    }

    fn pump(&mut self) {
        while let Some(tx) = self.svc.poll_transmit(self.now) {
            match &tx.request.body {
                RequestBody::Renew { cookie, .. } => {
                    assert!(self.wanted((tx.landlord, *cookie), self.now), "renewal nobody wants")
                }
                RequestBody::RenewAll { items } => {
                    for (c, _) in items {
                        assert!(self.wanted((tx.landlord, *c), self.now), "renewal nobody wants")
                    }
                }
                other => panic!("the service sent {other:?}"),
            }
            if self.down.contains(&tx.landlord) {
                let e = LeaseError::Indefinite("down".into());
                self.svc.handle_failure(tx.request.id, e, self.now);
            } else {
                let reply =
                    self.lls.get_mut(&tx.landlord).unwrap().handle_request(&tx.request, self.now);
                self.svc.handle_reply(&reply, self.now);
            }
        }
        while let Some(e) = self.svc.poll_event() {
            // Delivered at once, and reported: a restore does not hand it out again.
            assert!(self.svc.delivered(e.event_id, e.sequence, self.now));
            let SetEventKind::RenewalFailure { set, lease, .. } = e.kind else {
                panic!("no warnings were registered: {e:?}");
            };
            let m = self.model.get_mut(&set).expect("failure events come only from live sets");
            assert_eq!(e.event_id, m.failure_event);
            assert_eq!(e.handback, m.handback);
            if m.jumped {
                assert!(e.sequence > m.last_sequence, "never a number twice");
                m.jumped = false;
            } else {
                assert_eq!(e.sequence, m.last_sequence + 1, "numbered one by one");
            }
            m.last_sequence = e.sequence;
            let key = (lease.landlord(), lease.cookie());
            assert!(m.members.remove(&key).is_some(), "failure of a lease the set holds");
        }
    }

    fn advance(&mut self, to: Millis) {
        self.pump();
        loop {
            let next = self
                .lls
                .values()
                .filter_map(|l| l.poll_timeout())
                .chain(self.svc.poll_timeout())
                .min();
            let t = match next {
                Some(t) if t <= to => t.max(self.now),
                _ => to,
            };
            self.now = t;
            self.svc.handle_timeout(t);
            for ll in self.lls.values_mut() {
                ll.handle_timeout(t);
                while ll.poll_expired().is_some() {}
            }
            // The model forgets what ended by now, as the service does.
            self.model.retain(|_, s| s.expiration >= t);
            for s in self.model.values_mut() {
                s.members.retain(|_, m| *m > t);
            }
            self.pump();
            self.check_alive();
            if t >= to {
                return;
            }
        }
    }

    /// Every lease a live set holds is alive at its landlord, unless the landlord forgot it
    /// (its failure comes with the next attempt).
    fn check_alive(&self) {
        for (set, s) in &self.model {
            for key in s.members.keys() {
                if self.forgotten.contains(key) {
                    continue;
                }
                assert!(
                    self.lls[&key.0].get(key.1, self.now).is_some(),
                    "{set:?} holds {key:?}, dead at its landlord at {}",
                    self.now
                );
            }
        }
    }

    fn add(&mut self, set: SetId, lease: Lease, membership: Duration, renew: Duration) {
        let alive = self.set_alive(set, self.now);
        let r = self.svc.add(set, lease, membership, renew, self.now);
        assert_eq!(r.is_ok(), alive, "{r:?}");
        if r.is_err() {
            return;
        }
        let key = (lease.landlord(), lease.cookie());
        let m = self.model.get_mut(&set).unwrap();
        let exp = if membership == FOREVER { FOREVER } else { self.now.saturating_add(membership) };
        if exp > self.now {
            m.members.insert(key, exp);
        } else {
            m.members.remove(&key);
        }
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::CreateSet { minutes } => {
                let (id, lease) = self.svc.create_set(minutes * MIN, self.now).unwrap();
                let handback = id.0.to_be_bytes().to_vec();
                let reg =
                    self.svc.set_renewal_failure_listener(id, handback.clone(), self.now).unwrap();
                self.sets.push(id);
                self.model.insert(
                    id,
                    ModelSet {
                        cookie: lease.cookie(),
                        expiration: lease.expiration(),
                        failure_event: reg.event_id,
                        handback,
                        last_sequence: reg.sequence,
                        ..Default::default()
                    },
                );
            }
            Op::AddNew { set, landlord, membership, renew } => {
                let Some(&set) = self.sets.get(set % self.sets.len().max(1)) else { return };
                let id = LandlordId(landlord);
                let g = self.lls.get_mut(&id).unwrap().grant(vec![], MIN, self.now).unwrap();
                let lease = Lease::new(id, g.cookie, g.expiration);
                self.clients.push(lease);
                self.add(set, lease, membership, renew);
            }
            Op::ReAdd { set, which, membership, renew } => {
                let Some(&set) = self.sets.get(set % self.sets.len().max(1)) else { return };
                // Only a lease some live set holds (so it is alive and current).
                let held: Vec<(LandlordId, Cookie)> =
                    self.model.values().flat_map(|s| s.members.keys().copied()).collect();
                let Some(&key) = held.get(which % held.len().max(1)) else { return };
                if self.forgotten.contains(&key) {
                    return;
                }
                let lease = self
                    .clients
                    .iter()
                    .find(|l| (l.landlord(), l.cookie()) == key)
                    .copied()
                    .unwrap();
                self.add(set, lease, membership, renew);
            }
            Op::Remove { set, which } => {
                let Some(&set) = self.sets.get(set % self.sets.len().max(1)) else { return };
                let Some(lease) = self.clients.get(which % self.clients.len().max(1)).copied()
                else {
                    return;
                };
                let alive = self.set_alive(set, self.now);
                let r = self.svc.remove(set, &lease, self.now);
                assert_eq!(r.is_ok(), alive);
                if let Ok(back) = r {
                    let key = (lease.landlord(), lease.cookie());
                    let had = self.model.get_mut(&set).unwrap().members.remove(&key).is_some();
                    assert_eq!(back.is_some(), had);
                }
            }
            Op::RenewSet { set, minutes } => {
                let Some(&set) = self.sets.get(set % self.sets.len().max(1)) else { return };
                let Some(cookie) = self.model.get(&set).map(|s| s.cookie) else { return };
                let body = RequestBody::Renew { cookie, duration: minutes * MIN };
                let reply = self.svc.handle_request(&Request { id: 1, body }, self.now);
                match reply.body {
                    ReplyBody::Renewed { duration } => {
                        self.model.get_mut(&set).unwrap().expiration = self.now + duration
                    }
                    other => assert!(!self.set_alive(set, self.now), "{other:?}"),
                }
            }
            Op::CancelSet { set } => {
                let Some(&set) = self.sets.get(set % self.sets.len().max(1)) else { return };
                let Some(cookie) = self.model.get(&set).map(|s| s.cookie) else { return };
                let reply = self.svc.handle_request(
                    &Request { id: 2, body: RequestBody::Cancel { cookie } },
                    self.now,
                );
                assert_eq!(reply.body == ReplyBody::Cancelled, self.set_alive(set, self.now));
                self.model.remove(&set);
            }
            Op::Forget { which } => {
                let Some(lease) = self.clients.get(which % self.clients.len().max(1)).copied()
                else {
                    return;
                };
                let ll = self.lls.get_mut(&lease.landlord()).unwrap();
                if ll.cancel(lease.cookie(), self.now).is_ok() {
                    self.forgotten.insert((lease.landlord(), lease.cookie()));
                }
            }
            Op::Down { landlord, down } => {
                if down {
                    self.down.insert(LandlordId(landlord));
                } else {
                    self.down.remove(&LandlordId(landlord));
                }
            }
            Op::Restart => {
                let text = self.svc.snapshot(self.now).to_json();
                let snap = leasehold::service::ServiceSnapshot::from_json(&text).unwrap();
                let config = RenewalServiceConfig::new(LandlordId(0x5e), [4; 32]);
                self.svc = RenewalService::restore(config, snap, self.now).unwrap();
                for s in self.model.values_mut() {
                    s.jumped = true;
                }
            }
            Op::Advance { ms } => {
                let to = self.now + ms;
                self.advance(to);
            }
        }
        self.pump();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn the_service_follows_the_lr_rules(ops in proptest::collection::vec(op(), 1..40)) {
        let mut run = Run::new();
        for op in ops {
            run.apply(op);
        }
        let end = run.now + 3 * 60 * MIN;
        run.advance(end);
        // Every set has expired by now; nothing is renewed any more.
        prop_assert!(run.svc.sets().is_empty());
        prop_assert!(run.svc.manager().is_empty());
        prop_assert!(run.svc.poll_transmit(run.now).is_none());
    }
}
