//! Exactness of the renewal manager: twins fed the same calls over long random runs, one never
//! restored, one snapshotted and restored (JSON or binary) at random moments, and one fed a host
//! clock made monotonic by the test (while the others get the raw clock, which also steps back).
//! Every request must be the same byte for byte, every event the same, every time-out the same.

use std::collections::BTreeMap;

use leasehold::holder::{ManagerSnapshot, RenewalManager, RenewalManagerConfig, Transmit};
use leasehold::policy::Bounded;
use leasehold::wire::{Outcome, WireError};
use leasehold::{
    Cookie, Duration, Encoding, Landlord, LandlordConfig, LandlordId, Lease, LeaseError, Millis,
    Reply, ReplyBody, SerialFormat, ANY, FOREVER,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// A lease of landlord `l` (3 never answers) granted for `d`, managed for `m` asking `r`.
    Add {
        l: u8,
        d: Duration,
        m: Duration,
        r: Duration,
        until: bool,
    },
    Remove(usize),
    Cancel(usize),
    SetExpiration(usize, Duration),
    Step(i64),
    Timeout,
    Transmit,
    /// Deliver a queued request to its landlord and the reply back.
    Deliver(usize),
    /// Lose a queued request; with `true` the host reports it.
    Lose(usize, bool),
    /// Deliver the same reply twice.
    Duplicate(usize),
    /// Answer a queued request with something odd.
    Hostile(usize, u8),
    Events,
    Rebuild(bool),
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![4 => 200i64..20_000, 1 => 1i64..200, 1 => Just(FOREVER), 1 => Just(0i64)]
}

fn op(back: bool) -> impl Strategy<Value = Op> {
    let step = if back { -3_000i64..6_000 } else { 0i64..6_000 };
    prop_oneof![
        3 => (0u8..4, duration(), prop_oneof![Just(FOREVER), 0i64..60_000], prop_oneof![
            3 => 100i64..20_000, 1 => Just(FOREVER), 1 => Just(ANY), 1 => Just(-7i64)
        ], any::<bool>())
            .prop_map(|(l, d, m, r, until)| Op::Add { l, d, m, r, until }),
        1 => (0usize..64).prop_map(Op::Remove),
        1 => (0usize..64).prop_map(Op::Cancel),
        1 => (0usize..64, prop_oneof![Just(FOREVER), -1_000i64..60_000])
            .prop_map(|(i, d)| Op::SetExpiration(i, d)),
        8 => step.prop_map(Op::Step),
        6 => Just(Op::Timeout),
        6 => Just(Op::Transmit),
        6 => (0usize..8).prop_map(Op::Deliver),
        1 => (0usize..8, any::<bool>()).prop_map(|(i, r)| Op::Lose(i, r)),
        1 => (0usize..8).prop_map(Op::Duplicate),
        1 => (0usize..8, 0u8..6).prop_map(|(i, k)| Op::Hostile(i, k)),
        3 => Just(Op::Events),
        2 => any::<bool>().prop_map(Op::Rebuild),
    ]
}

fn config() -> impl Strategy<Value = RenewalManagerConfig> {
    (1usize..5, 0u32..200, any::<bool>(), 0.0f64..1.0, 50i64..2_000).prop_map(
        |(max_batch, ppm, report, join, rtt)| RenewalManagerConfig {
            max_batch: if max_batch == 4 { 10_000 } else { max_batch },
            max_clock_drift_ppm: ppm,
            report_renewals: report,
            batch_join_after: join,
            batch_window: 5_000,
            initial_rtt: rtt,
            min_rto: 20,
            max_retry_interval: 4_000,
            ..Default::default()
        },
    )
}

/// What a twin hands out in one step, compared byte for byte.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Sent(LandlordId, Vec<u8>),
    Event(String),
    Result(String),
    State { timeout: Option<Millis>, len: usize, stats: String, now: Millis },
}

struct World {
    landlords: BTreeMap<LandlordId, Landlord>,
    /// Requests sent and not yet answered or lost.
    queue: Vec<Transmit>,
    leases: Vec<Lease>,
}

fn pick<T: Copy>(v: &[T], i: usize) -> Option<T> {
    (!v.is_empty()).then(|| v[i % v.len()])
}

fn rebuild(m: &RenewalManager, binary: bool) -> RenewalManager {
    let snap = m.snapshot();
    let back = if binary {
        ManagerSnapshot::from_bytes(&snap.to_bytes()).unwrap()
    } else {
        ManagerSnapshot::from_json(&snap.to_json()).unwrap()
    };
    assert_eq!(back, snap, "the snapshot survives its own encoding");
    let r = RenewalManager::restore(back).unwrap();
    assert_eq!(r.snapshot(), snap, "restore then snapshot gives the same snapshot");
    r
}

fn state(m: &RenewalManager) -> Seen {
    Seen::State {
        timeout: m.poll_timeout(),
        len: m.len(),
        stats: format!("{:?}", m.stats()),
        now: m.now(),
    }
}

fn hostile(t: &Transmit, kind: u8) -> Reply {
    let body = match kind {
        0 => ReplyBody::Cancelled,
        1 => ReplyBody::Renewed { duration: -5 },
        2 => ReplyBody::RenewedAll { results: vec![Outcome::Ok(10); 7] },
        3 => ReplyBody::Error(WireError::from(&LeaseError::LeaseDenied("no".into()))),
        4 => ReplyBody::Error(WireError { code: 99, message: "?".into() }),
        _ => ReplyBody::Renewed { duration: FOREVER },
    };
    Reply { id: t.request.id, landlord: t.landlord, body }
}

/// The snapshot with the clock offset left out: two managers whose own clocks agree, whatever
/// their host clocks read, hold the same state.
fn on_own_clock(m: &RenewalManager) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(&m.snapshot().to_json()).unwrap();
    v["offset"] = 0.into();
    v
}

/// `d` from `t`, FOREVER staying FOREVER (the host's clock may be negative after steps back).
fn at(t: Millis, d: i64) -> Millis {
    if d == FOREVER {
        FOREVER
    } else {
        // Finite stays finite, as the manager's own clock conversion keeps it.
        t.saturating_add(d).min(FOREVER - 1)
    }
}

fn sent(seen: &[Seen]) -> Vec<&Seen> {
    seen.iter().filter(|s| matches!(s, Seen::Sent(..))).collect()
}

/// Runs the ops on three twins.
fn run(cfg: RenewalManagerConfig, ops: Vec<Op>) {
    let mut a = RenewalManager::new(cfg.clone());
    let mut b = RenewalManager::new(cfg.clone());
    // Fed the first twin's own clock (the host's now plus its offset): it never sees a step back,
    // and must hold the same state and send the same requests as a and b, which get the raw
    // clock.
    let mut c = RenewalManager::new(cfg);
    let mut w = World { landlords: BTreeMap::new(), queue: Vec::new(), leases: Vec::new() };
    for id in 0..3u64 {
        w.landlords.insert(
            LandlordId(id),
            Landlord::new(
                LandlordConfig::new(LandlordId(id), [id as u8; 32]),
                Bounded::new(30_000, 5_000).unwrap(),
            ),
        );
    }
    let mut now: Millis = 10_000;
    for (i, op) in ops.iter().enumerate() {
        if let Op::Step(s) = op {
            now += s;
            continue;
        }
        if let Op::Rebuild(binary) = op {
            b = rebuild(&b, *binary);
            continue;
        }
        let mut seen = [Vec::new(), Vec::new(), Vec::new()];
        // Replies are worked out once (the landlords are shared) and fed to all three.
        let mut replies: Vec<Reply> = Vec::new();
        let mut failure: Option<u64> = None;
        let taken = match op {
            Op::Deliver(k) | Op::Duplicate(k) | Op::Lose(k, _) | Op::Hostile(k, _)
                if !w.queue.is_empty() =>
            {
                Some(w.queue.remove(k % w.queue.len()))
            }
            _ => None,
        };
        match (op, taken) {
            (Op::Deliver(_) | Op::Duplicate(_), Some(t)) => {
                match w.landlords.get_mut(&t.landlord) {
                    Some(ll) => {
                        let r = ll.handle_request(&t.request, now);
                        if let Op::Duplicate(_) = op {
                            replies.push(r.clone());
                        }
                        replies.push(r);
                    }
                    None => failure = Some(t.request.id),
                }
            }
            (Op::Lose(_, true), Some(t)) => failure = Some(t.request.id),
            (Op::Hostile(_, kind), Some(t)) => replies.push(hostile(&t, *kind)),
            (Op::Add { l, d, .. }, _) => {
                let id = LandlordId(*l as u64);
                let lease = match w.landlords.get_mut(&id) {
                    Some(ll) => {
                        let g = ll.grant(vec![*l], *d, now).unwrap();
                        Lease::new(id, g.cookie, g.expiration)
                    }
                    None => Lease::new(id, Cookie(i as u128 + 1), now.saturating_add(*d)),
                };
                let lease = if i % 2 == 0 {
                    lease.with_serial_format(SerialFormat::Absolute)
                } else {
                    lease
                };
                w.leases.push(lease);
            }
            _ => {}
        }
        let mut a_offset = 0;
        for (k, m) in [&mut a, &mut b, &mut c].into_iter().enumerate() {
            // The third twin is given the first one's own clock (the first twin has already
            // taken this step's `now`).
            let t = if k == 2 { now.saturating_add(a_offset) } else { now };
            let out = &mut seen[k];
            match op {
                Op::Add { m: md, r, until, .. } => {
                    // Times the host gives, on the clock this twin is given.
                    let mut lease = *w.leases.last().unwrap();
                    if lease.expiration() != FOREVER {
                        // A finite time stays finite on the shifted clock, as the manager's own
                        // conversion keeps it (a saturating shift would make it FOREVER).
                        let shifted = lease.expiration().saturating_add(t - now).min(FOREVER - 1);
                        lease.set_expiration(shifted);
                    }
                    let res = if *until {
                        m.renew_until(lease, at(t, *md), *r, t)
                    } else {
                        m.renew_for(lease, *md, *r, t)
                    };
                    out.push(Seen::Result(format!("{res:?}")));
                }
                Op::Remove(p) => {
                    if let Some(l) = pick(&w.leases, *p) {
                        out.push(Seen::Result(format!("{:?}", m.remove(&l))));
                    }
                }
                Op::Cancel(p) => {
                    if let Some(l) = pick(&w.leases, *p) {
                        out.push(Seen::Result(format!("{:?}", m.cancel(&l, t))));
                    }
                }
                Op::SetExpiration(p, d) => {
                    if let Some(l) = pick(&w.leases, *p) {
                        let r = m.set_expiration(&l, at(t, *d), t);
                        out.push(Seen::Result(format!("{r:?}")));
                    }
                }
                Op::Timeout => m.handle_timeout(t),
                Op::Transmit => {
                    while let Some(tx) = m.poll_transmit(t) {
                        out.push(Seen::Sent(tx.landlord, tx.request.encode(Encoding::Binary)));
                        if k == 0 {
                            w.queue.push(tx);
                        }
                    }
                }
                Op::Events => {
                    while let Some(e) = m.poll_event() {
                        out.push(Seen::Event(format!("{e:?} {:?}", event_format(&e))));
                    }
                }
                _ => {}
            }
            for r in &replies {
                m.handle_reply(r, t);
            }
            if let Some(id) = failure {
                m.handle_failure(id, LeaseError::Indefinite("lost".into()), t);
            }
            out.push(state(m));
            if k == 0 {
                a_offset = m.clock_offset();
            }
        }
        let [sa, sb, sc] = seen;
        if i % 8 == 0 {
            assert_eq!(on_own_clock(&a), on_own_clock(&c), "own-clock twin differs at step {i}");
        }
        assert_eq!(sa, sb, "restored twin differs at step {i} ({op:?})");
        assert_eq!(sent(&sa), sent(&sc), "own-clock twin sends otherwise at step {i} ({op:?})");
    }
    assert_eq!(a.snapshot(), b.snapshot());
    assert_eq!(on_own_clock(&a), on_own_clock(&c));
    assert_eq!(c.clock_offset(), 0);
}

fn event_format(e: &leasehold::RenewalEvent) -> SerialFormat {
    match e {
        leasehold::RenewalEvent::RenewalFailed { lease, .. }
        | leasehold::RenewalEvent::DesiredExpirationReached { lease, .. }
        | leasehold::RenewalEvent::Renewed { lease } => lease.serial_format(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// A host clock that only moves forward.
    #[test]
    fn restored_manager_twins_send_and_report_like_the_original(
        cfg in config(),
        ops in prop::collection::vec(op(false), 1..400),
    ) {
        run(cfg, ops);
    }

    /// A host clock that also steps back: the manager's time never does, so feeding it the
    /// raw clock or the clock made monotonic gives the same requests, events and time-outs.
    #[test]
    fn manager_twins_agree_when_the_host_clock_steps_back(
        cfg in config(),
        ops in prop::collection::vec(op(true), 1..400),
    ) {
        run(cfg, ops);
    }
}
