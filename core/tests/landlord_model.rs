//! Model-based property test: the timing-wheel landlord against a naive reference model (a
//! hash map, scanned in full at every expiry) over random grant / renew / cancel / batch /
//! expiry / snapshot-restore sequences with random time steps, including huge ones, FOREVER,
//! and a clock that goes backwards.

use std::collections::{BTreeSet, HashMap};

use leasehold::landlord::LandlordSnapshot;
use leasehold::policy::PolicySpec;
use leasehold::time::{self, check_requested};
use leasehold::{
    Cookie, Duration, LandlordConfig, LandlordId, LeaseError, LeasePolicy, Millis, PolicyContext,
    ANY, FOREVER,
};
use proptest::prelude::*;

type Landlord = leasehold::Landlord<u32>;

/// The reference: every rule written the obvious way.
struct Model {
    leases: HashMap<Cookie, (Millis, u32)>,
    grace: Duration,
    policy: Box<dyn LeasePolicy>,
}

fn limit(requested: Duration, offered: Duration) -> Duration {
    (if requested == ANY { offered } else { offered.min(requested) }).max(0)
}

impl Model {
    fn deadline(&self, exp: Millis) -> Millis {
        time::expiration_after(exp, self.grace)
    }
    fn honoured(&self, c: Cookie, now: Millis) -> Option<(Millis, u32)> {
        let &(exp, r) = self.leases.get(&c)?;
        (exp == FOREVER || now <= self.deadline(exp)).then_some((exp, r))
    }
    fn grant_duration(&mut self, req: Duration, now: Millis) -> Result<Duration, LeaseError> {
        check_requested(req)?;
        let ctx = PolicyContext { now, live: self.leases.len() };
        Ok(limit(req, self.policy.grant(req, &ctx)?))
    }
    fn renew(&mut self, c: Cookie, req: Duration, now: Millis) -> Result<Duration, LeaseError> {
        check_requested(req)?;
        let (old, r) = self.honoured(c, now).ok_or(LeaseError::UnknownLease)?;
        let ctx = PolicyContext { now, live: self.leases.len() };
        let d = limit(req, self.policy.renew(req, old, &ctx)?);
        self.leases.insert(c, (time::expiration_after(now, d), r));
        Ok(d)
    }
    fn cancel(&mut self, c: Cookie, now: Millis) -> Result<u32, LeaseError> {
        let (_, r) = self.honoured(c, now).ok_or(LeaseError::UnknownLease)?;
        self.leases.remove(&c);
        Ok(r)
    }
    fn sweep(&mut self, now: Millis) -> BTreeSet<(Cookie, Millis, u32)> {
        let dead: Vec<Cookie> = self
            .leases
            .iter()
            .filter(|(_, &(exp, _))| {
                exp != FOREVER && self.deadline(exp) != FOREVER && self.deadline(exp) < now
            })
            .map(|(c, _)| *c)
            .collect();
        dead.into_iter()
            .map(|c| {
                let (e, r) = self.leases.remove(&c).unwrap();
                (c, e, r)
            })
            .collect()
    }
    /// The first time at which a sweep would find something.
    fn next_due(&self) -> Option<Millis> {
        self.leases
            .values()
            .filter(|(exp, _)| *exp != FOREVER && self.deadline(*exp) != FOREVER)
            .map(|(exp, _)| self.deadline(*exp) + 1)
            .min()
    }
}

/// What a restore at `now` of a snapshot taken at landlord time `clock` makes of an expiration
/// (documented: time left, saturating).
fn restored(clock: Millis, now: Millis, exp: Millis) -> Millis {
    let rem = time::remaining(exp, clock);
    if rem == FOREVER {
        FOREVER
    } else {
        now.saturating_add(rem).min(FOREVER - 1)
    }
}

#[derive(Debug, Clone)]
enum Op {
    Grant(Duration),
    Renew(usize, Duration),
    Cancel(usize),
    RenewAll(Vec<(usize, Duration)>),
    CancelAll(Vec<usize>),
    Get(usize),
    Step(i64),
    Timeout,
    /// One `handle_timeout` call, which a small budget may leave unfinished.
    TimeoutOnce,
    Restore,
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        3 => 0i64..50,
        3 => 0i64..200_000,
        2 => Just(ANY),
        1 => Just(FOREVER),
        1 => Just(0i64),
        1 => Just(FOREVER - 1),
        1 => (1i64 << 40)..(1i64 << 62),
        1 => -1000i64..-2,
    ]
}

fn step() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => 0i64..20,
        3 => 0i64..5_000,
        2 => 0i64..300_000,
        1 => (1i64 << 30)..(1i64 << 50),
        1 => Just(i64::MAX / 3),
        1 => Just(FOREVER),
        1 => -500i64..0,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let pick = 0usize..1000;
    prop_oneof![
        6 => duration().prop_map(Op::Grant),
        4 => (pick.clone(), duration()).prop_map(|(p, d)| Op::Renew(p, d)),
        2 => pick.clone().prop_map(Op::Cancel),
        1 => prop::collection::vec((pick.clone(), duration()), 0..6).prop_map(Op::RenewAll),
        1 => prop::collection::vec(pick.clone(), 0..6).prop_map(Op::CancelAll),
        2 => pick.prop_map(Op::Get),
        5 => step().prop_map(Op::Step),
        4 => Just(Op::Timeout),
        3 => Just(Op::TimeoutOnce),
        1 => Just(Op::Restore),
    ]
}

fn policy() -> impl Strategy<Value = PolicySpec> {
    prop_oneof![
        Just(PolicySpec::Bounded { max: FOREVER, default: 30_000 }),
        Just(PolicySpec::Bounded { max: 100_000, default: 1_000 }),
        Just(PolicySpec::Fixed { duration: 5_000 }),
        Just(PolicySpec::Capacity {
            max_leases: 4,
            inner: Box::new(PolicySpec::Bounded { max: 60_000, default: 10 })
        }),
        Just(PolicySpec::ResourceAware { capacity: 8, max: 80_000, min: 20 }),
    ]
}

fn start() -> impl Strategy<Value = Millis> {
    prop_oneof![
        Just(0i64),
        -(1i64 << 45)..(1i64 << 45),
        Just(i64::MIN + 7),
        Just(1_700_000_000_000)
    ]
}

fn grace() -> impl Strategy<Value = Duration> {
    prop_oneof![Just(0i64), 0i64..2_000, Just(1i64 << 61)]
}

fn budget() -> impl Strategy<Value = usize> {
    prop_oneof![Just(usize::MAX), Just(1usize), 2usize..9, Just(64usize)]
}

/// A cookie to act on: one ever granted, or a forgery (a random one, or a real one with its
/// slot or its random part changed).
fn cookie(known: &[Cookie], p: usize) -> Cookie {
    if known.is_empty() || p % 10 == 9 {
        return Cookie(0x5eed_0000_0000_0000_0000_0000_0000_0000 ^ p as u128);
    }
    let c = known[p % known.len()];
    match p % 13 {
        11 => Cookie(c.0 ^ 1),
        12 => Cookie(c.0 ^ (1 << 100)),
        _ => c,
    }
}

fn check_timeout_contract(ll: &Landlord, model: &Model) {
    // Never later than the next expiry the model knows of.
    if let Some(due) = model.next_due() {
        let p = ll.poll_timeout();
        assert!(matches!(p, Some(p) if p <= due), "poll_timeout {p:?} later than due {due}");
    }
}

/// Runs `handle_timeout(now)` until no work at `now` is left; checks the per-call budget.
fn drain(ll: &mut Landlord, now: Millis, budget: usize) -> BTreeSet<(Cookie, Millis, u32)> {
    let mut out = BTreeSet::new();
    for _ in 0..100_000 {
        ll.handle_timeout(now);
        let mut n = 0;
        while let Some(e) = ll.poll_expired() {
            n += 1;
            assert!(out.insert((e.cookie, e.expiration, e.resource)), "expired twice");
        }
        assert!(n <= budget.max(1), "{n} expiries in one call, budget {budget}");
        match ll.poll_timeout() {
            Some(t) if t <= ll.now().max(now) => continue,
            _ => return out,
        }
    }
    panic!("expiry at one instant never finished");
}

fn config(grace: Duration, budget: usize) -> LandlordConfig {
    let mut c = LandlordConfig::new(LandlordId(9), [3; 32]).with_grace(grace);
    c.expiry_budget = budget;
    c
}

fn run(spec: PolicySpec, grace: Duration, budget: usize, start: Millis, ops: Vec<Op>) {
    // The host's clock, which may step back; the landlord's time is the latest `now` it saw.
    let mut host = start;
    let mut ll = Landlord::new(config(grace, budget), spec.build().unwrap());
    let mut model = Model { leases: HashMap::new(), grace, policy: spec.build().unwrap() };
    let mut known: Vec<Cookie> = Vec::new();
    let mut ever: BTreeSet<Cookie> = BTreeSet::new();
    let mut next_res = 0u32;
    // The landlord's time: the latest `now` it was given (it never runs backwards).
    let mut clock = Millis::MIN;
    for op in ops {
        if !matches!(op, Op::Get(_) | Op::Step(_) | Op::Restore) {
            clock = clock.max(host);
        }
        let now = if matches!(op, Op::Get(_)) { clock.max(host) } else { clock };
        match op {
            Op::Grant(req) => {
                next_res += 1;
                let want = model.grant_duration(req, now);
                let got = ll.grant(next_res, req, host);
                match (want, got) {
                    (Ok(d), Ok(g)) => {
                        assert_eq!(g.duration, d);
                        assert_eq!(g.expiration, time::expiration_after(now, d));
                        assert!(ever.insert(g.cookie), "cookie issued twice");
                        assert!(req == ANY || g.duration <= req);
                        model.leases.insert(g.cookie, (g.expiration, next_res));
                        known.push(g.cookie);
                    }
                    (Err(a), Err(b)) => assert_eq!(a, b),
                    (a, b) => panic!("grant: model {a:?}, landlord {b:?}"),
                }
            }
            Op::Renew(p, req) => {
                let c = cookie(&known, p);
                assert_eq!(ll.renew(c, req, host), model.renew(c, req, now));
            }
            Op::Cancel(p) => {
                let c = cookie(&known, p);
                assert_eq!(ll.cancel(c, host), model.cancel(c, now));
            }
            Op::RenewAll(items) => {
                let items: Vec<_> = items.iter().map(|&(p, d)| (cookie(&known, p), d)).collect();
                let want: Vec<_> = items.iter().map(|&(c, d)| model.renew(c, d, now)).collect();
                assert_eq!(ll.renew_all(&items, host), want);
            }
            Op::CancelAll(ps) => {
                let cs: Vec<_> = ps.iter().map(|&p| cookie(&known, p)).collect();
                let want: Vec<_> = cs.iter().map(|&c| model.cancel(c, now)).collect();
                assert_eq!(ll.cancel_all(&cs, host), want);
            }
            Op::Get(p) => {
                let c = cookie(&known, p);
                assert_eq!(ll.get(c, host).map(|(e, r)| (e, *r)), model.honoured(c, now));
                assert_eq!(
                    ll.lease(c, host).map(|l| l.expiration()),
                    model.honoured(c, now).map(|x| x.0)
                );
            }
            Op::Step(s) => host = host.saturating_add(s),
            Op::Timeout => {
                let got = drain(&mut ll, host, budget);
                assert_eq!(got, model.sweep(now));
                if let Some(p) = ll.poll_timeout() {
                    assert!(p > now, "work left at {now}: poll_timeout {p}");
                }
            }
            Op::TimeoutOnce => {
                ll.handle_timeout(host);
                let mut n = 0;
                while let Some(e) = ll.poll_expired() {
                    n += 1;
                    let (exp, r) =
                        model.leases.remove(&e.cookie).expect("expired an unknown lease");
                    assert_eq!((e.expiration, e.resource), (exp, r));
                    assert!(model.deadline(exp) < now && model.deadline(exp) != FOREVER);
                }
                assert!(n <= budget.max(1));
            }
            Op::Restore => {
                let json = serde_json::to_string(&ll.snapshot(host)).unwrap();
                let snap: LandlordSnapshot<u32> = serde_json::from_str(&json).unwrap();
                ll = Landlord::restore(snap, spec.build().unwrap(), host).unwrap();
                // The snapshot keeps time left as an i64: beyond +-2^63 ms it saturates.
                let taken = clock.max(host);
                for (exp, _) in model.leases.values_mut() {
                    *exp = restored(taken, host, *exp);
                }
                // A restore counts time again from the host's `now`.
                clock = host;
            }
        }
        assert_eq!(ll.len(), model.leases.len());
        check_timeout_contract(&ll, &model);
    }
    let all: BTreeSet<_> = ll.iter().map(|(c, e, r)| (c, e, *r)).collect();
    let want: BTreeSet<_> = model.leases.iter().map(|(c, &(e, r))| (*c, e, r)).collect();
    assert_eq!(all, want);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn wheel_landlord_matches_the_naive_model(
        spec in policy(),
        grace in grace(),
        budget in budget(),
        now in start(),
        ops in prop::collection::vec(op(), 1..120),
    ) {
        run(spec, grace, budget, now, ops);
    }
}

/// Many leases, long runs of time: exercises cascades through every level.
#[test]
fn long_runs_through_every_level() {
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new(Config { cases: 16, ..Config::default() });
    let ops = prop::collection::vec(
        prop_oneof![
            8 => duration().prop_map(Op::Grant),
            6 => (0usize..1000, duration()).prop_map(|(p, d)| Op::Renew(p, d)),
            2 => (0usize..1000).prop_map(Op::Cancel),
            4 => step().prop_map(Op::Step),
            3 => Just(Op::Timeout),
            3 => Just(Op::TimeoutOnce),
            1 => Just(Op::Restore),
        ],
        400..1200,
    );
    runner
        .run(&(policy(), grace(), budget(), start(), ops), |(spec, grace, budget, now, ops)| {
            run(spec, grace, budget, now, ops);
            Ok(())
        })
        .unwrap();
}
