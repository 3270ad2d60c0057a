//! Exactness: a landlord restored from a snapshot (JSON), or rebuilt from a binary snapshot and
//! its journal, is the same landlord. Twins are fed the same requests over long random runs; one
//! is never restored, the others are snapshotted and rebuilt at random moments. Every reply must
//! be the same byte for byte, and every expiry the same, in the same order.

use leasehold::holder::grant_request;
use leasehold::journal::Durable;
use leasehold::policy::PolicySpec;
use leasehold::{
    Cookie, Duration, Encoding, Landlord, LandlordConfig, LandlordId, Millis, Request, RequestBody,
    ANY, FOREVER,
};
use proptest::prelude::*;

type LL = Landlord<Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Grant(u8, Duration),
    Renew(usize, Duration),
    Cancel(usize),
    RenewAll(Vec<(usize, Duration)>),
    CancelAll(Vec<usize>),
    /// A cookie that is not one of this landlord's (bits flipped).
    Bogus(usize),
    Step(i64),
    Timeout,
    Poll(u8),
    Rebuild,
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        4 => 0i64..300,
        4 => 0i64..20_000,
        2 => Just(ANY),
        1 => Just(FOREVER),
        1 => Just(0i64),
        1 => -5i64..-2,
    ]
}

fn op(back: bool) -> impl Strategy<Value = Op> {
    let step = if back { -300i64..2_000 } else { 0i64..2_000 };
    prop_oneof![
        6 => (0u8..12, duration()).prop_map(|(r, d)| Op::Grant(r, d)),
        6 => (0usize..500, duration()).prop_map(|(p, d)| Op::Renew(p, d)),
        2 => (0usize..500).prop_map(Op::Cancel),
        1 => prop::collection::vec((0usize..500, duration()), 0..6).prop_map(Op::RenewAll),
        1 => prop::collection::vec(0usize..500, 0..6).prop_map(Op::CancelAll),
        1 => (0usize..500).prop_map(Op::Bogus),
        6 => step.prop_map(Op::Step),
        4 => Just(Op::Timeout),
        2 => (0u8..4).prop_map(Op::Poll),
        1 => Just(Op::Rebuild),
    ]
}

fn policy() -> impl Strategy<Value = PolicySpec> {
    prop_oneof![
        Just(PolicySpec::Bounded { max: 10_000, default: 1_000 }),
        Just(PolicySpec::Fixed { duration: 5_000 }),
        Just(PolicySpec::Capacity {
            max_leases: 12,
            inner: Box::new(PolicySpec::Bounded { max: 50_000, default: 500 })
        }),
    ]
}

fn config(grace: Duration, budget: usize) -> LandlordConfig {
    LandlordConfig::new(LandlordId(77), [9; 32]).with_grace(grace).with_expiry_budget(budget)
}

/// What a twin answers to one step: reply bytes and expiries handed out.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Reply(Vec<u8>),
    Expired(Cookie, Millis, Vec<u8>),
    Len(usize, usize),
}

fn pick(known: &[Cookie], p: usize) -> Cookie {
    if known.is_empty() {
        Cookie(p as u128)
    } else {
        known[p % known.len()]
    }
}

fn request(op: &Op, known: &[Cookie], id: u64) -> Option<Request> {
    let body = match op {
        Op::Grant(r, d) => return Some(grant_request(id, vec![*r; *r as usize], *d)),
        Op::Renew(p, d) => RequestBody::Renew { cookie: pick(known, *p), duration: *d },
        Op::Cancel(p) => RequestBody::Cancel { cookie: pick(known, *p) },
        Op::RenewAll(items) => RequestBody::RenewAll {
            items: items.iter().map(|&(p, d)| (pick(known, p), d)).collect(),
        },
        Op::CancelAll(ps) => {
            RequestBody::CancelAll { cookies: ps.iter().map(|&p| pick(known, p)).collect() }
        }
        Op::Bogus(p) => {
            RequestBody::Renew { cookie: Cookie(pick(known, *p).0 ^ (1 << 77)), duration: 10 }
        }
        _ => return None,
    };
    Some(Request { id, body })
}

/// Runs one step on a twin and reports what it saw.
fn step(ll: &mut LL, op: &Op, known: &[Cookie], id: u64, now: Millis, enc: Encoding) -> Vec<Seen> {
    let mut seen = Vec::new();
    if let Some(req) = request(op, known, id) {
        seen.push(Seen::Reply(ll.handle_bytes(&req.encode(enc), enc, now)));
    }
    match op {
        Op::Timeout => ll.handle_timeout(now),
        Op::Poll(k) => {
            for _ in 0..*k {
                if let Some(e) = ll.poll_expired() {
                    seen.push(Seen::Expired(e.cookie, e.expiration, e.resource));
                }
            }
        }
        _ => {}
    }
    seen.push(Seen::Len(ll.len(), ll.expired_len()));
    seen
}

/// The durable twin's disk: a binary snapshot and the log written since.
struct Disk {
    snapshot: Vec<u8>,
    log: Vec<u8>,
}

impl Disk {
    fn new(ll: &mut LL) -> Disk {
        let mut snapshot = Vec::new();
        ll.snapshot_bytes(&mut snapshot);
        Disk { snapshot, log: Vec::new() }
    }
    fn sync(&mut self, ll: &mut LL) {
        ll.take_journal(&mut self.log);
    }
}

fn run(spec: PolicySpec, grace: Duration, budget: usize, ops: Vec<Op>, back: bool) {
    let build = || spec.build().unwrap();
    let mut a: LL = Landlord::new(config(grace, budget), build());
    let mut b: LL = Landlord::new(config(grace, budget), build());
    let mut c: LL = Landlord::new(config(grace, budget), build());
    c.enable_journal();
    let mut disk = Disk::new(&mut c);
    let mut known = Vec::new();
    let mut now: Millis = 1_000;
    for (i, op) in ops.iter().enumerate() {
        let id = i as u64 + 1;
        if let Op::Step(s) = op {
            now += s;
            continue;
        }
        if let Op::Rebuild = op {
            // JSON twin: restored at its own time, so no time is lost or gained (a landlord
            // that never saw a time has none to keep: it is rebuilt later).
            let t = b.now();
            if t == Millis::MIN {
                continue;
            }
            let json = serde_json::to_string(&b.snapshot(t)).unwrap();
            b = Landlord::restore(serde_json::from_str(&json).unwrap(), build(), t).unwrap();
            // Durable twin: half the time compacted into a new snapshot first.
            disk.sync(&mut c);
            if i % 2 == 0 {
                disk = Disk::new(&mut c);
            }
            let mut r: LL = Landlord::from_snapshot_bytes(&disk.snapshot, build()).unwrap();
            let rec = r.replay_segments(&[&disk.log]).unwrap();
            assert_eq!(rec.torn, None);
            assert_eq!(rec.last_seq, c.journal_seq());
            c = r;
            continue;
        }
        let enc = if i % 3 == 0 { Encoding::Json } else { Encoding::Binary };
        let sa = step(&mut a, op, &known, id, now, enc);
        let sb = step(&mut b, op, &known, id, now, enc);
        let sc = step(&mut c, op, &known, id, now, enc);
        disk.sync(&mut c);
        assert_eq!(sa, sb, "JSON-restored twin differs at step {i} ({op:?})");
        assert_eq!(sa, sc, "journal-rebuilt twin differs at step {i} ({op:?})");
        if let Some(Seen::Reply(bytes)) = sa.first() {
            let reply = leasehold::Reply::decode(bytes, enc, &Default::default()).unwrap();
            if let leasehold::ReplyBody::Granted { cookie, .. } = reply.body {
                known.push(cookie);
            }
        }
    }
    // In the end, the same leases with the same expirations.
    let all = |l: &LL| l.iter().map(|(c, e, r)| (c, e, r.clone())).collect::<Vec<_>>();
    assert_eq!(all(&a), all(&b));
    assert_eq!(all(&a), all(&c));
    let _ = back;
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Host clock only moving forward: all three twins stay identical.
    #[test]
    fn restored_and_rebuilt_twins_answer_like_the_original(
        spec in policy(),
        grace in prop_oneof![Just(0i64), 0i64..500],
        budget in prop_oneof![Just(1usize), 1usize..4, Just(10_000usize)],
        ops in prop::collection::vec(op(false), 1..400),
    ) {
        run(spec, grace, budget, ops, false);
    }

    /// A host clock that also steps back: the landlord's time never does.
    #[test]
    fn twins_agree_when_the_host_clock_steps_back(
        spec in policy(),
        budget in prop_oneof![Just(1usize), Just(10_000usize)],
        ops in prop::collection::vec(op(true), 1..300),
    ) {
        run_back(spec, budget, ops);
    }
}

/// With steps back, only the JSON twin (whose snapshot carries the landlord's time) is compared;
/// a journal rebuilt after a step back resumes from its last recorded time (see `resume`).
fn run_back(spec: PolicySpec, budget: usize, ops: Vec<Op>) {
    let build = || spec.build().unwrap();
    let mut a: LL = Landlord::new(config(0, budget), build());
    let mut b: LL = Landlord::new(config(0, budget), build());
    let mut known = Vec::new();
    let mut now: Millis = 1_000;
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Step(s) => now += s,
            Op::Rebuild if b.now() != Millis::MIN => {
                let t = b.now();
                let snap = b.snapshot(t);
                b = Landlord::restore(snap, build(), t).unwrap();
            }
            Op::Rebuild => {}
            _ => {
                let sa = step(&mut a, op, &known, i as u64 + 1, now, Encoding::Binary);
                let sb = step(&mut b, op, &known, i as u64 + 1, now, Encoding::Binary);
                assert_eq!(sa, sb, "step {i} ({op:?})");
                if let Some(Seen::Reply(bytes)) = sa.first() {
                    let r = leasehold::Reply::decode(bytes, Encoding::Binary, &Default::default())
                        .unwrap();
                    if let leasehold::ReplyBody::Granted { cookie, .. } = r.body {
                        known.push(cookie);
                    }
                }
            }
        }
    }
}

/// Durable resources other than bytes work too.
#[test]
fn durable_resource_types_round_trip() {
    let mut v = Vec::new();
    42u64.encode(&mut v);
    assert_eq!(u64::decode(&v).unwrap(), 42);
    assert!(u64::decode(&v[..3]).is_err());
    assert!(String::decode(&[0xff]).is_err());
    assert!(<()>::decode(b"x").is_err());
}
