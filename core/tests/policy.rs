//! Grant policies: the reference rules (River), the paper's adaptive policy with its numbers,
//! and the invariant every policy keeps: a grant never exceeds the request (unless ANY).

use leasehold::policy::{
    cap_to_request, never_shorten, Adaptive, AdaptiveConfig, Bounded, Capacity, Fixed,
    ResourceAware,
};
use leasehold::{ErrorCode, LeasePolicy, PolicyContext, PolicySpec, ANY, FOREVER};
use proptest::prelude::*;

const S: i64 = 1_000;

fn ctx(now: i64, live: usize) -> PolicyContext {
    PolicyContext { now, live }
}

// ---------- Fixed ----------

#[test]
fn fixed() {
    let mut p = Fixed::new(30 * S).unwrap();
    assert_eq!(p.grant(ANY, &ctx(0, 0)), Ok(30 * S));
    assert_eq!(p.grant(FOREVER, &ctx(0, 0)), Ok(30 * S));
    assert_eq!(p.grant(10 * S, &ctx(0, 0)), Ok(10 * S));
    assert_eq!(p.grant(0, &ctx(0, 0)), Ok(0));
    for bad in [0, -1, i64::MIN] {
        assert_eq!(Fixed::new(bad).unwrap_err().code(), ErrorCode::InvalidArgument);
    }
    assert_eq!(Fixed::new(FOREVER).unwrap().grant(ANY, &ctx(5, 0)), Ok(FOREVER));
}

// ---------- Bounded (River's FixedLeasePeriodPolicy) ----------

#[test]
fn bounded_grant_rules() {
    let mut p = Bounded::new(60 * S, 30 * S).unwrap();
    assert_eq!(p.grant(ANY, &ctx(0, 0)), Ok(30 * S), "ANY gets the default");
    assert_eq!(p.grant(FOREVER, &ctx(0, 0)), Ok(60 * S), "FOREVER gets the max");
    assert_eq!(p.grant(90 * S, &ctx(0, 0)), Ok(60 * S), "min(request, max)");
    assert_eq!(p.grant(45 * S, &ctx(0, 0)), Ok(45 * S));
    assert_eq!(p.grant(0, &ctx(0, 0)), Ok(0), "zero is allowed");
    let mut unbounded = Bounded::new(FOREVER, 30 * S).unwrap();
    assert_eq!(unbounded.grant(FOREVER, &ctx(0, 0)), Ok(FOREVER));
}

#[test]
fn bounded_settings() {
    for (max, default) in [(0, 1), (1, 0), (-5, 1), (10, 20), (10, ANY)] {
        assert_eq!(
            Bounded::new(max, default).unwrap_err().code(),
            ErrorCode::InvalidArgument,
            "{max} {default}"
        );
    }
    assert!(Bounded::new(10, 10).is_ok());
}

/// River: a renewal never shortens a lease unless the holder explicitly asked for a shorter one.
#[test]
fn bounded_renewal_never_shortens_unless_asked() {
    let mut p = Bounded::new(60 * S, 30 * S).unwrap();
    let now = 100 * S;
    let cur = now + 50 * S; // 50 s left
                            // ANY would give the 30 s default: shorter, so the lease keeps its 50 s.
    assert_eq!(p.renew(ANY, cur, &ctx(now, 1)), Ok(50 * S));
    // Asking 90 s is capped at 60 s: longer than 50 s, granted.
    assert_eq!(p.renew(90 * S, cur, &ctx(now, 1)), Ok(60 * S));
    // Explicitly asking 10 s: the holder gets the shorter lease it asked for.
    assert_eq!(p.renew(10 * S, cur, &ctx(now, 1)), Ok(10 * S));
    assert_eq!(p.renew(0, cur, &ctx(now, 1)), Ok(0));
    // A lease longer than the max (granted before a policy change): asking more keeps it.
    let long = now + 3_600 * S;
    assert_eq!(p.renew(FOREVER, long, &ctx(now, 1)), Ok(3_600 * S));
    assert_eq!(p.renew(ANY, long, &ctx(now, 1)), Ok(3_600 * S));
    // A FOREVER lease renewed with ANY stays FOREVER; asking a finite time shortens it.
    assert_eq!(p.renew(ANY, FOREVER, &ctx(now, 1)), Ok(FOREVER));
    assert_eq!(p.renew(5 * S, FOREVER, &ctx(now, 1)), Ok(5 * S));
    // Within grace (already past expiration) the renewal is a fresh grant.
    assert_eq!(p.renew(ANY, now - S, &ctx(now, 1)), Ok(30 * S));
}

#[test]
fn fixed_renewal_never_shortens_unless_asked() {
    let mut p = Fixed::new(30 * S).unwrap();
    assert_eq!(p.renew(ANY, 50 * S, &ctx(0, 1)), Ok(50 * S));
    assert_eq!(p.renew(FOREVER, 50 * S, &ctx(0, 1)), Ok(50 * S));
    assert_eq!(p.renew(10 * S, 50 * S, &ctx(0, 1)), Ok(10 * S));
    assert_eq!(p.renew(ANY, 10 * S, &ctx(0, 1)), Ok(30 * S));
}

#[test]
fn unchecked_negative_requests_never_give_negative_grants() {
    let mut p = Bounded::new(60 * S, 30 * S).unwrap();
    assert_eq!(p.grant(-5, &ctx(0, 0)), Ok(0));
    assert_eq!(p.renew(-5, 50 * S, &ctx(0, 1)), Ok(0));
    assert_eq!(never_shorten(-5, 0, 1_000, 0), 0);
}

#[test]
fn never_shorten_rule() {
    // new expiration at or after the current one: the policy's grant stands.
    assert_eq!(never_shorten(ANY, 10, 1_000, 990), 10);
    assert_eq!(never_shorten(ANY, 9, 1_000, 990), 10);
    assert_eq!(never_shorten(20, 9, 1_000, 990), 10);
    assert_eq!(never_shorten(5, 5, 1_000, 990), 5);
    assert_eq!(never_shorten(ANY, 5, FOREVER, 990), FOREVER);
    assert_eq!(never_shorten(ANY, 5, 10, 990), 5, "an expired lease is not kept in the past");
}

#[test]
fn cap_to_request_rule() {
    assert_eq!(cap_to_request(ANY, 7), 7);
    assert_eq!(cap_to_request(5, 7), 5);
    assert_eq!(cap_to_request(FOREVER, 7), 7);
    assert_eq!(cap_to_request(FOREVER, FOREVER), FOREVER);
    assert_eq!(cap_to_request(5, -3), 0, "a negative offer never leaks out");
    assert_eq!(cap_to_request(ANY, ANY), 0);
}

// ---------- Capacity ----------

#[test]
fn capacity_denies_above_n_max() {
    let mut p = Capacity::new(3, Bounded::new(60 * S, 30 * S).unwrap());
    for live in 0..3 {
        assert_eq!(p.grant(ANY, &ctx(0, live)), Ok(30 * S));
    }
    let e = p.grant(ANY, &ctx(0, 3)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::LeaseDenied);
    assert!(e.to_string().contains("3 of 3"), "{e}");
    // A renewal at full capacity is not denied: the lease already counts.
    assert_eq!(p.renew(ANY, 40 * S, &ctx(0, 3)), Ok(40 * S));
    let mut none = Capacity::new(0, Fixed::new(1).unwrap());
    assert_eq!(none.grant(ANY, &ctx(0, 0)).unwrap_err().code(), ErrorCode::LeaseDenied);
}

// ---------- ResourceAware ----------

#[test]
fn resource_aware_shortens_as_it_fills() {
    let mut p = ResourceAware::new(100, 60 * S, 10 * S).unwrap();
    assert_eq!(p.offer(0), 60 * S);
    assert_eq!(p.offer(50), 35 * S);
    assert_eq!(p.offer(100), 10 * S);
    assert_eq!(p.offer(usize::MAX), 10 * S);
    let offers: Vec<i64> = (0..=100).map(|n| p.offer(n)).collect();
    assert!(offers.windows(2).all(|w| w[0] >= w[1]), "never longer as occupancy rises");
    assert_eq!(p.grant(ANY, &ctx(0, 50)), Ok(35 * S));
    assert_eq!(p.grant(5 * S, &ctx(0, 50)), Ok(5 * S));
    assert_eq!(p.grant(ANY, &ctx(0, 100)).unwrap_err().code(), ErrorCode::LeaseDenied);
    // Renewal counts the renewed lease among the live ones, is never denied for capacity,
    // and never shortens unless asked.
    assert_eq!(p.renew(ANY, 0, &ctx(0, 51)), Ok(35 * S));
    assert_eq!(p.renew(ANY, 0, &ctx(0, 100)), Ok(p.offer(99)));
    assert_eq!(p.renew(ANY, 50 * S, &ctx(0, 100)), Ok(50 * S));
    for (cap, max, min) in [(0, 10, 1), (10, 10, 0), (10, 5, 6)] {
        assert_eq!(
            ResourceAware::new(cap, max, min).unwrap_err().code(),
            ErrorCode::InvalidArgument
        );
    }
}

// ---------- Adaptive (seed 004) ----------

fn paper() -> Adaptive {
    Adaptive::new(AdaptiveConfig {
        renewals_per_second: 3.0,
        min: 15 * S,
        max: 300 * S,
        grantors: 1,
    })
    .unwrap()
}

#[test]
fn adaptive_paper_numbers() {
    let p = paper();
    // L_G = N / G, clamped to L_MIN.
    assert_eq!(p.period(30), Ok(15 * S), "30 / 3 = 10 s, raised to L_MIN 15 s");
    assert_eq!(p.period(45), Ok(15 * S));
    assert_eq!(p.period(60), Ok(20 * S));
    assert_eq!(p.period(200), Ok(66_667), "200 / 3 = 66.7 s");
    // N_MAX = L_MAX * G = 300 s * 3/s = 900; deny above L_MAX.
    assert_eq!(p.max_holders(), 900.0);
    assert_eq!(p.period(900), Ok(300 * S));
    assert_eq!(p.period(901).unwrap_err().code(), ErrorCode::LeaseDenied);
    // The grant counts the new holder: 199 live + 1.
    let mut p = paper();
    assert_eq!(p.grant(ANY, &ctx(0, 199)), Ok(66_667));
    assert_eq!(p.grant(ANY, &ctx(0, 899)), Ok(300 * S));
    assert_eq!(p.grant(ANY, &ctx(0, 900)).unwrap_err().code(), ErrorCode::LeaseDenied);
    assert_eq!(p.grant(ANY, &ctx(0, usize::MAX)).unwrap_err().code(), ErrorCode::LeaseDenied);
    // Never more than asked, even below L_MIN.
    assert_eq!(p.grant(5 * S, &ctx(0, 0)), Ok(5 * S));
}

#[test]
fn adaptive_bandwidth_budget() {
    // B = 480 B/s with S_R = 128 B and S_G = 32 B gives G = 480 / 160 = 3 renewals/s.
    let c = AdaptiveConfig::from_bandwidth(480.0, 128.0, 32.0, 15 * S, 300 * S).unwrap();
    assert_eq!(c.renewals_per_second, 3.0);
    let p = Adaptive::new(c).unwrap();
    assert_eq!(p.bandwidth_ceiling(128.0, 32.0), 480.0);
    assert_eq!(p.period(200), Ok(66_667));
    // With the period the policy grants, N holders renewing once per L_G use at most B.
    for n in [1usize, 30, 45, 200, 900] {
        let lg = p.period(n).unwrap() as f64 / 1000.0;
        let b = n as f64 / lg * 160.0;
        assert!(b <= 480.0 + 1e-9, "N = {n}: {b} B/s");
    }
    for (b, sr, sg) in [
        (0.0, 128.0, 32.0),
        (-1.0, 1.0, 1.0),
        (480.0, 0.0, 0.0),
        (f64::NAN, 1.0, 1.0),
        (1.0, f64::NAN, 1.0),
    ] {
        assert!(AdaptiveConfig::from_bandwidth(b, sr, sg, 1, 2).is_err());
    }
}

#[test]
fn adaptive_domain_budget_is_shared() {
    // Four grantors share G = 3/s: each affords 0.75/s, so each accepts N_MAX = 225.
    let c = AdaptiveConfig { renewals_per_second: 3.0, min: 15 * S, max: 300 * S, grantors: 4 };
    let mut p = Adaptive::new(c).unwrap();
    assert_eq!(p.local_rate(), 0.75);
    assert_eq!(p.max_holders(), 225.0);
    assert_eq!(p.period(30), Ok(40 * S), "30 / 0.75 = 40 s");
    assert_eq!(p.grant(ANY, &ctx(0, 224)), Ok(300 * S));
    assert_eq!(p.grant(ANY, &ctx(0, 225)).unwrap_err().code(), ErrorCode::LeaseDenied);
    assert_eq!(p.bandwidth_ceiling(128.0, 32.0), 120.0);
}

#[test]
fn adaptive_renewal_follows_n() {
    let mut p = paper();
    // Renewals recompute L_G from the holders (the renewed one included) and are never denied.
    assert_eq!(p.renew(ANY, 0, &ctx(0, 200)), Ok(66_667));
    assert_eq!(p.renew(ANY, 100 * S, &ctx(0, 30)), Ok(15 * S), "shrinks as N falls");
    assert_eq!(p.renew(ANY, 0, &ctx(0, 5_000)), Ok(300 * S), "above N_MAX: L_MAX, not a denial");
    assert_eq!(p.renew(10 * S, 0, &ctx(0, 200)), Ok(10 * S));
}

#[test]
fn adaptive_settings() {
    let ok = AdaptiveConfig { renewals_per_second: 3.0, min: 15 * S, max: 300 * S, grantors: 1 };
    let bad = [
        AdaptiveConfig { renewals_per_second: 0.0, ..ok },
        AdaptiveConfig { renewals_per_second: -3.0, ..ok },
        AdaptiveConfig { renewals_per_second: f64::NAN, ..ok },
        AdaptiveConfig { renewals_per_second: f64::INFINITY, ..ok },
        AdaptiveConfig { min: 0, ..ok },
        AdaptiveConfig { min: 301 * S, ..ok },
        AdaptiveConfig { grantors: 0, ..ok },
    ];
    for c in bad {
        assert_eq!(Adaptive::new(c).unwrap_err().code(), ErrorCode::InvalidArgument, "{c:?}");
    }
    let forever = Adaptive::new(AdaptiveConfig { max: FOREVER, ..ok }).unwrap();
    assert_eq!(forever.max_holders(), f64::INFINITY);
    assert_eq!(forever.period(usize::MAX), Ok(FOREVER - 1));
    assert_eq!(forever.config().grantors, 1);
}

// ---------- specs and serde ----------

#[test]
fn specs_build_and_check() {
    let spec: PolicySpec = serde_json::from_str(
        r#"{"kind":"capacity","max_leases":2,"inner":{"kind":"bounded","max":60000,"default":30000}}"#,
    )
    .unwrap();
    let mut p = spec.build().unwrap();
    assert_eq!(p.grant(ANY, &ctx(0, 1)), Ok(30 * S));
    assert_eq!(p.grant(ANY, &ctx(0, 2)).unwrap_err().code(), ErrorCode::LeaseDenied);
    let bad = [
        PolicySpec::Fixed { duration: 0 },
        PolicySpec::Bounded { max: 1, default: 2 },
        PolicySpec::ResourceAware { capacity: 0, max: 2, min: 1 },
        PolicySpec::Capacity { max_leases: 1, inner: Box::new(PolicySpec::Fixed { duration: -1 }) },
        PolicySpec::Adaptive(AdaptiveConfig {
            renewals_per_second: 0.0,
            min: 1,
            max: 2,
            grantors: 1,
        }),
    ];
    for s in bad {
        assert_eq!(s.build().err().map(|e| e.code()), Some(ErrorCode::InvalidArgument), "{s:?}");
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(
            serde_json::from_str::<PolicySpec>(&text).unwrap(),
            s,
            "specs are data; build checks"
        );
    }
}

#[test]
fn deserializing_a_policy_checks_its_settings() {
    assert!(serde_json::from_str::<Fixed>(r#"{"duration":5}"#).is_ok());
    assert!(serde_json::from_str::<Fixed>(r#"{"duration":-5}"#).is_err());
    assert!(serde_json::from_str::<Bounded>(r#"{"max":5,"default":9}"#).is_err());
    assert!(serde_json::from_str::<ResourceAware>(r#"{"capacity":1,"max":5,"min":9}"#).is_err());
    let a = serde_json::to_string(&paper()).unwrap();
    assert_eq!(serde_json::from_str::<Adaptive>(&a).unwrap(), paper());
    assert!(
        serde_json::from_str::<Adaptive>(&a.replace("\"grantors\":1", "\"grantors\":0")).is_err()
    );
}

// ---------- the invariant ----------

fn req() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(ANY),
        Just(FOREVER),
        Just(0),
        0i64..1_000_000,
        any::<i64>().prop_map(|x| x.max(0))
    ]
}

fn t() -> impl Strategy<Value = i64> {
    prop_oneof![any::<i64>(), Just(FOREVER), Just(i64::MIN), -1_000_000i64..1_000_000]
}

fn specs() -> impl Strategy<Value = PolicySpec> {
    let dur = prop_oneof![1i64..1_000_000, Just(FOREVER), any::<i64>().prop_map(|x| x.max(1))];
    let leaf = prop_oneof![
        dur.clone().prop_map(|duration| PolicySpec::Fixed { duration }),
        (dur.clone(), dur.clone())
            .prop_map(|(a, b)| PolicySpec::Bounded { max: a.max(b), default: a.min(b) }),
        (1usize..1000, dur.clone(), dur.clone()).prop_map(|(capacity, a, b)| {
            PolicySpec::ResourceAware { capacity, max: a.max(b), min: a.min(b) }
        }),
        (0.001f64..1e6, dur.clone(), dur, 1u32..10).prop_map(|(g, a, b, nd)| PolicySpec::Adaptive(
            AdaptiveConfig { renewals_per_second: g, min: a.min(b), max: a.max(b), grantors: nd }
        )),
    ];
    leaf.prop_recursive(2, 4, 1, |inner| {
        (0usize..1000, inner).prop_map(|(max_leases, inner)| PolicySpec::Capacity {
            max_leases,
            inner: Box::new(inner),
        })
    })
}

proptest! {
    /// A grant (or renewal) never exceeds the request unless ANY was asked, is never negative,
    /// and no input makes a policy panic.
    #[test]
    fn grant_never_exceeds_request(spec in specs(), r in req(), now in t(), cur in t(), live in prop_oneof![0usize..2000, Just(usize::MAX)]) {
        let mut p = spec.build().unwrap();
        for got in [p.grant(r, &ctx(now, live)), p.renew(r, cur, &ctx(now, live))] {
            match got {
                Ok(d) => {
                    prop_assert!(d >= 0, "{d}");
                    if r >= 0 { prop_assert!(d <= r, "{d} > {r}"); }
                }
                Err(e) => prop_assert_eq!(e.code(), ErrorCode::LeaseDenied),
            }
        }
    }

    /// River's renewal rule, for Bounded: the new expiration is never before the current one
    /// unless the holder asked for an expiration before it.
    #[test]
    fn bounded_renewal_keeps_or_obeys(max in 1i64..10_000_000, def in 1i64..10_000_000, r in req().prop_map(|r| if r < -1 { ANY } else { r }), now in -1_000_000i64..1_000_000, left in -1_000i64..20_000_000) {
        let mut p = Bounded::new(max.max(def), def.min(max)).unwrap();
        let cur = now + left;
        let d = p.renew(r, cur, &ctx(now, 1)).unwrap();
        let new_exp = leasehold::time::expiration_after(now, d);
        let asked = leasehold::time::expiration_after(now, r);
        if r == ANY || asked >= cur {
            prop_assert!(new_exp >= cur, "shortened: {new_exp} < {cur}");
        } else {
            prop_assert_eq!(d, r);
        }
    }
}
