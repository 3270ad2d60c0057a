//! Durability of the lookup discovery service: its journal and binary snapshot.
//!
//! - twins: one service never restored, one journaled and rebuilt from its binary snapshot plus
//!   journal at random moments (half the time compacted first); fed the same calls at the same
//!   host times (steps back included, and read-only calls that move time), every answer, event,
//!   transmission and timeout must be the same, and so must the whole state after every step;
//! - crashes through `store::MemDir` with torn tails: whatever was committed before the crash is
//!   there after recovery, exactly as it was;
//! - a registration, its event registration, its listener and its sequence numbers survive a
//!   restart, and time spent down does not count;
//! - damaged or foreign journals are refused.

mod common;

use std::collections::BTreeMap;

use proptest::prelude::*;

use leasehold::discovery::{
    Announcement, DeliveryFailure, DiscoveryConfig, DiscoveryService, Groups, Locator, Registered,
    RegistrarId, UnicastResponse,
};
use leasehold::journal::{Journaled, KIND_DISCOVERY};
use leasehold::store::{MemDir, Opened, Store, StoreConfig};
use leasehold::wire::{Request, RequestBody};
use leasehold::{Duration, ErrorCode, LandlordId, LeaseError, Millis, PolicySpec, ANY, FOREVER};
use proptest::strategy::ValueTree;

const SEC: i64 = 1_000;
const MIN: i64 = 60 * SEC;
const GROUPS: [&str; 3] = ["a", "b", "c"];
const HOSTS: [&str; 4] = ["h1:1", "h2:1", "h3:1", "h4:1"];
const ID: LandlordId = LandlordId(0xd15c);

fn config() -> DiscoveryConfig {
    let mut c = DiscoveryConfig::new(ID, [8; 32]);
    c.event_retry = vec![SEC, 3 * SEC];
    c.delivery_timeout = 4 * SEC;
    c.unicast_retry = vec![SEC, 2 * SEC];
    c.unicast_timeout = 3 * SEC;
    c.lease_policy = PolicySpec::Bounded { max: 2 * MIN, default: MIN };
    c
}

fn group_set(bits: u8) -> std::collections::BTreeSet<String> {
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
enum Op {
    Register {
        groups: u8,
        locators: u8,
        duration: Duration,
    },
    Listener {
        reg: usize,
        bytes: u8,
    },
    Announce {
        registrar: u128,
        groups: u8,
        host: usize,
        ttl: Duration,
        stale: bool,
    },
    /// Host time moves (backwards too: the service's time must not).
    Step {
        ms: i64,
    },
    Timeout,
    /// A read-only call: it still brings the service to `now`.
    Look {
        reg: usize,
    },
    Deliver {
        outcome: u8,
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
    SetGroups {
        reg: usize,
        groups: u8,
    },
    AddGroups {
        reg: usize,
        groups: u8,
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
    Reconfigure {
        max: Duration,
    },
    /// The durable twin is rebuilt from its disk (compacted first if the flag says so).
    Rebuild {
        compact: bool,
    },
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![Just(5 * SEC), Just(30 * SEC), Just(3 * MIN), Just(ANY), Just(FOREVER), Just(0)]
}

fn op() -> impl Strategy<Value = Op> {
    let reg = 0usize..6;
    let registrar = 1u128..=5;
    prop_oneof![
        3 => (0u8..=8, 0u8..16, duration())
            .prop_map(|(groups, locators, duration)| Op::Register { groups, locators, duration }),
        1 => (reg.clone(), 0u8..3).prop_map(|(reg, bytes)| Op::Listener { reg, bytes }),
        8 => (registrar.clone(), 0u8..8, 0usize..4, 1i64..20 * SEC, prop::bool::weighted(0.1))
            .prop_map(|(registrar, groups, host, ttl, stale)| Op::Announce { registrar, groups, host, ttl, stale }),
        6 => (-3 * SEC..10 * SEC).prop_map(|ms| Op::Step { ms }),
        2 => Just(Op::Timeout),
        2 => reg.clone().prop_map(|reg| Op::Look { reg }),
        8 => (0u8..5).prop_map(|outcome| Op::Deliver { outcome }),
        3 => (prop::option::of((registrar.clone(), 0u8..8)), prop::bool::weighted(0.8))
            .prop_map(|(answer, reply)| Op::Probe { answer, reply }),
        1 => registrar.clone().prop_map(|registrar| Op::Unreachable { registrar }),
        2 => (reg.clone(), registrar).prop_map(|(reg, registrar)| Op::Discard { reg, registrar }),
        1 => (reg.clone(), 0u8..=8).prop_map(|(reg, groups)| Op::SetGroups { reg, groups }),
        1 => (reg.clone(), 0u8..8).prop_map(|(reg, groups)| Op::AddGroups { reg, groups }),
        1 => (reg.clone(), 0u8..16).prop_map(|(reg, locators)| Op::SetLocators { reg, locators }),
        1 => (reg.clone(), 0u8..16).prop_map(|(reg, locators)| Op::RemoveLocators { reg, locators }),
        2 => (reg.clone(), duration()).prop_map(|(reg, duration)| Op::Renew { reg, duration }),
        1 => reg.prop_map(|reg| Op::Cancel { reg }),
        1 => prop_oneof![Just(MIN), Just(5 * MIN)].prop_map(|max| Op::Reconfigure { max }),
        2 => any::<bool>().prop_map(|compact| Op::Rebuild { compact }),
    ]
}

/// Drives one service; every output goes to `log` as text so that two runs can be compared.
struct Driver {
    regs: Vec<Registered>,
    seq: BTreeMap<u128, u64>,
    /// The event handed out and not yet answered, if any.
    out: Vec<(u64, u64)>,
}

impl Driver {
    fn new() -> Driver {
        Driver { regs: Vec::new(), seq: BTreeMap::new(), out: Vec::new() }
    }

    fn reg(&self, i: usize) -> Option<Registered> {
        (!self.regs.is_empty()).then(|| self.regs[i % self.regs.len()].clone())
    }

    /// Runs `op` on `svc` at host time `now`; returns what it saw.
    fn step(&mut self, svc: &mut DiscoveryService, op: &Op, now: Millis) -> Vec<String> {
        let mut log = Vec::new();
        let mut out = |x: &dyn std::fmt::Debug| log.push(format!("{x:?}"));
        match op.clone() {
            Op::Register { groups, locators: l, duration } => {
                let r =
                    svc.register(groups_of(groups), locators(l), vec![groups, l], duration, now);
                out(&r);
                if let Ok(r) = r {
                    self.regs.push(r);
                }
            }
            Op::Listener { reg, bytes } => {
                if let Some(r) = self.reg(reg) {
                    let b = format!("http://listener/{bytes}").into_bytes();
                    out(&svc.set_listener(r.id, b, now));
                    out(&svc.listener(r.id));
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
                out(&svc.handle_announcement(&a, now));
            }
            Op::Step { .. } => {}
            Op::Timeout => svc.handle_timeout(now),
            Op::Look { reg } => {
                if let Some(r) = self.reg(reg) {
                    out(&svc.registrars(r.id, now));
                    out(&svc.event_registration(r.id, now));
                }
            }
            Op::Deliver { outcome } => {
                if let Some(e) = svc.poll_event(now) {
                    out(&e);
                    let r = match outcome {
                        0 | 1 => svc.delivered(e.event_id, e.sequence, now),
                        2 => svc.delivery_failed(
                            e.event_id,
                            e.sequence,
                            DeliveryFailure::Indefinite("503".into()),
                            now,
                        ),
                        3 => {
                            self.out.push((e.event_id, e.sequence));
                            true
                        }
                        _ => svc.delivery_failed(
                            e.event_id,
                            e.sequence,
                            DeliveryFailure::UnknownEvent,
                            now,
                        ),
                    };
                    out(&r);
                } else if let Some((id, seq)) = self.out.pop() {
                    // A late answer (perhaps after its time-out): ignored or taken, the same.
                    out(&svc.delivered(id, seq, now));
                }
            }
            Op::Probe { answer, reply } => {
                let p = svc.poll_transmit(now);
                out(&p);
                if let (Some(p), true) = (p, reply) {
                    let result = match answer {
                        Some((g, bits)) => Ok(UnicastResponse {
                            registrar: RegistrarId(g),
                            groups: group_set(bits),
                        }),
                        None => Err(LeaseError::Indefinite("refused".into())),
                    };
                    out(&svc.handle_unicast(p.id, result, now));
                }
            }
            Op::Unreachable { registrar } => {
                out(&svc.registrar_unreachable(RegistrarId(registrar), now))
            }
            Op::Discard { reg, registrar } => {
                if let Some(r) = self.reg(reg) {
                    out(&svc.discard(r.id, RegistrarId(registrar), now));
                }
            }
            Op::SetGroups { reg, groups } => {
                if let Some(r) = self.reg(reg) {
                    out(&svc.set_groups(r.id, groups_of(groups), now));
                }
            }
            Op::AddGroups { reg, groups } => {
                if let Some(r) = self.reg(reg) {
                    out(&svc.add_groups(r.id, group_set(groups), now));
                }
            }
            Op::SetLocators { reg, locators: l } => {
                if let Some(r) = self.reg(reg) {
                    out(&svc.set_locators(r.id, locators(l), now));
                }
            }
            Op::RemoveLocators { reg, locators: l } => {
                if let Some(r) = self.reg(reg) {
                    out(&svc.remove_locators(r.id, locators(l), now));
                }
            }
            Op::Renew { reg, duration } => {
                if let Some(r) = self.reg(reg) {
                    let body = RequestBody::Renew { cookie: r.lease.cookie(), duration };
                    out(&svc.handle_request(&Request { id: 1, body }, now));
                }
            }
            Op::Cancel { reg } => {
                if let Some(r) = self.reg(reg) {
                    let body = RequestBody::Cancel { cookie: r.lease.cookie() };
                    out(&svc.handle_request(&Request { id: 2, body }, now));
                }
            }
            Op::Reconfigure { max } => {
                let mut c = config();
                c.lease_policy = PolicySpec::Bounded { max, default: max / 2 };
                out(&svc.reconfigure(c));
            }
            Op::Rebuild { .. } => {}
        }
        out(&svc.poll_timeout());
        out(&svc.now());
        log
    }
}

/// The durable twin's disk: a binary snapshot and the log written since.
struct Disk {
    snapshot: Vec<u8>,
    log: Vec<u8>,
}

impl Disk {
    fn new(svc: &mut DiscoveryService) -> Disk {
        let mut snapshot = Vec::new();
        svc.snapshot_bytes(&mut snapshot);
        Disk { snapshot, log: Vec::new() }
    }
    fn sync(&mut self, svc: &mut DiscoveryService) {
        svc.take_journal(&mut self.log);
    }
}

fn twins(ops: &[Op]) {
    let mut a = DiscoveryService::new(config()).unwrap();
    let mut c = DiscoveryService::new(config()).unwrap();
    c.enable_journal();
    let mut disk = Disk::new(&mut c);
    let (mut da, mut dc) = (Driver::new(), Driver::new());
    let mut now: Millis = 1_000;
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Step { ms } => {
                now += ms;
                continue;
            }
            Op::Rebuild { compact } => {
                disk.sync(&mut c);
                if *compact {
                    disk = Disk::new(&mut c);
                }
                let mut r = DiscoveryService::from_snapshot_bytes(&disk.snapshot).unwrap();
                let rec = r.replay_segments(&[&disk.log]).unwrap();
                assert_eq!(rec.torn, None);
                assert_eq!(rec.last_seq, c.journal_seq());
                // Not resumed: the twin carries on at the same host times, from the time of
                // its last record, which must be the original's own time.
                assert_eq!(r.now(), a.now(), "step {i}: time ran ahead of the journal");
                assert_eq!(r.snapshot(), c.snapshot(), "step {i}: rebuilt state differs");
                c = r;
                continue;
            }
            _ => {}
        }
        let sa = da.step(&mut a, op, now);
        let sc = dc.step(&mut c, op, now);
        disk.sync(&mut c);
        assert_eq!(sa, sc, "step {i} ({op:?}): the journaled twin differs");
        assert_eq!(a.snapshot(), c.snapshot(), "step {i} ({op:?}): state differs");
    }
    // Finally, one more rebuild from the disk alone gives the same state.
    disk.sync(&mut c);
    let mut r = DiscoveryService::from_snapshot_bytes(&disk.snapshot).unwrap();
    r.replay_segments(&[&disk.log]).unwrap();
    assert_eq!(r.snapshot(), a.snapshot());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
    #[test]
    fn a_twin_rebuilt_from_snapshot_and_journal_is_the_same(ops in prop::collection::vec(op(), 1..160)) {
        twins(&ops);
    }
}

#[test]
fn a_long_twin_run() {
    // A fixed long stream (deterministic): many rebuilds, compactions and steps back.
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = prop::collection::vec(op(), 1500);
    for _ in 0..4 {
        let ops = strategy.new_tree(&mut runner).unwrap().current();
        twins(&ops);
    }
}

// ---- crashes through the store ----

fn open(dir: &MemDir) -> leasehold::Result<Opened<DiscoveryService>> {
    let sc = StoreConfig { segment_bytes: 2048, min_compact_bytes: 4096 };
    Store::open(sc, &dir.files(), None, |snapshot| match snapshot {
        Some(bytes) => DiscoveryService::from_snapshot_bytes(bytes),
        None => {
            let mut svc = DiscoveryService::new(config())?;
            svc.enable_journal();
            Ok(svc)
        }
    })
}

fn crash_run(ops: &[Op], seed: u64) {
    let mut dir = MemDir::new();
    let Opened { state, mut store, ops: init, .. } = open(&dir).unwrap();
    dir.apply_all(&init);
    let mut svc = state;
    let mut driver = Driver::new();
    // The state as of each committed sequence number.
    let mut at_seq: BTreeMap<u64, String> = BTreeMap::new();
    at_seq.insert(svc.journal_seq(), svc.snapshot().to_json());
    let mut synced = svc.journal_seq();
    let mut now: Millis = 5_000;
    let mut rng = seed;
    let mut next = || {
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        rng >> 33
    };
    for op in ops {
        match op {
            Op::Step { ms } => now += ms.abs(),
            Op::Rebuild { compact } => {
                // A crash. Half the time a commit was under way: appended, not synced.
                let mut unsynced = None;
                if let Some(c) = store.commit(&mut svc) {
                    if next() % 2 == 0 {
                        dir.apply(&c.ops[0]);
                        unsynced = Some(c.durable);
                    }
                    at_seq.insert(c.durable, svc.snapshot().to_json());
                }
                let tear = next() as usize;
                dir.crash(|_, n| if n == 0 { 0 } else { tear % (n + 1) });
                let Opened { state, store: s, ops: tidy, recovered, .. } = open(&dir).unwrap();
                dir.apply_all(&tidy);
                let got = state.journal_seq();
                assert!(
                    got == synced || Some(got) == unsynced,
                    "recovered to record {got}; synced {synced}, unsynced {unsynced:?}"
                );
                assert_eq!(
                    state.snapshot().to_json(),
                    at_seq[&got],
                    "recovered state differs from the state at record {got} ({recovered:?})"
                );
                svc = state;
                store = s;
                synced = got;
                if *compact {
                    let ops = store.compact(&mut svc);
                    dir.apply_all(&ops);
                }
                // The host clock after a restart may be anywhere: time spent down does not count.
                svc.resume(now + 123_456);
                now += 123_456;
            }
            _ => {
                driver.step(&mut svc, op, now);
                if next() % 3 == 0 {
                    if let Some(c) = store.commit(&mut svc) {
                        dir.apply_all(&c.ops);
                        synced = c.durable;
                        at_seq.insert(c.durable, svc.snapshot().to_json());
                        if store.wants_compaction() {
                            let ops = store.compact(&mut svc);
                            dir.apply_all(&ops);
                        }
                    }
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn crashes_with_torn_tails_lose_nothing_committed(
        ops in prop::collection::vec(op(), 1..200),
        seed in any::<u64>(),
    ) {
        crash_run(&ops, seed);
    }
}

// ---- a restart, step by step ----

fn announcement(id: u128, groups: &[&str], host: &str, sequence: u64) -> Announcement {
    common::discovery::announcement(id, groups, host, sequence, 30 * SEC)
}

#[test]
fn a_registration_its_events_and_listener_survive_a_restart() {
    let mut dir = MemDir::new();
    let Opened { state: mut svc, mut store, ops, created, .. } = open(&dir).unwrap();
    assert!(created);
    dir.apply_all(&ops);
    let t0 = 1_000_000;
    let reg = svc
        .register(Groups::of(["a"]), [locators(1)[0].clone()], b"hb".to_vec(), 2 * MIN, t0)
        .unwrap();
    svc.set_listener(reg.id, b"http://127.0.0.1:9/events".to_vec(), t0).unwrap();
    svc.handle_announcement(&announcement(1, &["a"], "h2:1", 1), t0).unwrap();
    let e1 = svc.poll_event(t0).unwrap();
    assert!(svc.delivered(e1.event_id, e1.sequence, t0));
    svc.handle_announcement(&announcement(2, &["a"], "h3:1", 1), t0 + SEC).unwrap();
    // Handed out, never answered: after the restart it must come out again, the same.
    let e2 = svc.poll_event(t0 + SEC).unwrap();
    assert_eq!(e2.sequence, e1.sequence + 1);
    let left = svc.lease(reg.id, t0 + 2 * SEC).unwrap().expiration() - (t0 + 2 * SEC);
    let c = store.commit(&mut svc).unwrap();
    dir.apply_all(&c.ops);
    assert_eq!(c.durable, svc.journal_seq());
    // What was not committed is lost in the crash: this registration never happened.
    let lost = svc.register(Groups::all(), [], vec![], MIN, t0 + 2 * SEC).unwrap();
    drop(svc);
    dir.crash(|_, _| 0);

    let Opened { state: mut back, created, recovered, .. } = open(&dir).unwrap();
    assert!(!created);
    assert!(recovered.replayed > 0);
    assert_eq!(back.journal_seq(), c.durable);
    // Another host, whose clock reads something else entirely; ten minutes were spent down.
    let t1 = 42;
    back.resume(t1);
    assert_eq!(back.now(), t1);
    assert_eq!(back.registrations(), [reg.id]);
    assert_eq!(back.registration_of(lost.lease.cookie(), t1), None);
    assert_eq!(back.registration_of(reg.lease.cookie(), t1), Some(reg.id));
    assert_eq!(back.listener(reg.id), Some(&b"http://127.0.0.1:9/events"[..]));
    // Time spent down did not count: the lease has the time it had left.
    let lease = back.lease(reg.id, t1).unwrap();
    assert_eq!(lease.expiration() - t1, left);
    assert_eq!(lease.cookie(), reg.lease.cookie());
    let er = back.event_registration(reg.id, t1).unwrap();
    assert_eq!((er.event_id, er.sequence), (reg.event.event_id, e2.sequence));
    // The probe of h1:1, due since before the crash, is still due (its time is past).
    assert!(back.poll_timeout().unwrap() <= t1);
    assert_eq!(back.poll_transmit(t1).unwrap().locator, locators(1)[0]);
    // The event in flight at the crash (handed out 1 s before the last record) counts as
    // failed at its time-out, 3 s on, and is sent again 1 s later: the very same event.
    assert_eq!(back.poll_event(t1), None);
    back.handle_timeout(t1 + 3 * SEC - 1);
    assert_eq!(back.poll_event(t1 + 3 * SEC - 1), None);
    back.handle_timeout(t1 + 3 * SEC);
    assert_eq!(back.poll_timeout(), Some(t1 + 4 * SEC));
    let again = back.poll_event(t1 + 5 * SEC).unwrap();
    assert_eq!(again, e2);
    assert!(back.delivered(again.event_id, again.sequence, t1 + 5 * SEC));
    // Numbering carries on without a jump: the journal is exact.
    back.handle_announcement(&announcement(3, &["a"], "h4:1", 1), t1 + 6 * SEC).unwrap();
    let e3 = back.poll_event(t1 + 6 * SEC).unwrap();
    assert_eq!((e3.sequence, &e3.handback[..]), (e2.sequence + 1, &b"hb"[..]));
    // Registrar 1 falls silent 30 s after its announcement, on the service's time: 28 s after
    // the resume (it was heard 2 s before the last record).
    back.delivered(e3.event_id, e3.sequence, t1 + 6 * SEC);
    back.handle_timeout(t1 + 28 * SEC - 1);
    assert_eq!(back.registrars(reg.id, t1 + 28 * SEC - 1).unwrap().len(), 3);
    back.handle_timeout(t1 + 28 * SEC);
    let gone = back.poll_event(t1 + 28 * SEC).unwrap();
    assert!(gone.is_discarded());
    assert_eq!(gone.registrars().iter().map(|r| r.id.0).collect::<Vec<_>>(), [1]);
}

#[test]
fn recovery_keeps_granted_durations_when_the_policy_changed() {
    let mut c = config();
    c.lease_policy = PolicySpec::Fixed { duration: 90 * SEC };
    let mut svc = DiscoveryService::new(c).unwrap();
    svc.enable_journal();
    let mut snap = Vec::new();
    svc.snapshot_bytes(&mut snap);
    let reg = svc.register(Groups::all(), [], vec![], ANY, 0).unwrap();
    assert_eq!(reg.lease.expiration(), 90 * SEC);
    let mut log = Vec::new();
    svc.take_journal(&mut log);
    // The snapshot carries its configuration; the journal carries the durations granted.
    let (mut back, _) = DiscoveryService::recover(&snap, &[&log], 0).unwrap();
    assert_eq!(back.lease(reg.id, 0).unwrap().expiration(), 90 * SEC);
    // A new policy applies from now on, and is itself journaled.
    let mut d = config();
    d.lease_policy = PolicySpec::Fixed { duration: 10 * SEC };
    let before = back.journal_seq();
    back.reconfigure(d.clone()).unwrap();
    assert_eq!(back.journal_seq(), before + 1);
    back.reconfigure(d).unwrap();
    assert_eq!(back.journal_seq(), before + 1, "the same configuration again: no record");
    let r2 = back.register(Groups::all(), [], vec![], ANY, 0).unwrap();
    assert_eq!(r2.lease.expiration(), 10 * SEC);
    back.take_journal(&mut log);
    let (again, _) = DiscoveryService::recover(&snap, &[&log], 0).unwrap();
    assert_eq!(again.snapshot(), back.snapshot());
    let mut other = config();
    other.landlord.id = LandlordId(1);
    let e = back.reconfigure(other).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
}

#[test]
fn foreign_or_damaged_snapshots_and_journals_are_refused() {
    let mut svc = DiscoveryService::new(config()).unwrap();
    svc.enable_journal();
    let mut snap = Vec::new();
    svc.snapshot_bytes(&mut snap);
    assert_eq!(u16::from_le_bytes([snap[4], snap[5]]), KIND_DISCOVERY);
    assert_eq!(<DiscoveryService as Journaled>::KIND, KIND_DISCOVERY);
    let reg = svc.register(Groups::of(["a"]), [], vec![1], MIN, 0).unwrap();
    svc.handle_announcement(&announcement(1, &["a"], "h1:1", 1), 10).unwrap();
    let mut log = Vec::new();
    svc.take_journal(&mut log);

    // Every flipped bit of the snapshot is refused, never a panic.
    for at in 0..snap.len() {
        let mut bad = snap.clone();
        bad[at] ^= 0x10;
        let e = DiscoveryService::from_snapshot_bytes(&bad).err().expect("accepted");
        assert_eq!(e.code(), ErrorCode::Decode, "flip at {at}: {e}");
    }
    // A landlord's snapshot is not a discovery service's.
    let mut ll: leasehold::Landlord<Vec<u8>> = leasehold::Landlord::new(
        leasehold::LandlordConfig::new(ID, [8; 32]),
        leasehold::policy::Fixed::new(1).unwrap(),
    );
    ll.enable_journal();
    let mut other = Vec::new();
    ll.snapshot_bytes(&mut other);
    let e = DiscoveryService::from_snapshot_bytes(&other).err().expect("accepted");
    assert!(e.to_string().contains("kind"), "{e}");

    // The journal of another service (another cookie seed) does not fit this snapshot.
    let mut c2 = config();
    c2.landlord.seed = [9; 32];
    let mut svc2 = DiscoveryService::new(c2).unwrap();
    svc2.enable_journal();
    svc2.register(Groups::of(["a"]), [], vec![1], MIN, 0).unwrap();
    let mut log2 = Vec::new();
    svc2.take_journal(&mut log2);
    let e = DiscoveryService::recover(&snap, &[&log2], 0).err().expect("accepted");
    assert_eq!(e.code(), ErrorCode::Decode);
    assert!(e.to_string().contains("cookie"), "{e}");

    // A flipped byte in the middle of the log is damage; at its end, a torn tail.
    let mut twice = log.clone();
    svc.handle_timeout(20);
    svc.take_journal(&mut twice);
    for at in 0..log.len() {
        let mut bad = twice.clone();
        bad[at] ^= 0x01;
        let e = DiscoveryService::recover(&snap, &[&bad], 0).err().expect("accepted");
        assert_eq!(e.code(), ErrorCode::Decode, "flip at {at}");
    }
    let (back, rec) = DiscoveryService::recover(&snap, &[&twice[..twice.len() - 1]], 0).unwrap();
    assert!(rec.torn.is_some());
    assert_eq!(back.journal_seq(), svc.journal_seq() - 1);
    assert_eq!(back.registrations(), [reg.id]);
}
