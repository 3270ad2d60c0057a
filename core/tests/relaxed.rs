//! Relaxed renewals (`Landlord::set_relaxed_renewals`): renewals answered before their records
//! are durable, and both bounds after a crash: every lease lives at least until the expiration
//! its holder was told, and at most one lease period longer. Virtual time throughout.

use std::collections::HashMap;

use leasehold::policy::Bounded;
use leasehold::{
    Cookie, Landlord, LandlordConfig, LandlordId, ReplyBody, Request, RequestBody, FOREVER,
};
use proptest::prelude::*;

type LL = Landlord<Vec<u8>>;

fn policy() -> Bounded {
    Bounded::new(FOREVER, 1_000).unwrap()
}

fn fresh() -> (LL, Vec<u8>) {
    let mut l: LL = Landlord::new(LandlordConfig::new(LandlordId(1), [7; 32]), policy());
    l.enable_journal();
    l.set_relaxed_renewals(true);
    let mut snap = Vec::new();
    l.snapshot_bytes(&mut snap);
    (l, snap)
}

fn renew(l: &mut LL, c: Cookie, d: i64, now: i64) -> (bool, bool) {
    let (r, early) = l.handle_request_relaxed(
        &Request { id: 1, body: RequestBody::Renew { cookie: c, duration: d } },
        now,
    );
    (matches!(r.body, ReplyBody::Renewed { .. }), early)
}

/// Makes everything written so far durable (appends it to `log`).
fn sync(l: &mut LL, log: &mut Vec<u8>) {
    l.take_journal(log);
    let s = l.journal_seq();
    l.set_durable(s);
}

/// Recovers from the snapshot and the durable log, resuming on the landlord's own recorded
/// time (so expirations compare with what holders were told before the crash).
fn crash(snap: &[u8], log: &[u8]) -> LL {
    let mut l = LL::from_snapshot_bytes(snap, policy()).unwrap();
    l.replay_segments(&[log]).unwrap();
    let now = l.now().max(0);
    l.resume_durable(now);
    l.set_relaxed_renewals(true);
    l
}

fn expiration(l: &LL, c: Cookie) -> Option<i64> {
    l.iter().find(|(k, _, _)| *k == c).map(|(_, e, _)| e)
}

#[test]
fn the_first_renewal_waits_and_later_ones_within_the_reservation_do_not() {
    let (mut l, _) = fresh();
    let g = l.grant(b"a".to_vec(), 10_000, 0).unwrap();
    let (ok, early) = renew(&mut l, g.cookie, 10_000, 1_000);
    assert!(ok && !early, "no durable reservation yet: waits");
    let (ok, early) = renew(&mut l, g.cookie, 10_000, 2_000);
    assert!(ok && !early, "the reservation is not durable yet: waits");
    let s = l.journal_seq();
    l.set_durable(s);
    let (ok, early) = renew(&mut l, g.cookie, 10_000, 3_000);
    assert!(ok && early, "covered by the durable reservation (until 21 000)");
    let (ok, early) = renew(&mut l, g.cookie, 10_000, 11_000);
    assert!(ok && early, "21 000 is still within it");
    let (ok, early) = renew(&mut l, g.cookie, 10_000, 11_001);
    assert!(ok && !early, "past the reservation: waits, and reserves again");
    let (ok, early) = renew(&mut l, g.cookie, 1_000, 11_500);
    assert!(ok && !early, "a renewal that shortens the lease waits");
    // Grants, errors and batches with one uncovered lease wait.
    let (r, early) = l.handle_request_relaxed(
        &Request { id: 2, body: RequestBody::Grant { resource: b"b".to_vec(), duration: 10_000 } },
        11_500,
    );
    assert!(matches!(r.body, ReplyBody::Granted { .. }) && !early);
    let (ok, early) = renew(&mut l, Cookie(12345), 10_000, 11_500);
    assert!(!ok && !early);
    let s = l.journal_seq();
    l.set_durable(s);
    let ReplyBody::Granted { cookie: b, .. } = r.body else { unreachable!() };
    let batch = |l: &mut LL, now| {
        l.handle_request_relaxed(
            &Request {
                id: 3,
                body: RequestBody::RenewAll { items: vec![(g.cookie, 10_000), (b, 10_000)] },
            },
            now,
        )
    };
    assert!(!batch(&mut l, 12_000).1, "b has no reservation yet");
    let s = l.journal_seq();
    l.set_durable(s);
    assert!(batch(&mut l, 12_500).1, "both covered now");
}

#[test]
fn off_by_default_and_without_reservations_recovery_writes_nothing() {
    let mut l: LL = Landlord::new(LandlordConfig::new(LandlordId(1), [7; 32]), policy());
    l.enable_journal();
    let mut snap = Vec::new();
    l.snapshot_bytes(&mut snap);
    let g = l.grant(b"a".to_vec(), 10_000, 0).unwrap();
    for t in 1..5 {
        assert!(!renew(&mut l, g.cookie, 10_000, t * 1_000).1);
    }
    let mut log = Vec::new();
    l.take_journal(&mut log);
    let seq = l.journal_seq();
    let mut b = LL::from_snapshot_bytes(&snap, policy()).unwrap();
    b.replay_segments(&[&log]).unwrap();
    b.resume_durable(4_000);
    assert_eq!(b.journal_seq(), seq, "no apply record without reservations");
}

#[test]
fn a_crash_keeps_what_was_told_and_a_second_crash_extends_nothing_more() {
    let (mut l, snap) = fresh();
    let mut log = Vec::new();
    let g = l.grant(b"a".to_vec(), 10_000, 0).unwrap();
    assert!(!renew(&mut l, g.cookie, 10_000, 1_000).1);
    sync(&mut l, &mut log);
    assert!(renew(&mut l, g.cookie, 10_000, 5_000).1, "told 15 000, not durable");
    // Crash: the renewal at 5 000 is lost; the reservation (21 000) is applied.
    let mut b = crash(&snap, &log);
    assert_eq!(expiration(&b, g.cookie), Some(21_000));
    // The apply record made durable, then a second crash: still 21 000, not one period more.
    sync(&mut b, &mut log);
    let c = crash(&snap, &log);
    assert_eq!(expiration(&c, g.cookie), Some(21_000));
}

#[derive(Debug, Clone)]
enum Op {
    Grant,
    Renew(usize),
    Batch,
    Cancel(usize),
    Sync,
    Advance(i64),
    Crash,
    Snapshot,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Grant),
        8 => (0usize..8).prop_map(Op::Renew),
        2 => Just(Op::Batch),
        1 => (0usize..8).prop_map(Op::Cancel),
        4 => Just(Op::Sync),
        4 => (1i64..3_000).prop_map(Op::Advance),
        1 => Just(Op::Crash),
        1 => Just(Op::Snapshot),
    ]
}

/// What holders were told, and what they asked for.
#[derive(Debug, Default, Clone, Copy)]
struct Told {
    /// The latest expiration answered (grant or renewal).
    told: i64,
    /// The latest expiration asked for by a renewal sent (answered or not).
    asked: i64,
    /// A cancel was answered.
    cancelled: bool,
}

proptest! {
    // RELAXED_CASES: how many worlds (scripts/test-sim.sh runs more).
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("RELAXED_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
    ))]

    /// Random grants, renewals, batches, cancels, syncs, snapshots and crashes; after every
    /// crash each lease lives at least until what its holder was told and at most one period
    /// longer than the latest expiration asked for.
    #[test]
    fn both_bounds_hold_across_crashes(ops in prop::collection::vec(op(), 1..120), period in 1_000i64..20_000) {
        let (mut l, mut snap) = fresh();
        let mut log = Vec::new();
        let mut now = 0i64;
        let mut leases: Vec<Cookie> = Vec::new();
        let mut told: HashMap<Cookie, Told> = HashMap::new();
        // Replies waiting for the sync: (journal seq, cookie, expiration told, is a cancel).
        let mut held: Vec<(u64, Cookie, i64, bool)> = Vec::new();
        let mut early_seen = 0;
        for op in ops {
            match op {
                Op::Grant => {
                    let g = l.grant(format!("r{}", leases.len()).into_bytes(), period, now).unwrap();
                    held.push((l.journal_seq(), g.cookie, now + period, false));
                    leases.push(g.cookie);
                }
                Op::Renew(i) | Op::Cancel(i) if leases.is_empty() => { let _ = i; }
                Op::Renew(i) => {
                    let c = leases[i % leases.len()];
                    let (ok, early) = renew(&mut l, c, period, now);
                    if ok {
                        let t = told.entry(c).or_default();
                        t.asked = t.asked.max(now + period);
                        if early {
                            early_seen += 1;
                            t.told = now + period;
                        } else {
                            held.push((l.journal_seq(), c, now + period, false));
                        }
                    }
                }
                Op::Batch => {
                    let items: Vec<(Cookie, i64)> = leases.iter().rev().take(3).map(|c| (*c, period)).collect();
                    if items.is_empty() { continue; }
                    let (r, early) = l.handle_request_relaxed(&Request { id: 9, body: RequestBody::RenewAll { items: items.clone() } }, now);
                    let ReplyBody::RenewedAll { results } = r.body else { panic!("{r:?}") };
                    for ((c, _), o) in items.iter().zip(results) {
                        if matches!(o, leasehold::wire::Outcome::Ok(_)) {
                            let t = told.entry(*c).or_default();
                            t.asked = t.asked.max(now + period);
                            if early { t.told = now + period } else { held.push((l.journal_seq(), *c, now + period, false)) }
                        }
                    }
                }
                Op::Cancel(i) => {
                    let c = leases[i % leases.len()];
                    if l.cancel(c, now).is_ok() {
                        held.push((l.journal_seq(), c, 0, true));
                    }
                }
                Op::Sync => {
                    sync(&mut l, &mut log);
                    let d = l.journal_seq();
                    held.retain(|&(seq, c, t, cancel)| {
                        if seq > d { return true; }
                        let e = told.entry(c).or_default();
                        if cancel { e.cancelled = true } else { e.told = t; e.asked = e.asked.max(t) }
                        false
                    });
                }
                Op::Advance(dt) => {
                    now += dt;
                    l.handle_timeout(now);
                    while l.poll_expired().is_some() {}
                }
                Op::Snapshot => {
                    // Compaction as a store does it: everything so far durable, then a snapshot.
                    sync(&mut l, &mut log);
                    held.retain(|&(_, c, t, cancel)| {
                        let e = told.entry(c).or_default();
                        if cancel { e.cancelled = true } else { e.told = t; e.asked = e.asked.max(t) }
                        false
                    });
                    snap.clear();
                    l.snapshot_bytes(&mut snap);
                    log.clear();
                }
                Op::Crash => {
                    held.clear();
                    l = crash(&snap, &log);
                    let resumed = l.now().max(0);
                    for (c, t) in &told {
                        let exp = expiration(&l, *c);
                        if t.cancelled {
                            prop_assert_eq!(exp, None, "cancel of {} came back", c);
                            continue;
                        }
                        if t.told > resumed {
                            prop_assert!(exp.is_some_and(|e| e >= t.told),
                                "lease {} told {} recovered {:?} (resumed at {})", c, t.told, exp, resumed);
                        }
                        if let Some(e) = exp {
                            prop_assert!(e <= t.told.max(t.asked) + period,
                                "lease {} told {} asked {} recovered {} > one period ({}) more", c, t.told, t.asked, e, period);
                        }
                    }
                    // Recovery resumes at the last recorded time: the host's clock carries on
                    // from there in this model.
                    now = resumed;
                }
            }
        }
        let _ = early_seen;
    }
}
