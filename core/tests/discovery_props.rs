//! Random streams of announcements, unicast answers, unreachable reports, group and locator
//! changes, discards, lease renewals and cancels, delivery outcomes and time, against the lookup
//! discovery service:
//!
//! - sequence numbers strictly increase per event id, and an event handed out again (a retry)
//!   is the very same event;
//! - discovered events are exactly once per (registration, registrar) until discarded: the
//!   delivered events of a registration alternate discovered / discarded for each registrar,
//!   starting with discovered;
//! - once every event is delivered, what a client rebuilt from its events is exactly what
//!   `registrars()` says;
//! - after every step the service's invariants hold (a snapshot restores);
//! - twins: a service snapshotted (through JSON) and restored at random moments gives the same
//!   answers, events, transmissions and timeouts as one never restored, and the same state.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use leasehold::discovery::{
    Announcement, DeliveryFailure, DiscoveryConfig, DiscoveryService, DiscoverySnapshot, Groups,
    Locator, Registered, RegistrarId, UnicastResponse,
};
use leasehold::wire::{Request, RequestBody};
use leasehold::{Duration, EventId, LandlordId, LeaseError, Millis, ANY, FOREVER};

const SEC: i64 = 1_000;
const MIN: i64 = 60 * SEC;
const GROUPS: [&str; 3] = ["a", "b", "c"];
const HOSTS: [&str; 4] = ["h1:1", "h2:1", "h3:1", "h4:1"];

fn group_set(bits: u8) -> BTreeSet<String> {
    GROUPS
        .iter()
        .enumerate()
        .filter(|(i, _)| bits >> i & 1 == 1)
        .map(|(_, g)| g.to_string())
        .collect()
}

fn groups_of(pick: u8) -> Groups {
    if pick == 8 {
        Groups::All
    } else {
        Groups::Only(group_set(pick))
    }
}

fn locators(bits: u8) -> Vec<Locator> {
    HOSTS
        .iter()
        .enumerate()
        .filter(|(i, _)| bits >> i & 1 == 1)
        .map(|(_, h)| h.parse().unwrap())
        .collect()
}

#[derive(Debug, Clone)]
enum Outcome {
    Delivered,
    Indefinite,
    Unreported,
    UnknownEvent,
}

#[derive(Debug, Clone)]
enum Op {
    Register {
        groups: u8,
        locators: u8,
        duration: Duration,
    },
    Announce {
        registrar: u128,
        groups: u8,
        host: usize,
        ttl: Duration,
        stale: bool,
    },
    Advance {
        ms: i64,
    },
    Deliver {
        outcome: Outcome,
    },
    Probe {
        answer: Option<(u128, u8)>,
        reply: bool,
    },
    Unreachable {
        registrar: u128,
    },
    Discard {
        reg: usize,
        registrar: u128,
    },
    AddGroups {
        reg: usize,
        groups: u8,
    },
    SetGroups {
        reg: usize,
        groups: u8,
    },
    RemoveGroups {
        reg: usize,
        groups: u8,
    },
    AddLocators {
        reg: usize,
        locators: u8,
    },
    SetLocators {
        reg: usize,
        locators: u8,
    },
    RemoveLocators {
        reg: usize,
        locators: u8,
    },
    Renew {
        reg: usize,
        duration: Duration,
    },
    Cancel {
        reg: usize,
    },
    /// Let six minutes pass, delivering everything; then every client view must be exact.
    Settle,
    /// Snapshot through JSON and restore (the twin only, in the twin test).
    Restart,
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![Just(5 * SEC), Just(30 * SEC), Just(2 * MIN), Just(ANY), Just(FOREVER), Just(0)]
}

fn op() -> impl Strategy<Value = Op> {
    let reg = 0usize..6;
    let registrar = 1u128..=5;
    prop_oneof![
        3 => (0u8..=8, 0u8..16, duration())
            .prop_map(|(groups, locators, duration)| Op::Register { groups, locators, duration }),
        8 => (registrar.clone(), 0u8..8, 0usize..4, 1i64..40 * SEC, prop::bool::weighted(0.1))
            .prop_map(|(registrar, groups, host, ttl, stale)| Op::Announce { registrar, groups, host, ttl, stale }),
        5 => (0i64..20 * SEC).prop_map(|ms| Op::Advance { ms }),
        8 => prop_oneof![
            6 => Just(Outcome::Delivered),
            2 => Just(Outcome::Indefinite),
            1 => Just(Outcome::Unreported),
            1 => Just(Outcome::UnknownEvent),
        ].prop_map(|outcome| Op::Deliver { outcome }),
        3 => (prop::option::of((registrar.clone(), 0u8..8)), prop::bool::weighted(0.9))
            .prop_map(|(answer, reply)| Op::Probe { answer, reply }),
        1 => registrar.clone().prop_map(|registrar| Op::Unreachable { registrar }),
        2 => (reg.clone(), registrar).prop_map(|(reg, registrar)| Op::Discard { reg, registrar }),
        1 => (reg.clone(), 0u8..8).prop_map(|(reg, groups)| Op::AddGroups { reg, groups }),
        1 => (reg.clone(), 0u8..=8).prop_map(|(reg, groups)| Op::SetGroups { reg, groups }),
        1 => (reg.clone(), 0u8..8).prop_map(|(reg, groups)| Op::RemoveGroups { reg, groups }),
        1 => (reg.clone(), 0u8..16).prop_map(|(reg, locators)| Op::AddLocators { reg, locators }),
        1 => (reg.clone(), 0u8..16).prop_map(|(reg, locators)| Op::SetLocators { reg, locators }),
        1 => (reg.clone(), 0u8..16).prop_map(|(reg, locators)| Op::RemoveLocators { reg, locators }),
        2 => (reg.clone(), duration()).prop_map(|(reg, duration)| Op::Renew { reg, duration }),
        1 => reg.prop_map(|reg| Op::Cancel { reg }),
        1 => Just(Op::Settle),
        1 => Just(Op::Restart),
    ]
}

fn config(restore_jump: u64) -> DiscoveryConfig {
    let mut c = DiscoveryConfig::new(LandlordId(0xd15c), [8; 32]);
    c.restore_jump = restore_jump;
    c
}

/// What a client learns from its delivered events, per event id.
#[derive(Default)]
struct Client {
    last: u64,
    view: BTreeSet<RegistrarId>,
}

/// One service driven by ops, checking what it hands out; every output is logged as text so that
/// two runs can be compared.
struct Run {
    svc: DiscoveryService,
    restore_jump: u64,
    now: Millis,
    seq: BTreeMap<u128, u64>,
    regs: Vec<Registered>,
    clients: BTreeMap<EventId, Client>,
    /// The event in flight per event id (a retry must hand out the same one).
    in_flight: BTreeMap<EventId, (u64, String)>,
    log: Vec<String>,
}

impl Run {
    fn new(restore_jump: u64) -> Run {
        Run {
            svc: DiscoveryService::new(config(restore_jump)).unwrap(),
            restore_jump,
            now: 0,
            seq: BTreeMap::new(),
            regs: Vec::new(),
            clients: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            log: Vec::new(),
        }
    }

    fn reg(&self, i: usize) -> Option<Registered> {
        (!self.regs.is_empty()).then(|| self.regs[i % self.regs.len()].clone())
    }

    fn out(&mut self, what: impl std::fmt::Debug) {
        self.log.push(format!("{what:?}"));
    }

    /// Hands out the next due event and checks it; `None` when none is due.
    fn next_event(&mut self) -> Option<leasehold::discovery::RemoteDiscoveryEvent> {
        let e = self.svc.poll_event(self.now)?;
        let text = format!("{e:?}");
        let c = self.clients.entry(e.event_id).or_default();
        assert!(e.sequence > c.last, "event {} number {} after {}", e.event_id, e.sequence, c.last);
        if let Some((seq, prev)) = self.in_flight.get(&e.event_id) {
            if *seq == e.sequence {
                assert_eq!(prev, &text, "a retry is the same event");
            }
        }
        self.in_flight.insert(e.event_id, (e.sequence, text.clone()));
        self.log.push(text);
        Some(e)
    }

    fn accept(&mut self, e: &leasehold::discovery::RemoteDiscoveryEvent) {
        let c = self.clients.entry(e.event_id).or_default();
        c.last = e.sequence;
        for g in e.registrars() {
            if e.is_discarded() {
                assert!(c.view.remove(&g.id), "discarded {g:?} that was not discovered: {e:?}");
            } else {
                assert!(c.view.insert(g.id), "discovered {g:?} twice without a discard: {e:?}");
            }
        }
        self.in_flight.remove(&e.event_id);
    }

    fn deliver_all(&mut self) {
        while let Some(e) = self.next_event() {
            let ok = self.svc.delivered(e.event_id, e.sequence, self.now);
            assert!(ok);
            self.accept(&e);
        }
    }

    fn apply(&mut self, op: &Op) {
        let now = self.now;
        match op.clone() {
            Op::Register { groups, locators: l, duration } => {
                let r = self.svc.register(
                    groups_of(groups),
                    locators(l),
                    vec![groups, l],
                    duration,
                    now,
                );
                self.out(&r);
                if let Ok(r) = r {
                    let c = self.clients.entry(r.event.event_id).or_default();
                    *c = Client { last: r.event.sequence, view: BTreeSet::new() };
                    self.regs.push(r);
                }
            }
            Op::Announce { registrar, groups, host, ttl, stale } => {
                let s = self.seq.entry(registrar).or_insert(0);
                if !stale {
                    *s += 1;
                }
                let a = Announcement {
                    registrar: RegistrarId(registrar),
                    groups: group_set(groups),
                    locator: HOSTS[host].parse().unwrap(),
                    sequence: *s,
                    ttl,
                };
                let r = self.svc.handle_announcement(&a, now);
                self.out(r);
            }
            Op::Advance { ms } => {
                self.now += ms;
                self.svc.handle_timeout(self.now);
            }
            Op::Deliver { outcome } => {
                if let Some(e) = self.next_event() {
                    let r = match outcome {
                        Outcome::Delivered => {
                            let ok = self.svc.delivered(e.event_id, e.sequence, now);
                            self.accept(&e);
                            ok
                        }
                        Outcome::Indefinite => {
                            let f = DeliveryFailure::Indefinite("503".into());
                            self.svc.delivery_failed(e.event_id, e.sequence, f, now)
                        }
                        Outcome::Unreported => true,
                        Outcome::UnknownEvent => {
                            self.clients.remove(&e.event_id);
                            self.svc.delivery_failed(
                                e.event_id,
                                e.sequence,
                                DeliveryFailure::UnknownEvent,
                                now,
                            )
                        }
                    };
                    assert!(r, "the event just handed out is awaited");
                }
            }
            Op::Probe { answer, reply } => {
                let p = self.svc.poll_transmit(now);
                self.out(&p);
                if let (Some(p), true) = (p, reply) {
                    let result = match answer {
                        Some((g, bits)) => Ok(UnicastResponse {
                            registrar: RegistrarId(g),
                            groups: group_set(bits),
                        }),
                        None => Err(LeaseError::Indefinite("refused".into())),
                    };
                    let r = self.svc.handle_unicast(p.id, result, now);
                    self.out(r);
                }
            }
            Op::Unreachable { registrar } => {
                let r = self.svc.registrar_unreachable(RegistrarId(registrar), now);
                self.out(r);
            }
            Op::Discard { reg, registrar } => {
                if let Some(r) = self.reg(reg) {
                    let x = self.svc.discard(r.id, RegistrarId(registrar), now);
                    self.out(x);
                }
            }
            Op::AddGroups { reg, groups } => {
                if let Some(r) = self.reg(reg) {
                    let x = self.svc.add_groups(r.id, group_set(groups), now);
                    self.out(x);
                }
            }
            Op::SetGroups { reg, groups } => {
                if let Some(r) = self.reg(reg) {
                    let x = self.svc.set_groups(r.id, groups_of(groups), now);
                    self.out(x);
                }
            }
            Op::RemoveGroups { reg, groups } => {
                if let Some(r) = self.reg(reg) {
                    let x = self.svc.remove_groups(r.id, group_set(groups), now);
                    self.out(x);
                }
            }
            Op::AddLocators { reg, locators: l } => {
                if let Some(r) = self.reg(reg) {
                    let x = self.svc.add_locators(r.id, locators(l), now);
                    self.out(x);
                }
            }
            Op::SetLocators { reg, locators: l } => {
                if let Some(r) = self.reg(reg) {
                    let x = self.svc.set_locators(r.id, locators(l), now);
                    self.out(x);
                }
            }
            Op::RemoveLocators { reg, locators: l } => {
                if let Some(r) = self.reg(reg) {
                    let x = self.svc.remove_locators(r.id, locators(l), now);
                    self.out(x);
                }
            }
            Op::Renew { reg, duration } => {
                if let Some(r) = self.reg(reg) {
                    let req = Request {
                        id: 1,
                        body: RequestBody::Renew { cookie: r.lease.cookie(), duration },
                    };
                    let x = self.svc.handle_request(&req, now);
                    self.out(x);
                }
            }
            Op::Cancel { reg } => {
                if let Some(r) = self.reg(reg) {
                    let req =
                        Request { id: 2, body: RequestBody::Cancel { cookie: r.lease.cookie() } };
                    let x = self.svc.handle_request(&req, now);
                    self.out(x);
                }
            }
            Op::Settle => self.settle(),
            Op::Restart => {
                // Outputs nothing: its twin, never restarted, must be indistinguishable.
                self.restart();
                self.check_invariants();
                return;
            }
        }
        let timeout = self.svc.poll_timeout();
        self.out(timeout);
        self.check_invariants();
    }

    /// Six minutes of a perfect host: every timeout served, every event delivered. Afterwards
    /// nothing is left to deliver, and each live registration's client view is exact.
    fn settle(&mut self) {
        let end = self.now + 6 * MIN;
        loop {
            self.deliver_all();
            // Unicast discovery finds nothing while settling (it is retried later).
            while let Some(p) = self.svc.poll_transmit(self.now) {
                self.out(&p);
                let r = self.svc.handle_unicast(
                    p.id,
                    Err(LeaseError::Indefinite("none".into())),
                    self.now,
                );
                assert!(r);
            }
            match self.svc.poll_timeout() {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    self.svc.handle_timeout(self.now);
                }
                _ => break,
            }
        }
        self.now = end;
        self.svc.handle_timeout(end);
        self.deliver_all();
        for r in self.regs.clone() {
            let Ok(held) = self.svc.registrars(r.id, self.now) else { continue };
            let held: BTreeSet<RegistrarId> = held.iter().map(|g| g.id).collect();
            let view = &self.clients[&r.event.event_id].view;
            assert_eq!(&held, view, "{:?}: the client's view from its events", r.id);
        }
    }

    fn restart(&mut self) {
        let text = self.svc.snapshot().to_json();
        let snap = DiscoverySnapshot::from_json(&text).unwrap();
        self.svc =
            DiscoveryService::restore(config(self.restore_jump), snap, self.svc.now()).unwrap();
        if self.restore_jump != 0 {
            // Numbers jumped: nothing in flight is remembered by number any more.
            self.in_flight.clear();
        }
    }

    fn check_invariants(&self) {
        let snap = self.svc.snapshot();
        if let Err(e) = DiscoveryService::restore(config(0), snap, self.svc.now()) {
            panic!("invariants broken: {e}");
        }
    }
}

fn run_ops(ops: &[Op]) {
    let mut run = Run::new(leasehold::event::DEFAULT_RESTORE_JUMP);
    for op in ops {
        run.apply(op);
    }
    run.settle();
}

fn twins(ops: &[Op]) {
    let mut plain = Run::new(0);
    let mut twin = Run::new(0);
    for (i, op) in ops.iter().enumerate() {
        if !matches!(op, Op::Restart) {
            plain.apply(op);
        }
        twin.apply(op);
        assert_eq!(plain.log, twin.log, "step {i}: {op:?}");
        assert_eq!(plain.svc.snapshot(), twin.svc.snapshot(), "step {i}: {op:?}");
    }
    plain.settle();
    twin.settle();
    assert_eq!(plain.log, twin.log);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn events_are_numbered_and_exactly_once(ops in prop::collection::vec(op(), 1..160)) {
        run_ops(&ops);
    }

    #[test]
    fn a_restored_service_is_the_same_service(ops in prop::collection::vec(op(), 1..160)) {
        twins(&ops);
    }
}

#[test]
fn a_long_run_of_every_operation() {
    // One long deterministic run, with a simple generator of its own, well past the lengths
    // proptest explores.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut ops = Vec::new();
    for _ in 0..4000 {
        let reg = next(6) as usize;
        let g = next(5) as u128 + 1;
        ops.push(match next(20) {
            0..=1 => {
                Op::Register { groups: next(9) as u8, locators: next(16) as u8, duration: 2 * MIN }
            }
            2..=5 => Op::Announce {
                registrar: g,
                groups: next(8) as u8,
                host: next(4) as usize,
                ttl: 30 * SEC,
                stale: false,
            },
            6..=7 => Op::Advance { ms: next(15 * SEC as u64) as i64 },
            8..=11 => Op::Deliver {
                outcome: if next(5) == 0 { Outcome::Indefinite } else { Outcome::Delivered },
            },
            12 => Op::Probe { answer: (next(2) == 0).then(|| (g, next(8) as u8)), reply: true },
            13 => Op::Unreachable { registrar: g },
            14 => Op::Discard { reg, registrar: g },
            15 => Op::SetGroups { reg, groups: next(9) as u8 },
            16 => Op::SetLocators { reg, locators: next(16) as u8 },
            17 => Op::Renew { reg, duration: 2 * MIN },
            18 => Op::Settle,
            _ => Op::Restart,
        });
    }
    twins(&ops);
    run_ops(&ops);
}
