//! Regressions for the findings of independent testing (issue 13), and the landlord's journal:
//! checked restore, time that never runs backwards, cookies bound to their landlord, and
//! recovery from a binary snapshot plus a log with a torn tail or damage.

use leasehold::journal::{write_snapshot, KIND_LANDLORD};
use leasehold::landlord::{LandlordSnapshot, SnapshotLease, BINARY_SNAPSHOT_VERSION};
use leasehold::policy::Bounded;
use leasehold::{Cookie, Landlord, LandlordConfig, LandlordId, LeaseError, FOREVER};
use proptest::prelude::*;

type LL = Landlord<Vec<u8>>;

fn ll(id: u64, seed: u8) -> LL {
    Landlord::new(
        LandlordConfig::new(LandlordId(id), [seed; 32]),
        Bounded::new(FOREVER, 1_000).unwrap(),
    )
}

fn policy() -> Bounded {
    Bounded::new(FOREVER, 1_000).unwrap()
}

fn decode_err<T>(r: leasehold::Result<T>) -> String {
    match r {
        Err(LeaseError::Decode(m)) => m,
        Err(e) => panic!("expected a decode error, got {e:?}"),
        Ok(_) => panic!("an inconsistent snapshot was accepted"),
    }
}

/// Finding 2: one cookie listed both as live and as expired.
#[test]
fn restore_refuses_a_cookie_both_held_and_expired() {
    let mut a = ll(1, 1);
    let g = a.grant(b"x".to_vec(), 1_000, 0).unwrap();
    let mut s = a.snapshot(0);
    s.expired.push(SnapshotLease { cookie: g.cookie, remaining: -10, resource: b"x".to_vec() });
    assert!(decode_err(Landlord::restore(s, policy(), 0)).contains("both held and expired"));
}

#[test]
fn restore_refuses_an_expired_lease_that_was_not_due_and_a_foreign_generator() {
    let mut a = ll(1, 1);
    let g = a.grant(b"x".to_vec(), 1_000, 0).unwrap();
    a.handle_timeout(2_000);
    let good = a.snapshot(2_000);
    assert_eq!(good.expired.len(), 1);
    let mut s = good.clone();
    s.expired[0].remaining = 5;
    assert!(decode_err(Landlord::restore(s, policy(), 0)).contains("not past its deadline"));
    let mut s = good.clone();
    s.rng.stream = 2;
    assert!(decode_err(Landlord::restore(s, policy(), 0)).contains("stream"));
    let mut s = good;
    s.version = 1;
    assert!(decode_err(Landlord::restore(s, policy(), 0)).contains("version"));
    let _ = g;
}

/// After restore, what `get` says and what `poll_expired` hands out never disagree, and every
/// lease is accounted for once.
fn consistent(l: &mut LL, now: i64) {
    let held: Vec<Cookie> = l.iter().map(|(c, _, _)| c).collect();
    assert_eq!(held.len(), l.len());
    let mut seen = std::collections::HashSet::new();
    for c in &held {
        assert!(seen.insert(*c), "cookie {c} held twice");
    }
    while let Some(e) = l.poll_expired() {
        assert!(l.get(e.cookie, now).is_none(), "{} expired but still alive", e.cookie);
        assert!(!held.contains(&e.cookie), "{} expired and held", e.cookie);
    }
    l.handle_timeout(now.saturating_add(1 << 40));
    while let Some(e) = l.poll_expired() {
        assert!(seen.remove(&e.cookie), "{} expired but was never held", e.cookie);
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    DupLease(usize),
    LeaseToExpired(usize),
    DropFree(usize),
    DupFree(usize),
    FreeHeld(usize),
    Slots(i64),
    Remaining(usize, i64),
    Cookie(usize, u32),
    ExpiredDup(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0usize..64).prop_map(Mutation::DupLease),
        (0usize..64).prop_map(Mutation::LeaseToExpired),
        (0usize..64).prop_map(Mutation::DropFree),
        (0usize..64).prop_map(Mutation::DupFree),
        (0usize..64).prop_map(Mutation::FreeHeld),
        (-3i64..3).prop_map(Mutation::Slots),
        (0usize..64, prop_oneof![Just(FOREVER), Just(-5i64), -100_000i64..100_000])
            .prop_map(|(i, r)| Mutation::Remaining(i, r)),
        (0usize..64, 0u32..200).prop_map(|(i, s)| Mutation::Cookie(i, s)),
        (0usize..64).prop_map(Mutation::ExpiredDup),
    ]
}

fn mutate(s: &mut LandlordSnapshot<Vec<u8>>, m: &Mutation) {
    let pick = |n: usize, i: usize| if n == 0 { None } else { Some(i % n) };
    match *m {
        Mutation::DupLease(i) => {
            if let Some(i) = pick(s.leases.len(), i) {
                let l = s.leases[i].clone();
                s.leases.push(l);
            }
        }
        Mutation::LeaseToExpired(i) => {
            if let Some(i) = pick(s.leases.len(), i) {
                let mut l = s.leases[i].clone();
                l.remaining = -1_000_000;
                s.expired.push(l);
            }
        }
        Mutation::DropFree(i) => {
            if let Some(i) = pick(s.free.len(), i) {
                s.free.remove(i);
            }
        }
        Mutation::DupFree(i) => {
            if let Some(i) = pick(s.free.len(), i) {
                let f = s.free[i];
                s.free.push(f);
            }
        }
        Mutation::FreeHeld(i) => {
            if let Some(i) = pick(s.leases.len(), i) {
                s.free.push(s.leases[i].cookie.0 as u32);
            }
        }
        Mutation::Slots(d) => s.slots = (s.slots as i64 + d).max(0) as u32,
        Mutation::Remaining(i, r) => {
            if let Some(i) = pick(s.expired.len(), i) {
                s.expired[i].remaining = r;
            } else if let Some(i) = pick(s.leases.len(), i) {
                s.leases[i].remaining = r;
            }
        }
        Mutation::Cookie(i, slot) => {
            if let Some(i) = pick(s.leases.len(), i) {
                let c = s.leases[i].cookie.0;
                s.leases[i].cookie = Cookie((c & !0xffff_ffff) | slot as u128);
            }
        }
        Mutation::ExpiredDup(i) => {
            if let Some(i) = pick(s.expired.len(), i) {
                let e = s.expired[i].clone();
                s.expired.push(e);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Fuzzed snapshots: restore refuses the inconsistent ones with a decode error; whatever
    /// it accepts behaves consistently.
    #[test]
    fn fuzzed_snapshots_are_refused_or_consistent(
        grants in prop::collection::vec(0i64..3_000, 0..40),
        cancels in prop::collection::vec(0usize..40, 0..20),
        muts in prop::collection::vec(mutation(), 1..4),
    ) {
        let mut a = ll(3, 3);
        let cookies: Vec<Cookie> = grants.iter().map(|&d| a.grant(b"r".to_vec(), d, 0).unwrap().cookie).collect();
        for &i in &cancels {
            if !cookies.is_empty() {
                let _ = a.cancel(cookies[i % cookies.len()], 1);
            }
        }
        a.handle_timeout(1_500);
        let mut s = a.snapshot(1_500);
        for m in &muts {
            mutate(&mut s, m);
        }
        match Landlord::restore(s, policy(), 1_500) {
            Ok(mut b) => consistent(&mut b, 1_500),
            Err(LeaseError::Decode(_)) => {}
            Err(e) => prop_assert!(false, "not a decode error: {e:?}"),
        }
    }

    /// Binary snapshots: any damage is refused, never a panic.
    #[test]
    fn damaged_binary_snapshots_are_refused(at in 0usize..10_000, bit in 0u8..8) {
        let mut a = ll(4, 4);
        a.enable_journal();
        for i in 0..20 {
            a.grant(vec![i; i as usize], 100 * i as i64, 0).unwrap();
        }
        let mut bytes = Vec::new();
        a.snapshot_bytes(&mut bytes);
        let at = at % bytes.len();
        bytes[at] ^= 1 << bit;
        prop_assert!(Landlord::<Vec<u8>>::from_snapshot_bytes(&bytes, policy()).is_err());
    }

    /// Garbage bodies inside a valid container: a decode error, never a panic or a huge allocation.
    #[test]
    fn garbage_snapshot_bodies_are_refused(body in prop::collection::vec(any::<u8>(), 0..400)) {
        let mut bytes = Vec::new();
        write_snapshot(&mut bytes, KIND_LANDLORD, BINARY_SNAPSHOT_VERSION, 0, &body);
        prop_assert!(Landlord::<Vec<u8>>::from_snapshot_bytes(&bytes, policy()).is_err());
    }
}

/// Finding 3: after expiries (whose order depends on the wheel's layout) a restored landlord
/// still issues the cookies the original would.
#[test]
fn a_restored_landlord_issues_the_same_cookies_after_expiries() {
    let mut a = ll(5, 5);
    for i in 0..300u64 {
        a.grant(i.to_le_bytes().to_vec(), (i as i64 * 7919) % 5_000, 0).unwrap();
    }
    // Expire some in a few budgeted steps, so the free list order comes from the wheel.
    let mut b = Landlord::restore(a.snapshot(0), policy(), 0).unwrap();
    for t in [1_000, 2_500, 2_600, 4_000] {
        a.handle_timeout(t);
        b.handle_timeout(t);
        let ea: Vec<_> = std::iter::from_fn(|| a.poll_expired()).collect();
        let eb: Vec<_> = std::iter::from_fn(|| b.poll_expired()).collect();
        assert_eq!(ea, eb, "expiries at {t}");
    }
    let mut c = Landlord::restore(a.snapshot(4_000), policy(), 4_000).unwrap();
    for i in 0..200u64 {
        let ga = a.grant(vec![1], 10, 4_000 + i as i64).unwrap();
        assert_eq!(ga, b.grant(vec![1], 10, 4_000 + i as i64).unwrap());
        assert_eq!(ga, c.grant(vec![1], 10, 4_000 + i as i64).unwrap());
    }
}

/// Finding 4: "unknown lease" at 5000 stays unknown after the host's clock steps back to 500.
#[test]
fn a_lease_said_gone_stays_gone_when_the_clock_steps_back() {
    let mut a = ll(6, 6);
    let g = a.grant(b"x".to_vec(), 1_000, 0).unwrap();
    assert_eq!(a.renew(g.cookie, 1_000, 5_000), Err(LeaseError::UnknownLease));
    assert_eq!(a.renew(g.cookie, 1_000, 500), Err(LeaseError::UnknownLease));
    assert!(a.get(g.cookie, 500).is_none());
    assert_eq!(a.now(), 5_000);
    // A grant at the stepped-back clock counts from the landlord's time.
    let g2 = a.grant(b"y".to_vec(), 1_000, 600).unwrap();
    assert_eq!(g2.expiration, 6_000);
}

/// Finding 4 with a journal: the answer "unknown" is journaled (a clock record), so a recovered
/// landlord cannot bring the lease back either.
#[test]
fn a_lease_said_gone_stays_gone_after_recovery() {
    let mut a = ll(6, 6);
    a.enable_journal();
    let mut snap = Vec::new();
    a.snapshot_bytes(&mut snap);
    let mut log = Vec::new();
    let g = a.grant(b"x".to_vec(), 1_000, 0).unwrap();
    a.take_journal(&mut log);
    let before = a.journal_seq();
    assert_eq!(a.renew(g.cookie, 1_000, 5_000), Err(LeaseError::UnknownLease));
    assert!(a.journal_seq() > before, "the answer depends on a journaled time");
    a.take_journal(&mut log);
    let (mut b, rec) = LL::recover(&snap, &[&log], policy(), 0).unwrap();
    assert_eq!(rec.torn, None);
    assert_eq!(b.renew(g.cookie, 1_000, 0), Err(LeaseError::UnknownLease));
}

/// Finding 5: same seed, different ids: different cookies, and neither honours the other's.
#[test]
fn cookies_are_bound_to_their_landlord() {
    let mut a = ll(1, 9);
    let mut b = ll(2, 9);
    for _ in 0..50 {
        let ga = a.grant(vec![], 10_000, 0).unwrap();
        let gb = b.grant(vec![], 10_000, 0).unwrap();
        assert_ne!(ga.cookie, gb.cookie);
        assert_eq!(b.renew(ga.cookie, 10, 1), Err(LeaseError::UnknownLease));
        assert_eq!(a.renew(gb.cookie, 10, 1), Err(LeaseError::UnknownLease));
        assert!(a.get(gb.cookie, 1).is_none() && b.get(ga.cookie, 1).is_none());
    }
}

/// A durable landlord and its disk, for the recovery tests below.
fn durable_with_log() -> (LL, Vec<u8>, Vec<u8>, Vec<Cookie>) {
    let mut a = ll(7, 7);
    a.enable_journal();
    let mut snap = Vec::new();
    a.snapshot_bytes(&mut snap);
    let mut log = Vec::new();
    let mut cookies = Vec::new();
    for i in 0..30 {
        cookies.push(a.grant(vec![i], 10_000, i as i64).unwrap().cookie);
        if i % 3 == 0 {
            a.take_journal(&mut log);
        }
    }
    a.renew(cookies[0], 20_000, 100).unwrap();
    a.cancel(cookies[1], 101).unwrap();
    a.take_journal(&mut log);
    (a, snap, log, cookies)
}

#[test]
fn recovery_drops_a_torn_tail_and_refuses_damage_in_the_middle() {
    let (a, snap, log, cookies) = durable_with_log();
    // The whole log: the same leases.
    let (b, rec) = LL::recover(&snap, &[&log], policy(), 101).unwrap();
    assert_eq!(rec.last_seq, a.journal_seq());
    assert_eq!(b.iter().collect::<Vec<_>>(), a.iter().collect::<Vec<_>>());
    // Cut anywhere: a torn tail, reported with where to truncate; a prefix of the history.
    for cut in (1..log.len()).step_by(7) {
        let (c, rec) = LL::recover(&snap, &[&log[..cut]], policy(), 101).unwrap();
        assert!(c.len() <= 30);
        if let Some((seg, valid, _)) = rec.torn {
            assert_eq!(seg, 0);
            assert!(valid <= cut);
        }
    }
    // A flipped byte in the middle: refused.
    let mut bad = log.clone();
    bad[40] ^= 0x10;
    let e = LL::recover(&snap, &[&bad], policy(), 101).err().expect("damage accepted");
    assert!(e.to_string().contains("valid frame follows"), "{e}");
    // A torn tail in a segment that is not the last: refused.
    let half = log.len() - 5;
    assert!(LL::recover(&snap, &[&log[..half], &log[half..]], policy(), 101).is_err());
    let _ = cookies;
}

#[test]
fn a_log_that_does_not_fit_its_snapshot_is_refused() {
    let (_, snap, log, _) = durable_with_log();
    let mut other = ll(7, 8); // another seed: other cookies
    other.enable_journal();
    let mut snap2 = Vec::new();
    other.snapshot_bytes(&mut snap2);
    let e = LL::recover(&snap2, &[&log], policy(), 0).err().expect("foreign log accepted");
    assert!(e.to_string().contains("next cookie"), "{e}");
    let _ = snap;
}

/// Time spent down does not count: a lease with 10 s left keeps 10 s after a resume on a clock
/// that reads much later (or earlier), and the landlord's replies count from there.
#[test]
fn resume_keeps_remaining_time_whatever_the_new_clock() {
    let (a, snap, log, cookies) = durable_with_log();
    let left = a.get(cookies[0], 101).unwrap().0 - 101;
    for now in [0, 101, 9_000_000_000] {
        let (mut b, _) = LL::recover(&snap, &[&log], policy(), now).unwrap();
        assert_eq!(b.get(cookies[0], now).unwrap().0 - now, left);
        b.handle_timeout(now + left);
        assert!(b.poll_expired().map(|e| e.cookie) != Some(cookies[0]));
        b.handle_timeout(now + left + 1);
        let gone: Vec<_> = std::iter::from_fn(|| b.poll_expired()).map(|e| e.cookie).collect();
        assert!(gone.contains(&cookies[0]));
    }
}

/// Expiries handed out are journaled, so a recovered landlord does not hand them out again.
#[test]
fn expiries_handed_out_are_not_handed_out_again() {
    let mut a = ll(8, 8);
    a.enable_journal();
    let mut snap = Vec::new();
    a.snapshot_bytes(&mut snap);
    let mut log = Vec::new();
    for i in 0..10 {
        a.grant(vec![i], 100, 0).unwrap();
    }
    a.handle_timeout(1_000);
    for _ in 0..4 {
        a.poll_expired().unwrap();
    }
    a.take_journal(&mut log);
    // A snapshot in the middle of a run of deliveries, then more deliveries.
    let mut snap2 = Vec::new();
    a.snapshot_bytes(&mut snap2);
    a.poll_expired().unwrap();
    a.take_journal(&mut log);
    for s in [&snap, &snap2] {
        let (b, _) = LL::recover(s, &[&log], policy(), 1_000).unwrap();
        assert_eq!(b.expired_len(), 5);
    }
}

/// Bytes on disk: at most 40 bytes per lease plus its resource.
#[test]
fn binary_snapshots_are_compact() {
    let mut a = ll(9, 9);
    a.enable_journal();
    let n = 10_000;
    for i in 0..n {
        a.grant(vec![7; 8], 60_000 + i, 0).unwrap();
    }
    let mut bytes = Vec::new();
    a.snapshot_bytes(&mut bytes);
    let per = (bytes.len() as f64 - 8.0 * n as f64) / n as f64;
    assert!(per <= 40.0, "{per} bytes per lease plus resource");
    let b = LL::from_snapshot_bytes(&bytes, policy()).unwrap();
    assert_eq!(b.len(), n as usize);
}
