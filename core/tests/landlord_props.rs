//! Landlord invariants as property tests, plus the expiry budget at scale and snapshot errors.

use std::collections::BTreeSet;

use leasehold::landlord::{LandlordSnapshot, SNAPSHOT_VERSION};
use leasehold::policy::{Bounded, PolicySpec};
use leasehold::{
    Cookie, Duration, ErrorCode, LandlordConfig, LandlordId, LeaseError, LeasePolicy, Millis,
    PolicyContext, ANY, FOREVER,
};
use proptest::prelude::*;

type Landlord = leasehold::Landlord<u32>;

fn config(seed: u8) -> LandlordConfig {
    LandlordConfig::new(LandlordId(42), [seed; 32])
}

/// A policy that tries to grant more than asked (or nonsense), to show the landlord caps it.
struct Greedy(Duration);
impl LeasePolicy for Greedy {
    fn grant(&mut self, _req: Duration, _ctx: &PolicyContext) -> leasehold::Result<Duration> {
        Ok(self.0)
    }
    fn renew(
        &mut self,
        _r: Duration,
        _c: Millis,
        _x: &PolicyContext,
    ) -> leasehold::Result<Duration> {
        Ok(self.0)
    }
}

/// Grants, but denies every renewal.
struct NoRenewals;
impl LeasePolicy for NoRenewals {
    fn grant(&mut self, req: Duration, _ctx: &PolicyContext) -> leasehold::Result<Duration> {
        Ok(if req == ANY { 1000 } else { req })
    }
    fn renew(
        &mut self,
        _r: Duration,
        _c: Millis,
        _x: &PolicyContext,
    ) -> leasehold::Result<Duration> {
        Err(LeaseError::LeaseDenied("no renewals here".into()))
    }
}

fn requested() -> impl Strategy<Value = Duration> {
    prop_oneof![Just(ANY), Just(0i64), 0i64..1_000_000, Just(FOREVER), Just(FOREVER - 1)]
}

proptest! {
    #[test]
    fn a_grant_never_exceeds_the_request(
        offer in prop_oneof![Just(FOREVER), Just(-5i64), any::<i64>(), 0i64..100_000],
        reqs in prop::collection::vec(requested(), 1..20),
        now in any::<i64>(),
    ) {
        let mut ll = Landlord::new(config(1), Greedy(offer));
        for (i, &req) in reqs.iter().enumerate() {
            let g = ll.grant(i as u32, req, now).unwrap();
            prop_assert!(g.duration >= 0);
            prop_assert!(req == ANY || g.duration <= req, "granted {} for {}", g.duration, req);
            let d = ll.renew(g.cookie, req, now).unwrap();
            prop_assert!(d >= 0 && (req == ANY || d <= req));
        }
    }

    #[test]
    fn no_lease_is_honoured_after_expiration_plus_grace(
        grace in prop_oneof![Just(0i64), 0i64..10_000],
        durs in prop::collection::vec(0i64..100_000, 1..30),
        later in 0i64..300_000,
        sweep in any::<bool>(),
    ) {
        let mut ll = Landlord::new(config(2).with_grace(grace), Bounded::new(FOREVER, 10).unwrap());
        let grants: Vec<_> = durs.iter().enumerate()
            .map(|(i, &d)| ll.grant(i as u32, d, 0).unwrap())
            .collect();
        if sweep {
            ll.handle_timeout(later);
        }
        for g in &grants {
            let dead = later > g.expiration + grace;
            prop_assert_eq!(ll.get(g.cookie, later).is_none(), dead);
            if dead {
                prop_assert_eq!(ll.renew(g.cookie, 10, later), Err(LeaseError::UnknownLease));
                prop_assert_eq!(ll.cancel(g.cookie, later), Err(LeaseError::UnknownLease));
                prop_assert!(ll.lease(g.cookie, later).is_none());
            }
        }
    }

    #[test]
    fn cancelled_or_expired_leases_cannot_be_renewed(
        durs in prop::collection::vec(1i64..1000, 2..30),
        regrant in 0usize..30,
    ) {
        let mut ll = Landlord::new(config(3), Bounded::new(FOREVER, 10).unwrap());
        let grants: Vec<_> = durs.iter().enumerate()
            .map(|(i, &d)| ll.grant(i as u32, d, 0).unwrap())
            .collect();
        let (cancelled, rest) = grants.split_at(grants.len() / 2);
        for g in cancelled {
            prop_assert!(ll.cancel(g.cookie, 0).is_ok());
        }
        // Reused slots get fresh cookies: the old ones stay dead.
        let fresh: Vec<_> = (0..regrant).map(|i| ll.grant(1000 + i as u32, 5000, 0).unwrap()).collect();
        for g in cancelled {
            prop_assert_eq!(ll.renew(g.cookie, 10, 0), Err(LeaseError::UnknownLease));
            prop_assert_eq!(ll.cancel(g.cookie, 0), Err(LeaseError::UnknownLease));
            prop_assert!(ll.get(g.cookie, 0).is_none());
        }
        ll.handle_timeout(1001);
        while ll.poll_expired().is_some() {}
        for g in rest {
            prop_assert_eq!(ll.renew(g.cookie, 10, 1001), Err(LeaseError::UnknownLease));
            prop_assert_eq!(ll.renew(g.cookie, 10, 0), Err(LeaseError::UnknownLease));
        }
        for g in &fresh {
            prop_assert!(ll.renew(g.cookie, 10, 1001).is_ok());
        }
    }

    /// Same seed, same operations: renew_all/cancel_all give what one call per lease gives.
    #[test]
    fn batch_results_equal_individual_operations(
        script in prop::collection::vec(
            (0u8..4, prop::collection::vec((0usize..64, requested()), 0..8), 0i64..3000), 1..40),
    ) {
        let policy = || Bounded::new(50_000, 2_000).unwrap();
        let mut batched = Landlord::new(config(4).with_grace(100), policy());
        let mut single = Landlord::new(config(4).with_grace(100), policy());
        let mut cookies: Vec<Cookie> = vec![Cookie(7)];
        let mut now = 0;
        for (kind, items, step) in script {
            now += step;
            let pick = |i: usize| cookies[i % cookies.len()];
            match kind {
                0 => {
                    for (i, &(_, d)) in items.iter().enumerate() {
                        let a = batched.grant(i as u32, d, now);
                        prop_assert_eq!(&a, &single.grant(i as u32, d, now));
                        if let Ok(g) = a { cookies.push(g.cookie) }
                    }
                }
                1 => {
                    let batch: Vec<_> = items.iter().map(|&(i, d)| (pick(i), d)).collect();
                    let one: Vec<_> = batch.iter().map(|&(c, d)| single.renew(c, d, now)).collect();
                    prop_assert_eq!(batched.renew_all(&batch, now), one);
                }
                2 => {
                    let batch: Vec<_> = items.iter().map(|&(i, _)| pick(i)).collect();
                    let one: Vec<_> = batch.iter().map(|&c| single.cancel(c, now)).collect();
                    prop_assert_eq!(batched.cancel_all(&batch, now), one);
                }
                _ => {
                    batched.handle_timeout(now);
                    single.handle_timeout(now);
                    loop {
                        let a = batched.poll_expired();
                        prop_assert_eq!(&a, &single.poll_expired());
                        if a.is_none() { break }
                    }
                }
            }
            prop_assert_eq!(batched.len(), single.len());
        }
    }

    /// Snapshot (through JSON), restore, then any operations: the restored landlord behaves
    /// like the original. Cookies are compared by the grant they came from.
    #[test]
    fn snapshot_restore_then_anything_behaves_like_the_original(
        before in prop::collection::vec((0u8..5, 0usize..64, requested(), 0i64..5000), 0..40),
        after in prop::collection::vec((0u8..5, 0usize..64, requested(), 0i64..5000), 1..40),
        grace in 0i64..500,
        budget in prop_oneof![Just(3usize), Just(10_000usize)],
    ) {
        let spec = PolicySpec::Bounded { max: 60_000, default: 1_000 };
        let cfg = config(5).with_grace(grace).with_expiry_budget(budget);
        let mut a = Landlord::new(cfg.clone(), spec.build().unwrap());
        let mut pairs: Vec<(Cookie, Cookie)> = Vec::new();
        let mut now = 1_000_000;
        let mut res = 0u32;
        for &(kind, i, d, step) in &before {
            now += step;
            match kind {
                0 | 1 => {
                    res += 1;
                    if let Ok(g) = a.grant(res, d, now) { pairs.push((g.cookie, g.cookie)) }
                }
                2 if !pairs.is_empty() => { let _ = a.renew(pairs[i % pairs.len()].0, d, now); }
                3 if !pairs.is_empty() => { let _ = a.cancel(pairs[i % pairs.len()].0, now); }
                _ => a.handle_timeout(now),
            }
        }
        let json = serde_json::to_string(&a.snapshot(now)).unwrap();
        let snap: LandlordSnapshot<u32> = serde_json::from_str(&json).unwrap();
        let mut b = Landlord::restore(snap, spec.build().unwrap(), now).unwrap();
        let set = |l: &Landlord| l.iter().map(|(c, e, r)| (c, e, *r)).collect::<BTreeSet<_>>();
        prop_assert_eq!(set(&a), set(&b));
        for &(kind, i, d, step) in &after {
            now += step;
            match kind {
                0 => {
                    res += 1;
                    let (ga, gb) = (a.grant(res, d, now), b.grant(res, d, now));
                    prop_assert_eq!(ga.as_ref().map(|g| (g.duration, g.expiration)), gb.as_ref().map(|g| (g.duration, g.expiration)));
                    if let (Ok(x), Ok(y)) = (ga, gb) { pairs.push((x.cookie, y.cookie)) }
                }
                1 if !pairs.is_empty() => {
                    let (ca, cb) = pairs[i % pairs.len()];
                    prop_assert_eq!(a.renew(ca, d, now), b.renew(cb, d, now));
                }
                2 if !pairs.is_empty() => {
                    let (ca, cb) = pairs[i % pairs.len()];
                    prop_assert_eq!(a.cancel(ca, now), b.cancel(cb, now));
                    prop_assert_eq!(a.get(ca, now).map(|x| x.0), b.get(cb, now).map(|x| x.0));
                }
                _ => {
                    // Expiry: the same leases go, though a budget may split them differently.
                    let drain = |l: &mut Landlord| {
                        let mut out = BTreeSet::new();
                        loop {
                            l.handle_timeout(now);
                            while let Some(e) = l.poll_expired() { out.insert((e.resource, e.expiration)); }
                            if !matches!(l.poll_timeout(), Some(t) if t <= now) { return out }
                        }
                    };
                    prop_assert_eq!(drain(&mut a), drain(&mut b));
                }
            }
            prop_assert_eq!(a.len(), b.len());
            prop_assert_eq!(a.poll_timeout().is_some(), b.poll_timeout().is_some());
        }
    }
}

#[test]
fn without_intervening_expiry_a_restored_landlord_issues_the_same_cookies() {
    let mut a = Landlord::new(config(6), Bounded::new(60_000, 1_000).unwrap());
    let gs: Vec<_> = (0..100).map(|i| a.grant(i, 5_000 + i as i64, 0).unwrap()).collect();
    for g in gs.iter().step_by(3) {
        a.cancel(g.cookie, 10).unwrap();
    }
    let mut b =
        Landlord::restore(a.snapshot(10), Bounded::new(60_000, 1_000).unwrap(), 10).unwrap();
    for g in gs.iter().skip(1).step_by(3) {
        assert_eq!(b.get(g.cookie, 10), a.get(g.cookie, 10));
        assert!(b.get(g.cookie, 10).is_some());
    }
    for i in 0..60 {
        assert_eq!(a.grant(500 + i, 100, 20), b.grant(500 + i, 100, 20));
    }
}

#[test]
fn restore_keeps_the_remaining_time_and_pending_expiries() {
    let mut a = Landlord::new(config(7).with_grace(50), Bounded::new(FOREVER, 1_000).unwrap());
    let short = a.grant(1, 100, 0).unwrap();
    let long = a.grant(2, 10_000, 0).unwrap();
    let forever = a.grant(3, FOREVER, 0).unwrap();
    a.handle_timeout(200); // `short` expired (deadline 150) and waits in the queue
    let snap = a.snapshot(1_000);
    let restart = 5_000_000; // a different clock after the restart
    let mut b = Landlord::restore(snap, Bounded::new(FOREVER, 1_000).unwrap(), restart).unwrap();
    assert_eq!(b.get(long.cookie, restart), Some((restart + 9_000, &2)));
    assert_eq!(b.get(forever.cookie, restart).map(|x| x.0), Some(FOREVER));
    let e = b.poll_expired().unwrap();
    assert_eq!((e.cookie, e.resource, e.expiration), (short.cookie, 1, restart - 900));
    // poll_timeout is a lower bound that the wheel refines as the host follows it.
    let due = restart + 9_000 + 50 + 1;
    let mut wakeups = 0;
    while let Some(t) = b.poll_timeout().filter(|&t| t < due) {
        b.handle_timeout(t);
        assert!(b.poll_expired().is_none());
        wakeups += 1;
    }
    assert_eq!(b.poll_timeout(), Some(due));
    assert!(wakeups <= 11, "{wakeups} early wake-ups");
    assert!(b.renew(long.cookie, 10, restart + 9_050).is_ok());
}

#[test]
fn restoring_at_taken_at_keeps_absolute_expirations() {
    let mut a = Landlord::new(config(8), Bounded::new(FOREVER, 1_000).unwrap());
    let g = a.grant(1, 10_000, 0).unwrap();
    let snap = a.snapshot(4_000);
    let mut b =
        Landlord::restore(snap.clone(), Bounded::new(FOREVER, 1_000).unwrap(), snap.taken_at)
            .unwrap();
    assert_eq!(b.get(g.cookie, 9_000).map(|x| x.0), Some(10_000));
    b.handle_timeout(10_001);
    assert_eq!(b.poll_expired().map(|e| e.cookie), Some(g.cookie));
}

fn decode_err(r: leasehold::Result<Landlord>) -> String {
    match r {
        Err(e) => {
            assert_eq!(e.code(), ErrorCode::Decode, "{e}");
            e.to_string()
        }
        Ok(_) => panic!("a bad snapshot was accepted"),
    }
}

#[test]
fn bad_snapshots_are_clear_errors() {
    let mut a = Landlord::new(config(9), Bounded::new(FOREVER, 1_000).unwrap());
    let g1 = a.grant(1, 100, 0).unwrap();
    let g2 = a.grant(2, 100, 0).unwrap();
    a.grant(3, 100, 0).unwrap();
    a.cancel(g2.cookie, 0).unwrap();
    let good = a.snapshot(0);
    let p = || Bounded::new(FOREVER, 1_000).unwrap();
    assert!(Landlord::restore(good.clone(), p(), 0).is_ok());

    let mut s = good.clone();
    s.version = SNAPSHOT_VERSION + 1;
    assert!(decode_err(Landlord::restore(s, p(), 0)).contains("version"));

    let mut s = good.clone();
    let dup = s.leases[0].clone();
    s.leases.push(dup);
    s.free.clear();
    assert!(decode_err(Landlord::restore(s, p(), 0)).contains("duplicate"));

    let mut s = good.clone();
    s.leases[1].cookie = Cookie(s.leases[1].cookie.0 & !0xffff_ffff | 7);
    assert!(decode_err(Landlord::restore(s, p(), 0)).contains("slot 7"));

    let mut s = good.clone();
    s.free = vec![g1.cookie.0 as u32];
    assert!(decode_err(Landlord::restore(s, p(), 0)).contains("both free and held"));

    let mut s = good.clone();
    s.free.push(1);
    assert!(decode_err(Landlord::restore(s, p(), 0)).contains("do not make up"));

    let mut s = good.clone();
    s.leases[0].cookie = Cookie(s.leases[0].cookie.0 & 0xffff_ffff);
    assert!(decode_err(Landlord::restore(s, p(), 0)).contains("random"));

    let mut s = good.clone();
    s.slots = u32::MAX;
    decode_err(Landlord::restore(s, p(), 0));

    // JSON with a wrong shape fails in serde, before restore.
    let json = serde_json::to_string(&good).unwrap();
    assert!(serde_json::from_str::<LandlordSnapshot<u32>>(
        &json.replace("\"word_pos\":\"", "\"word_pos\":\"x")
    )
    .is_err());
    assert!(serde_json::from_str::<LandlordSnapshot<u32>>(&json[..json.len() / 2]).is_err());
}

/// 100 000 leases expiring at the same instant, budget 1 000: no call does more than 1 000
/// units, `poll_timeout` keeps asking for an immediate call while work remains, and every
/// lease comes out exactly once.
#[test]
fn expiry_budget_holds_for_100k_simultaneous_expiries() {
    let budget = 1_000;
    let mut ll =
        Landlord::new(config(10).with_expiry_budget(budget), Bounded::new(FOREVER, 1_000).unwrap());
    let n = 100_000u32;
    for i in 0..n {
        ll.grant(i, 3_600_000, 0).unwrap(); // all due at 3 600 001
    }
    let now = 3_600_001;
    assert_eq!(ll.poll_timeout().map(|t| t <= now), Some(true));
    let mut seen = vec![false; n as usize];
    let mut calls = 0;
    loop {
        ll.handle_timeout(now);
        calls += 1;
        let mut k = 0;
        while let Some(e) = ll.poll_expired() {
            assert!(!std::mem::replace(&mut seen[e.resource as usize], true));
            k += 1;
        }
        assert!(k <= budget);
        match ll.poll_timeout() {
            Some(t) => assert!(t <= now, "work left but poll_timeout {t} > {now}"),
            None => break,
        }
    }
    assert!(seen.iter().all(|&s| s));
    assert!(ll.is_empty());
    // 100 calls for the expiries, plus at most a few for cascading the wheel levels.
    assert!((100..=100 + 4 * 100).contains(&calls), "{calls} calls");

    // Spread deadlines: every call still within budget, and the leases come out in order of
    // deadline up to the wheel's granularity (no lease due later than `now` comes out).
    let mut ll =
        Landlord::new(config(11).with_expiry_budget(64), Bounded::new(FOREVER, 1).unwrap());
    for i in 0..20_000u32 {
        ll.grant(i, (i as i64 * 7919) % 1_000_000, 0).unwrap();
    }
    let mut out = 0;
    let mut now = 0;
    while out < 20_000 {
        now += 50_000;
        loop {
            ll.handle_timeout(now);
            let mut k = 0;
            while let Some(e) = ll.poll_expired() {
                assert!(e.expiration < now);
                k += 1;
            }
            assert!(k <= 64);
            out += k;
            if !matches!(ll.poll_timeout(), Some(t) if t <= now) {
                break;
            }
        }
        assert_eq!(ll.iter().filter(|(_, e, _)| *e < now).count(), 0);
    }
}

#[test]
fn a_denied_renewal_leaves_the_lease_as_it_was() {
    let mut ll = Landlord::new(config(12), NoRenewals);
    let g = ll.grant(1, 5_000, 0).unwrap();
    let err = ll.renew(g.cookie, 60_000, 100).unwrap_err();
    assert_eq!(err.code(), ErrorCode::LeaseDenied);
    assert_eq!(ll.get(g.cookie, 100), Some((5_000, &1)));
    assert_eq!(ll.renew_all(&[(g.cookie, 1), (Cookie(1), 1)], 100).len(), 2);
    assert_eq!(ll.get(g.cookie, 100), Some((5_000, &1)));
    ll.handle_timeout(5_001);
    assert_eq!(ll.poll_expired().map(|e| e.cookie), Some(g.cookie));
}

#[test]
fn one_bad_cookie_never_aborts_a_batch() {
    let mut ll = Landlord::new(config(13), Bounded::new(FOREVER, 1_000).unwrap());
    let a = ll.grant(1, 1_000, 0).unwrap().cookie;
    let b = ll.grant(2, 1_000, 0).unwrap().cookie;
    let r = ll.renew_all(&[(a, 500), (Cookie(99), 500), (b, -7), (b, ANY)], 10);
    assert_eq!(r[0], Ok(500));
    assert_eq!(r[1], Err(LeaseError::UnknownLease));
    assert_eq!(r[2].as_ref().unwrap_err().code(), ErrorCode::InvalidArgument);
    assert_eq!(r[3], Ok(1_000));
    let r = ll.cancel_all(&[a, a, Cookie(99), b], 10);
    assert_eq!(r, vec![Ok(1), Err(LeaseError::UnknownLease), Err(LeaseError::UnknownLease), Ok(2)]);
    assert!(ll.is_empty());
}

#[test]
fn negative_grace_counts_as_zero() {
    use leasehold::policy::Bounded;
    use leasehold::{Landlord, LandlordConfig, LandlordId};
    let mut config = LandlordConfig::new(LandlordId(3), [5; 32]);
    config.grace = -1_000;
    let mut ll: Landlord<()> = Landlord::new(config, Bounded::new(10_000, 10_000).unwrap());
    let g = ll.grant((), 1_000, 0).unwrap();
    // Honoured up to and including its expiration, as with no grace at all.
    assert!(ll.get(g.cookie, 1_000).is_some());
    assert!(ll.get(g.cookie, 1_001).is_none());
}
