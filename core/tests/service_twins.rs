//! Exactness of the renewal service: twins fed the same calls over long random runs.
//!
//! - `a` is never restored;
//! - `b` is snapshotted as JSON and restored (at its own time, restore jump 0) at random moments;
//! - `c` is durable: it keeps a journal, and at random moments is rebuilt from its binary
//!   snapshot and the log written since (half the time compacted into a new snapshot first);
//! - `d` is fed the host clock made monotonic, while the others get the raw clock (which, in
//!   the second property, also steps back).
//!
//! Every reply, request, event and time-out must be the same, byte for byte.

use std::collections::BTreeMap;

use leasehold::holder::{RenewalManagerConfig, Transmit};
use leasehold::policy::Bounded;
use leasehold::service::{RenewalService, RenewalServiceConfig, ServiceSnapshot, SetId};
use leasehold::wire::{Request, RequestBody};
use leasehold::{
    Cookie, Duration, Encoding, Landlord, LandlordConfig, LandlordId, Lease, LeaseError, Millis,
    PolicySpec, Reply, SerialFormat, ANY, FOREVER,
};
use proptest::prelude::*;

const SERVICE: LandlordId = LandlordId(0x5e);

#[derive(Debug, Clone)]
enum Op {
    CreateSet(Duration),
    /// A client lease of landlord `l` (3 never answers) for `d`.
    Grant(u8, Duration),
    Add {
        set: usize,
        lease: usize,
        membership: Duration,
        renew: Duration,
    },
    Remove(usize, usize),
    Warning(usize, Duration, u8),
    Failure(usize, u8),
    ClearWarning(usize),
    ClearFailure(usize),
    UnknownEvent(u64),
    /// A request about set leases, by its kind, the sets it names and a duration.
    SetRequest(u8, Vec<usize>, Duration),
    Garbage,
    /// A client landlord cancels one of its leases behind the service's back.
    Revoke(usize),
    Step(i64),
    Timeout,
    Transmit,
    Deliver(usize),
    /// Every request sent so far reaches its landlord, and the replies come back.
    DeliverAll,
    /// The host's loop for `dt` ms: time-outs when the service asks, requests delivered at once.
    Run(i64),
    /// (Internal) the rest of a `Run`, up to this time, and how many rounds are left.
    RunTo(Millis, u8),
    Lose(usize, bool),
    Events,
    Rebuild(bool),
    /// Every twin continues after a (pretend) restart at the host's `now`: set leases do not
    /// count the time since the service's own time.
    Resume,
}

fn set_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        2 => 500i64..10_000,
        4 => 10_000i64..200_000,
        1 => Just(FOREVER),
        1 => Just(ANY),
        1 => Just(0i64)
    ]
}

fn op(back: bool) -> impl Strategy<Value = Op> {
    let step = if back { -1_500i64..2_000 } else { 0i64..2_000 };
    prop_oneof![
        2 => set_duration().prop_map(Op::CreateSet),
        3 => (0u8..4, 5_000i64..60_000).prop_map(|(l, d)| Op::Grant(l, d)),
        6 => (0usize..8, 0usize..32, prop_oneof![4 => 5_000i64..120_000, 1 => Just(FOREVER), 1 => -5i64..5],
              prop_oneof![4 => 1_000i64..20_000, 1 => Just(FOREVER), 1 => Just(ANY), 1 => Just(-3i64)])
            .prop_map(|(set, lease, membership, renew)| Op::Add { set, lease, membership, renew }),
        1 => (0usize..8, 0usize..32).prop_map(|(s, l)| Op::Remove(s, l)),
        1 => (0usize..8, prop_oneof![0i64..20_000, Just(-1i64)], any::<u8>())
            .prop_map(|(s, w, h)| Op::Warning(s, w, h)),
        1 => (0usize..8, any::<u8>()).prop_map(|(s, h)| Op::Failure(s, h)),
        1 => (0usize..8).prop_map(Op::ClearWarning),
        1 => (0usize..8).prop_map(Op::ClearFailure),
        1 => (0u64..8).prop_map(Op::UnknownEvent),
        3 => (prop_oneof![3 => Just(0u8), 2 => Just(1u8), 1 => Just(2u8), 2 => Just(3u8), 1 => Just(4u8), 1 => Just(5u8)],
              prop::collection::vec(0usize..8, 1..4), set_duration())
            .prop_map(|(k, s, d)| Op::SetRequest(k, s, d)),
        1 => Just(Op::Garbage),
        1 => (0usize..32).prop_map(Op::Revoke),
        8 => step.prop_map(Op::Step),
        6 => Just(Op::Timeout),
        2 => Just(Op::Transmit),
        6 => (0usize..8).prop_map(Op::Deliver),
        1 => Just(Op::DeliverAll),
        4 => (1i64..60_000).prop_map(Op::Run),
        1 => (0usize..8, any::<bool>()).prop_map(|(i, r)| Op::Lose(i, r)),
        3 => Just(Op::Events),
        2 => any::<bool>().prop_map(Op::Rebuild),
        1 => Just(Op::Resume),
    ]
}

fn config() -> impl Strategy<Value = RenewalServiceConfig> {
    (
        prop_oneof![
            Just(PolicySpec::Bounded { max: 300_000, default: 100_000 }),
            Just(PolicySpec::Fixed { duration: 120_000 }),
            Just(PolicySpec::Capacity {
                max_leases: 4,
                inner: Box::new(PolicySpec::Bounded { max: FOREVER, default: 200_000 })
            }),
        ],
        prop_oneof![Just(0i64), 0i64..2_000],
        prop_oneof![Just(1usize), Just(10_000usize)],
        1usize..4,
        any::<bool>(),
    )
        .prop_map(|(policy, grace, budget, max_batch, report)| {
            let mut c = RenewalServiceConfig::new(SERVICE, [9; 32]);
            c.set_policy = policy;
            c.landlord = c.landlord.with_grace(grace).with_expiry_budget(budget);
            // No clock records: a journaled twin would ask for time-outs the others do not.
            c.landlord.journal_clock_interval = 0;
            c.manager = RenewalManagerConfig {
                max_batch: if max_batch == 3 { 10_000 } else { max_batch },
                report_renewals: report,
                min_rto: 20,
                initial_rtt: 200,
                max_retry_interval: 3_000,
                ..Default::default()
            };
            c.restore_jump = 0;
            c
        })
}

#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Result(String),
    Bytes(Vec<u8>),
    Sent(LandlordId, Vec<u8>),
    Event(String),
    State { timeout: Option<Millis>, sets: Vec<SetId>, now: Millis, stats: String },
}

struct World {
    landlords: BTreeMap<LandlordId, Landlord>,
    queue: Vec<Transmit>,
    leases: Vec<Lease>,
    sets: Vec<(SetId, Cookie)>,
    /// The sets alive (in the first twin) before the step.
    live: Vec<SetId>,
}

/// The durable twin's disk: a binary snapshot and the log written since.
struct Disk {
    snapshot: Vec<u8>,
    log: Vec<u8>,
}

impl Disk {
    fn new(svc: &mut RenewalService) -> Disk {
        let mut snapshot = Vec::new();
        svc.snapshot_bytes(&mut snapshot);
        Disk { snapshot, log: Vec::new() }
    }
    fn sync(&mut self, svc: &mut RenewalService) {
        svc.take_journal(&mut self.log);
    }
    fn rebuild(&mut self, svc: &mut RenewalService, compact: bool, via_recover: bool) {
        self.sync(svc);
        if compact {
            *self = Disk::new(svc);
        }
        let seq = svc.journal_seq();
        let t = svc.now();
        let (r, rec) = if via_recover {
            // Resumed at its own time: nothing is lost or gained, and the events handed out
            // and not delivered are handed out again.
            RenewalService::recover(&self.snapshot, &[&self.log], t).unwrap()
        } else {
            let mut r = RenewalService::from_snapshot_bytes(&self.snapshot).unwrap();
            let rec = r.replay_segments(&[&self.log]).unwrap();
            if t != Millis::MIN {
                r.resume(t);
            }
            (r, rec)
        };
        assert_eq!(rec.torn, None);
        assert_eq!(rec.last_seq, seq);
        if t != Millis::MIN {
            // The service before the crash, had it resumed (its record is not kept).
            svc.resume(t);
        }
        assert_eq!(r.snapshot(t), svc.snapshot(t), "rebuilt from the journal");
        *svc = r;
        self.sync(svc);
    }
}

fn pick<T: Copy>(v: &[T], i: usize) -> Option<T> {
    (!v.is_empty()).then(|| v[i % v.len()])
}

fn set_request(w: &World, kind: u8, sets: &[usize], d: Duration, id: u64) -> Request {
    // Mostly sets alive, sometimes any set ever made.
    let cookie = |i: usize| {
        let set = if i % 4 == 3 { pick(&w.sets, i).map(|s| s.0) } else { pick(&w.live, i) };
        set.and_then(|s| w.sets.iter().find(|x| x.0 == s)).map_or(Cookie(i as u128), |s| s.1)
    };
    let body = match kind {
        0 | 1 => RequestBody::Renew { cookie: cookie(sets[0]), duration: d },
        2 => RequestBody::Cancel { cookie: cookie(sets[0]) },
        3 => RequestBody::RenewAll { items: sets.iter().map(|&s| (cookie(s), d)).collect() },
        4 => RequestBody::CancelAll { cookies: sets.iter().map(|&s| cookie(s)).collect() },
        _ => RequestBody::Grant { resource: vec![1], duration: d },
    };
    Request { id, body }
}

/// One call on one twin at host time `t`, and what it handed out.
/// One call on one twin at host time `t` (`shift` past the world's host time: the own-clock
/// twin's clock), and what it handed out.
fn step(
    svc: &mut RenewalService,
    op: &Op,
    w: &World,
    i: usize,
    (t, shift): (Millis, i64),
    out: &mut Vec<Seen>,
) {
    let set = |k: usize| pick(&w.live, k).unwrap_or(SetId(k as u64));
    let lease = |k: usize| pick(&w.leases, k);
    let res = |out: &mut Vec<Seen>, s: String| out.push(Seen::Result(s));
    match op {
        Op::CreateSet(d) => res(out, format!("{:?}", svc.create_set(*d, t))),
        Op::Add { set: s, lease: l, membership, renew } => {
            if let Some(mut l) = lease(*l) {
                l.set_expiration(l.expiration().saturating_add(shift));
                res(out, format!("{:?}", svc.add(set(*s), l, *membership, *renew, t)));
            }
        }
        Op::Remove(s, l) => {
            if let Some(l) = lease(*l) {
                res(out, format!("{:?}", svc.remove(set(*s), &l, t)));
                res(out, format!("{:?}", svc.leases(set(*s), t)));
            }
        }
        Op::Warning(s, m, h) => res(
            out,
            format!("{:?}", svc.set_expiration_warning_listener(set(*s), *m, vec![*h; 2], t)),
        ),
        Op::Failure(s, h) => {
            res(out, format!("{:?}", svc.set(set(*s)).set_renewal_failure_listener(vec![*h], t)))
        }
        Op::ClearWarning(s) => {
            res(out, format!("{:?}", svc.clear_expiration_warning_listener(set(*s), t)))
        }
        Op::ClearFailure(s) => {
            res(out, format!("{:?}", svc.clear_renewal_failure_listener(set(*s), t)))
        }
        Op::UnknownEvent(id) => res(out, format!("{:?}", svc.unknown_event(*id))),
        Op::SetRequest(kind, sets, d) => {
            let enc = if i % 2 == 0 { Encoding::Binary } else { Encoding::Json };
            let req = set_request(w, *kind, sets, *d, i as u64);
            out.push(Seen::Bytes(svc.handle_bytes(&req.encode(enc), enc, t)));
            if *kind == 1 {
                res(out, format!("{:?}", svc.registrations(set(sets[0]), t)));
            }
        }
        Op::Garbage => out.push(Seen::Bytes(svc.handle_bytes(b"\x01garbage", Encoding::Binary, t))),
        Op::Resume => svc.resume(t),
        Op::Timeout => {
            // As hosts do: the time-out, then whatever it made ready to send.
            svc.handle_timeout(t);
            while let Some(tx) = svc.poll_transmit(t) {
                out.push(Seen::Sent(tx.landlord, tx.request.encode(Encoding::Binary)));
            }
        }
        Op::Transmit => {
            while let Some(tx) = svc.poll_transmit(t) {
                out.push(Seen::Sent(tx.landlord, tx.request.encode(Encoding::Binary)));
            }
        }
        Op::Events => {
            while let Some(e) = svc.poll_event() {
                out.push(Seen::Event(format!("{e:?}")));
                // The host reports most deliveries; the rest stay in the outbox and are handed
                // out again after the next restart (`Rebuild`, `Resume`).
                if e.sequence % 3 != 0 {
                    res(out, format!("{:?}", svc.delivered(e.event_id, e.sequence, t)));
                }
            }
            // A report of an event not handed out (or delivered already) changes nothing.
            res(out, format!("{:?}", svc.delivered(i as u64 % 5, i as u64 % 7, t)));
        }
        _ => {}
    }
}

/// What went over the wire (requests sent, replies to set requests): no absolute times in it.
fn wire(seen: &[Seen]) -> Vec<&Seen> {
    seen.iter().filter(|s| matches!(s, Seen::Sent(..) | Seen::Bytes(..))).collect()
}

/// The snapshot with the clock offset left out: two services whose own clocks agree, whatever
/// their host clocks read, hold the same state.
fn on_own_clock(svc: &RenewalService) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_str(&svc.snapshot(svc.now()).to_json()).unwrap();
    v["manager"]["offset"] = 0.into();
    v
}

fn state(svc: &RenewalService) -> Seen {
    Seen::State {
        timeout: svc.poll_timeout(),
        sets: svc.sets(),
        now: svc.now(),
        stats: format!("{:?}", svc.manager().stats()),
    }
}

fn run(cfg: RenewalServiceConfig, ops: Vec<Op>) {
    let mut a = RenewalService::new(cfg.clone()).unwrap();
    let mut b = RenewalService::new(cfg.clone()).unwrap();
    let mut c = RenewalService::new(cfg.clone()).unwrap();
    let mut d = RenewalService::new(cfg.clone()).unwrap();
    c.enable_journal();
    let mut disk = Disk::new(&mut c);
    let mut w = World {
        landlords: BTreeMap::new(),
        queue: Vec::new(),
        leases: Vec::new(),
        sets: Vec::new(),
        live: Vec::new(),
    };
    for id in 0..3u64 {
        w.landlords.insert(
            LandlordId(id),
            Landlord::new(
                LandlordConfig::new(LandlordId(id), [id as u8 + 1; 32]),
                Bounded::new(60_000, 10_000).unwrap(),
            ),
        );
    }
    let mut now: Millis = 1_000;
    let mut queue: std::collections::VecDeque<Op> = ops.into_iter().collect();
    let mut i = 0;
    while let Some(op) = queue.pop_front() {
        i += 1;
        let op = &op;
        match op {
            Op::Run(dt) => {
                queue.push_front(Op::RunTo(now + dt, 40));
                continue;
            }
            Op::RunTo(target, rounds) => {
                match a.poll_timeout() {
                    Some(t) if t <= *target && *rounds > 0 => {
                        now = now.max(t);
                        queue.push_front(Op::RunTo(*target, rounds - 1));
                        queue.push_front(Op::Events);
                        queue.push_front(Op::DeliverAll);
                        queue.push_front(Op::Timeout);
                    }
                    _ => now = now.max(*target),
                }
                continue;
            }
            Op::Step(s) => {
                now += s;
                continue;
            }
            Op::Rebuild(flag) => {
                // A restart hands out again the events handed out and not delivered: the
                // twins not rebuilt resume at their own time, as the rebuilt ones do.
                for svc in [&mut a, &mut d] {
                    let t = svc.now();
                    if t != Millis::MIN {
                        svc.resume(t);
                    }
                }
                let t = b.now();
                if t != Millis::MIN {
                    let json = b.snapshot(t).to_json();
                    let snap = ServiceSnapshot::from_json(&json).unwrap();
                    let r = RenewalService::restore(cfg.clone(), snap, t).unwrap();
                    b.resume(t);
                    assert_eq!(r.snapshot(t), b.snapshot(t), "restored from JSON");
                    b = r;
                }
                disk.rebuild(&mut c, *flag, i % 3 == 0);
                continue;
            }
            Op::Grant(l, dur) => {
                let id = LandlordId(*l as u64);
                let lease = match w.landlords.get_mut(&id) {
                    Some(ll) => {
                        let g = ll.grant(vec![*l], *dur, now).unwrap();
                        Lease::new(id, g.cookie, g.expiration)
                    }
                    None => Lease::new(id, Cookie(i as u128 + 1), now + dur),
                };
                let f = if i % 2 == 0 { SerialFormat::Absolute } else { SerialFormat::Duration };
                w.leases.push(lease.with_serial_format(f));
                continue;
            }
            Op::Revoke(k) => {
                if let Some(l) = pick(&w.leases, *k) {
                    if let Some(ll) = w.landlords.get_mut(&l.landlord()) {
                        let _ = ll.cancel(l.cookie(), now);
                    }
                }
                continue;
            }
            _ => {}
        }
        // Network: what reaches the twins (the same for all).
        let mut replies = Vec::new();
        let mut failures = Vec::new();
        if let Op::DeliverAll = op {
            for t in std::mem::take(&mut w.queue) {
                match w.landlords.get_mut(&t.landlord) {
                    Some(ll) => {
                        ll.handle_timeout(now);
                        replies.push(ll.handle_request(&t.request, now));
                    }
                    None => failures.push(t.request.id),
                }
            }
        }
        let taken = match op {
            Op::Deliver(k) | Op::Lose(k, _) if !w.queue.is_empty() => {
                Some(w.queue.remove(k % w.queue.len()))
            }
            _ => None,
        };
        match (op, taken) {
            (Op::Deliver(_), Some(t)) => match w.landlords.get_mut(&t.landlord) {
                Some(ll) => {
                    ll.handle_timeout(now);
                    replies.push(ll.handle_request(&t.request, now));
                }
                None => failures.push(t.request.id),
            },
            (Op::Lose(_, true), Some(t)) => failures.push(t.request.id),
            _ => {}
        }
        w.live = a.sets();
        let mut seen: [Vec<Seen>; 4] = Default::default();
        let mut a_offset = 0;
        for (k, svc) in [&mut a, &mut b, &mut c, &mut d].into_iter().enumerate() {
            // The last twin is given the first one's own clock (which has taken this `now`).
            let t = if k == 3 { now.saturating_add(a_offset) } else { now };
            let out = &mut seen[k];
            step(svc, op, &w, i, (t, t - now), out);
            for r in &replies {
                svc.handle_reply(r, t);
            }
            for &id in &failures {
                svc.handle_failure(id, LeaseError::Indefinite("lost".into()), t);
            }
            out.push(state(svc));
            if k == 0 {
                a_offset = svc.clock_offset();
            }
        }
        disk.sync(&mut c);
        let [sa, sb, sc, sd] = seen;
        assert_eq!(sa, sb, "JSON-restored twin differs at step {i} ({op:?})");
        assert_eq!(sa, sc, "journal-rebuilt twin differs at step {i} ({op:?})");
        assert_eq!(wire(&sa), wire(&sd), "own-clock twin differs at step {i} ({op:?})");
        if i % 8 == 0 {
            assert_eq!(on_own_clock(&a), on_own_clock(&d), "own-clock twin differs at step {i}");
        }
        for s in &sa {
            match s {
                Seen::Sent(..) => {}
                Seen::Result(r) if r.starts_with("Ok((SetId(") => {
                    // A new set: remember it and its lease's cookie.
                    let set = a.sets().last().copied().unwrap();
                    let l = a.set_lease(set, now.max(a.now())).unwrap();
                    w.sets.push((set, l.cookie()));
                }
                _ => {}
            }
        }
        // The requests sent, from the first twin's bytes (the same for all).
        for s in &sa {
            if let Seen::Sent(l, bytes) = s {
                let request =
                    Request::decode(bytes, Encoding::Binary, &Default::default()).unwrap();
                w.queue.push(Transmit { landlord: *l, request });
            }
        }
    }
    let t = a.now();
    assert_eq!(a.snapshot(t), b.snapshot(t));
    assert_eq!(a.snapshot(t), c.snapshot(t));
    assert_eq!(on_own_clock(&a), on_own_clock(&d));
    assert_eq!(d.clock_offset(), 0);
    let _: Option<Reply> = None;
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    /// A host clock that only moves forward.
    #[test]
    fn restored_and_rebuilt_services_answer_like_the_original(
        cfg in config(),
        ops in prop::collection::vec(op(false), 1..350),
    ) {
        run(cfg, ops);
    }

    /// A host clock that also steps back: the service's time never does.
    #[test]
    fn service_twins_agree_when_the_host_clock_steps_back(
        cfg in config(),
        ops in prop::collection::vec(op(true), 1..350),
    ) {
        run(cfg, ops);
    }
}
